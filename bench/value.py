"""``battlesheep bench value``: how well a leaf's value predicts how the game ends.

The tree values a new leaf by one playout of the kernel's policy to the end
(``strategies.mcts``: ``score_rewards`` of its final scores). Whether a learned
evaluation, mixed with that playout, would judge a leaf better is a question of data:
this bench plays games in-process (the one game loop, the seats rotated a place each
game, as ``bench priors``) and, at every position where a seat is to move, keeps

- what each seat will get: the reward of the game's real end (``score_rewards`` of
  its final scores, at the tree's ``margin``),
- what one playout from there gives each seat (the leaf's value today), and the mean
  of ``--playouts`` of them (the most any number of playouts can give),
- the hand-set ``strategies.common.evaluate`` and the kernel's territory count (the
  evaluation of a playout cut short, ``playout_cutoff``) as rewards (their score
  estimates ranked),
- each seat's ``SEAT_FEATURES`` (``strategies.common.seat_features``), the seat's
  place in the turn order and how far the game is (the share of free cells taken).

Samples are appended to ``--samples FILE`` (JSON lines, the position itself in each)
as each game ends, so runs with other seeds or seats add to one set, and a later
evaluation can be judged on the same positions. The report reads every sample of the
files. On the positions of the even boards it fits least squares (a little ridge) of
each seat's final score on its features (``fitted``: those scores ranked into
rewards), and the weight of each static judge (``evaluate``, the kernel's
``territory`` count, ``fitted``) beside the one playout (``mix_*``: a leaf's value
mixing the two) and beside the playouts' mean (``mean_mix_*``: what a node's value
mixing them tends to as the tree averages many leaves). On the odd boards it prints,
for each predictor, the mean squared error per seat against the real end and the share
of positions whose predicted best seat won; by a third of the game as well.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from arena.referee import GameRecord
from bench import print_figures, quiet_games
from bench.games import SeatBoards, add_seat_games, rotated_games
from bench.priors import label
from state.game import GameState
from state.geometry import FREE
from state.observe import state_from_observation
from state.settings import GameSetting, get_setting
from strategies.base import ConfigError
from strategies.common import (
    EvalWeights,
    evaluate,
    score_rewards,
    seat_features,
)
from strategies.hybrid import HybridParams
from strategies.kernel import board_of, get_kernel, wait_warm
from strategies.kernel.pure import estimated_scores, live_stacks
from strategies.registry import check_params, parse_params

PHASES = ("early", "middle", "late")
"""Thirds of a game by the share of its free cells taken (``Sample.progress``)."""

MARGIN = HybridParams().margin
"""The main strategy's reward margin by default (``score_rewards``)."""

RIDGE = 1e-3
"""The ridge of the least-squares fits, per sample (the features are of order 1-50)."""


@dataclass
class Sample:
    """One position of one game (see the module docstring); lists are per seat."""

    game: int  # the setting
    board: int  # the seed of the game's board: even boards train, odd ones test
    strategies: list[str]
    to_move: int
    progress: float
    features: list[list[float]]
    one_playout: list[float]
    playouts: list[float]
    evaluated: list[float]
    territory: list[float]
    final: list[float]
    final_scores: list[float]
    # The position itself (as the wire shows it, every count visible), so that a later
    # evaluation can be judged on the same positions (``Sample.state``).
    wire_map: list[list[int]]
    wire_sheep: list[list[int]]

    def state(self) -> GameState:
        """The position of this sample, rebuilt (no history)."""
        setting = get_setting(self.game)
        return state_from_observation(setting, self.wire_map, self.wire_sheep, None, self.to_move)

    def row(self, seat: int) -> list[float]:
        """The fitted score model's inputs for ``seat`` (index 0 is seat 1): its
        features, each times the progress too, and its place after the mover (one-hot,
        the model's constant)."""
        f = self.features[seat]
        place = (seat + 1 - self.to_move) % 4
        return [*f, *(x * self.progress for x in f), *(float(place == k) for k in range(4))]


def free_cells(state: GameState) -> int:
    return sum(1 for c in state.geometry.cells if state.owner[c] == FREE)


def progress_of(state: GameState, free_at_start: int) -> float:
    """The share of the free cells after placement that stacks have taken since."""
    return 1.0 - free_cells(state) / max(1, free_at_start)


def territory_count(state: GameState) -> list[float]:
    """The kernel's evaluation of a playout stopped early (``playout_cutoff``), at
    ``state`` itself: each seat's exact score plus its share of the free area."""
    owner = [*state.owner, -1]
    return estimated_scores(board_of(state.geometry), owner, state.sheep[:], live_stacks(state))


@dataclass
class Judges:
    """What values a position for the samples: the main strategy's parameters (its
    playout policy, reward margin and evaluation weights), the kernel, the number of
    playouts averaged and their random numbers."""

    params: HybridParams
    playouts: int
    rng: random.Random

    def __post_init__(self) -> None:
        self.kernel = get_kernel("fast" if wait_warm() else "python")
        self.policy = self.params.playout_policy()
        p = self.params
        self.weights = EvalWeights(p.w_potential, p.w_waste, p.w_mobility)

    def rewards(self, setting: GameSetting, scores: Sequence[float]) -> list[float]:
        return score_rewards(setting, scores, self.params.margin)

    def judge(self, state: GameState, sample: Sample) -> None:
        """Set ``sample``'s playouts, evaluation and territory count from ``state``."""
        setting = state.setting
        runs = [
            self.rewards(setting, self.kernel.scores(state, self.policy, self.rng))
            for _ in range(self.playouts)
        ]
        sample.one_playout = runs[0]
        sample.playouts = [sum(r[k] for r in runs) / len(runs) for k in range(4)]
        sample.evaluated = self.rewards(setting, evaluate(state, self.weights))
        sample.territory = self.rewards(setting, territory_count(state))


def game_samples(
    record: GameRecord, positions: Sequence[GameState], strategies: list[str], judges: Judges
) -> list[Sample]:
    """The samples of one finished game (its ``positions``: where a seat was to move)."""
    setting = record.setting
    final_scores = list(record.state.exact_scores())
    final = judges.rewards(setting, final_scores)
    free_at_start = free_cells(positions[0])
    out = []
    for state in positions:
        sample = Sample(
            game=setting.game,
            board=record.seed,
            strategies=strategies,
            to_move=state.to_move,
            progress=progress_of(state, free_at_start),
            features=[list(f) for f in seat_features(state)],
            one_playout=[],
            playouts=[],
            evaluated=[],
            territory=[],
            final=final,
            final_scores=final_scores,
            wire_map=state.wire_map(),
            wire_sheep=state.wire_sheep(),
        )
        judges.judge(state, sample)
        out.append(sample)
    return out


def play_samples(
    game: int, seats: Sequence[str], games: int, time_limit: float, seed: int, judges: Judges
) -> Iterator[list[Sample]]:
    """Games of ``seats`` (``bench.games.rotated_games``): each game's samples as it
    ends."""

    def positions() -> SeatBoards:
        return SeatBoards(seat=0)  # the positions where a seat is to move; no seat's boards

    for lineup, record, kept in rotated_games(game, seats, games, time_limit, seed, positions):
        if kept.positions:
            names = [label(s) for s in lineup]
            yield game_samples(record, kept.positions, names, judges)


def save(path: Path, samples: Sequence[Sample]) -> None:
    with path.open("a") as f:
        for s in samples:
            f.write(json.dumps(s.__dict__) + "\n")


def load(paths: Sequence[Path]) -> list[Sample]:
    out = []
    for path in paths:
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append(Sample(**json.loads(line)))
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"{path}:{n}: not a sample of bench value ({exc})") from exc
    return out


def fit(samples: Sequence[Sample]) -> list[float]:
    """Least-squares weights of ``Sample.row`` for every seat of ``samples`` against its
    final score (ridge ``RIDGE`` per sample)."""
    import numpy as np  # with numba (battlesheep[fast]), as bench priors' fit

    x = np.array([s.row(k) for s in samples for k in range(4)], np.float64)
    y = np.array([s.final_scores[k] for s in samples for k in range(4)], np.float64)
    gram = x.T @ x + RIDGE * len(x) * np.eye(x.shape[1])
    return [float(w) for w in np.linalg.solve(gram, x.T @ y)]


Predictor = Callable[[Sample], list[float]]


def fitted(weights: Sequence[float], margin: float) -> Predictor:
    """The rewards of the scores a fitted model (``fit``'s ``weights``) predicts, ranked
    as the real end's are."""

    def predict(s: Sample) -> list[float]:
        scores = [sum(w * x for w, x in zip(weights, s.row(k), strict=True)) for k in range(4)]
        return score_rewards(get_setting(s.game), scores, margin)

    return predict


def mixed(judge: Predictor, weight: float, base: Predictor) -> Predictor:
    """``weight`` of ``judge``'s rewards and the rest of ``base``'s."""

    def predict(s: Sample) -> list[float]:
        return [weight * j + (1.0 - weight) * b for j, b in zip(judge(s), base(s), strict=True)]

    return predict


def mse(predict: Predictor, samples: Sequence[Sample]) -> float:
    """The mean squared error per seat of ``predict`` against the real ends."""
    return guesses_mse([predict(s) for s in samples], samples)


def guesses_mse(guesses: Sequence[list[float]], samples: Sequence[Sample]) -> float:
    """The mean squared error per seat of ``guesses`` (one a sample) against the real
    ends."""
    total = 0.0
    for guess, s in zip(guesses, samples, strict=True):
        total += sum((g - f) ** 2 for g, f in zip(guess, s.final, strict=True))
    return total / (4 * max(1, len(samples)))


def best_mix(judge: Predictor, base: Predictor, train: Sequence[Sample]) -> float:
    """The weight of ``judge`` beside ``base`` with the least error on ``train`` (steps
    of 0.05)."""
    return min((k / 20 for k in range(21)), key=lambda w: mse(mixed(judge, w, base), train))


def phase(s: Sample) -> int:
    """The third of the game ``s`` is in (an index of ``PHASES``)."""
    return int(3 * min(s.progress, 0.999))


def played(s: Sample) -> list[float]:
    return s.one_playout


def averaged(s: Sample) -> list[float]:
    return s.playouts


def evaluated(s: Sample) -> list[float]:
    return s.evaluated


def counted(s: Sample) -> list[float]:
    return s.territory


def report(
    samples: Sequence[Sample], playouts: int, margin: float = MARGIN
) -> dict[str, float | str]:
    """The figures of the module docstring (``margin``: the rewards', for the fitted
    scores)."""
    train = [s for s in samples if s.board % 2 == 0]
    test = [s for s in samples if s.board % 2 == 1]
    if not train or not test:
        raise ConfigError(
            "bench value: the fit needs games on even and on odd boards "
            f"(have {len(train)} and {len(test)} positions); play two games or more"
        )
    weights = fit(train)
    learned = fitted(weights, margin)
    judges = {"evaluate": evaluated, "territory": counted, "fitted": learned}
    # Each judge beside the one playout (a leaf's value mixing the two) and beside the
    # playouts' mean (what a node's value mixing them tends to as the tree averages
    # its leaves): their weights fitted on the training boards.
    bases = {"mix": played, "mean_mix": averaged}
    mixes = {
        (prefix, name): best_mix(judge, base, train)
        for prefix, base in bases.items()
        for name, judge in judges.items()
    }
    figures: dict[str, float | str] = {
        "positions": float(len(samples)),
        "games": float(len({(s.board, tuple(s.strategies)) for s in samples})),
        "train_positions": float(len(train)),
        "test_positions": float(len(test)),
        "playouts_per_position": float(playouts),
    }
    for (prefix, name), weight in mixes.items():
        figures[f"{prefix}_{name}_weight"] = weight
    for k, name in enumerate(PHASES):
        figures[f"{name}_test_positions"] = float(sum(1 for s in test if phase(s) == k))
    named: dict[str, Predictor] = {"one_playout": played, "playouts": averaged, **judges}
    for (prefix, name), weight in mixes.items():
        named[f"{prefix}_{name}"] = mixed(judges[name], weight, bases[prefix])
    parts = [("", test)] + [
        (f"{name}_", [s for s in test if phase(s) == k]) for k, name in enumerate(PHASES)
    ]
    for name, predict in named.items():
        for prefix, part in parts:
            if not part:
                continue
            guesses = [predict(s) for s in part]
            winners = 0
            for guess, s in zip(guesses, part, strict=True):
                winners += s.final[max(range(4), key=guess.__getitem__)] == max(s.final)
            figures[f"{prefix}{name}_mse"] = guesses_mse(guesses, part)
            figures[f"{prefix}{name}_winner_share"] = winners / len(part)
    figures["fitted_weights"] = ",".join(f"{w:.4g}" for w in weights)
    return figures


def rejudge(samples: Sequence[Sample], judges: Judges) -> None:
    """Value ``samples`` again (their positions rebuilt) by ``judges``: other playouts,
    margin or evaluation weights on the same positions; the real end kept."""
    for s in samples:
        state = s.state()
        s.final = judges.rewards(state.setting, s.final_scores)
        judges.judge(state, s)


def run(args: argparse.Namespace) -> int:
    quiet_games()
    seats = [s.strip() for s in args.seats.split(",")]
    if args.playouts < 1:
        raise ConfigError(f"bench value: --playouts must be 1 or more, not {args.playouts}")
    # The main strategy's parameters, checked as bench strength's --param are.
    params = cast(HybridParams, check_params("hybrid", parse_params(args.param)))
    judges = Judges(params, args.playouts, random.Random(args.seed))
    paths = [Path(p) for p in args.samples]
    samples: list[Sample] = []
    for game in play_samples(args.game, seats, args.games, args.time_limit, args.seed, judges):
        if paths:
            save(paths[0], game)  # as each game ends: an interrupted run keeps its games
        samples += game
    if paths:
        samples = load([p for p in paths if p.exists()])
        if args.param:
            rejudge(samples, judges)
    print_figures(report(samples, args.playouts, params.margin))
    return 0


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "value",
        help="how well one playout, many, the hand-set evaluation and a fitted one "
        "predict how a game ends",
    )
    add_seat_games(p, game=2, time_limit=0.3)
    p.add_argument(
        "--playouts", type=int, default=32, help="playouts from each position for their mean"
    )
    p.add_argument(
        "--samples",
        action="append",
        default=[],
        metavar="FILE",
        help="JSON lines of samples: the games played are appended to the first; the "
        "report reads all (repeatable; with --games 0 it only reports)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the main strategy's parameters for the playouts, the margin and the "
        "evaluation (epsilon=0.5, playout=random, ...); saved samples are valued again "
        "under them, on the same positions",
    )
    p.set_defaults(func=run)
