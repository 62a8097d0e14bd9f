"""``battlesheep bench belief``: how well game-3 hidden counts are estimated.

Game records come from the arena's replays (``--replays DIR``: they hold every
move and, through them, the true counts) or are played in-process by the given
seats. Each seat's view is replayed observation by observation through
``ingest`` and the belief, and the error of the estimate of every other seat's
stacks is compared with the published reference's guess (a seat's total over
its number of stacks). The split-size prior is learned from separate
training games (the first half of the replays, or games of other seeds); the
main strategy's named priors (``split_prior``: half, three, mixed and the
per-seat adaptive mixture) are measured on the same views. So is the one world
the main strategy searches in game 3 (``Belief.mean_world`` of the adaptive prior),
with one explanation of which stack each move came from and with ``--hypotheses``;
and how well the posterior knows which stacks can still move (two sheep or more:
``movable_calibration``), with the worlds' stacks wrongly called movable or dead;
and, at a few of the viewer's turns, the posterior weight of each of the adaptive
prior's split models (``split_weight_<model>_turn<t>``): how soon a seat's moves tell
its split rule.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.local import play_local
from arena.replay import initial_state, read_replay
from bench import print_figures, quiet_games
from bench.games import replay_turn, seat_players
from state.belief import Belief, SplitMixture, SplitPrior, guess_counts
from state.game import GameState
from state.geometry import Geometry
from state.observe import Action, ingest, state_from_observation
from state.settings import PLAYERS, get_setting
from strategies.base import ConfigError
from strategies.hybrid import HybridParams, source_odds, split_prior, split_shares

NAMED_PRIORS = ("half", "three", "leaning", "mixed", "adaptive")
"""The main strategy's ``split_prior`` kinds measured beside the learned one."""

WEIGHT_TURNS = (3, 6, 9)
"""The viewer's turns at which the mean posterior weight of each split model of the
adaptive prior is printed (``split_weight_<model>_turn<t>``): whether a seat's moves
have told which rule it splits by yet."""


@dataclass
class Plays:
    """A game-3 game as the truth saw it: the field and every seat's turn in order."""

    geometry: Geometry
    # (seat, kind, cell, split, direction), kind place/move/pass/skip as in replays.
    plays: list[tuple[int, str, int, int, int]]


def _plays(geometry: Geometry, events: Iterable[tuple[int, str, int, int, int, int]]) -> Plays:
    """From events (seat, kind, x, y, split, direction) of the referee or a replay."""
    n = geometry.size
    plays: list[tuple[int, str, int, int, int]] = []
    for seat, kind, x, y, split, direction in events:
        cell = x * n + y if kind in ("place", "move") else -1
        split, direction = (split, direction) if kind == "move" else (0, 0)
        plays.append((seat, kind, cell, split, direction))
    return Plays(geometry, plays)


def play_record(seed: int, seats: list[str], move_time: float) -> Plays:
    """A game-3 game of the given seats, played in-process by the one game loop."""
    record = play_local(3, seed, seat_players(seats, seed), move_time).record
    return _plays(
        record.state.geometry,
        ((e.seat, e.kind, e.x, e.y, e.split, e.direction) for e in record.events),
    )


def record_of_replay(path: Path) -> Plays:
    replay = read_replay(path)
    if replay.game != 3:
        raise ValueError(f"{path} is a game-{replay.game} replay, not game 3")
    events = ((e.seat, e.kind, e.x, e.y, e.split, e.dir) for e in replay.events)
    return _plays(initial_state(replay).geometry, events)


def observed_splits(record: Plays) -> list[tuple[int, int]]:
    """(stack size, split) of every move, read off the truth: the prior's training data."""
    truth = GameState(get_setting(3), record.geometry)
    out = []
    for _seat, kind, cell, split, direction in record.plays:
        if kind == "move":
            out.append((truth.sheep[cell], split))
        replay_turn(truth, kind, cell, split, direction)
    return out


def _views(
    record: Plays, viewer: int, belief: Belief, model: HybridParams | None = None
) -> Iterator[tuple[GameState, GameState]]:
    """``viewer``'s state after each board it was sent past placement, ingested into
    ``belief``, with the truth at that moment. ``model``: the main strategy's
    parameters, to weigh the sources of moves in doubt (``source_odds``) and the split
    sizes (``split_shares``) as it does, where they ask for it."""
    rng = random.Random(viewer)
    setting = get_setting(3)
    truth = GameState(setting, record.geometry)
    mine: GameState | None = None
    for seat, kind, cell, split, direction in record.plays:
        if seat == viewer and kind != "pass":  # the viewer was sent a board
            board, sheep = truth.wire_map(), truth.wire_sheep()
            if mine is None:
                mine = state_from_observation(setting, board, None, viewer, to_move=viewer)
                belief.update(
                    Action(s, "place", c) for s in PLAYERS if s < viewer for c in mine.stacks[s]
                )
            else:
                report = ingest(mine, board, sheep, viewer)
                odds = shares = None
                if model is not None and model.source_search:
                    odds = source_odds(belief, report, model, rng)
                if model is not None and model.split_search:
                    shares = split_shares(belief, report, model, rng)
                belief.update(report.actions, mine, odds, shares)
            if not mine.placing:
                yield mine, truth
        replay_turn(truth, kind, cell, split, direction)


def errors_of_view(
    record: Plays, viewer: int, prior: SplitPrior | SplitMixture, samples: int
) -> list[tuple[float, float, int]]:
    """Per observation of ``viewer``: summed |median - truth|, |uniform guess - truth|, stacks."""
    belief = Belief(get_setting(3), viewer, prior=prior)
    rng = random.Random(viewer)
    out: list[tuple[float, float, int]] = []
    for mine, truth in _views(record, viewer, belief):
        draws = [belief.sample(rng) for _ in range(samples)]
        err_b = err_u = 0.0
        n = 0
        for p in PLAYERS:
            if p == viewer:
                continue
            guess = guess_counts(mine, p)
            for c in mine.stacks[p]:
                err_b += abs(statistics.median(d[c] for d in draws) - truth.sheep[c])
                err_u += abs(guess[c] - truth.sheep[c])
                n += 1
        out.append((err_b, err_u, n))
    return out


@dataclass
class WorldErrors:
    """Sums over a viewer's observations of the world the main strategy searches, and
    of the posterior's chance that each hidden stack can move (two sheep or more)."""

    err: float = 0.0  # summed |count - truth|
    exact: int = 0  # counts exactly right
    movable: int = 0  # stacks rightly called movable or not
    false_movable: int = 0  # given two sheep or more where the truth holds one
    false_dead: int = 0  # given one sheep where the truth holds two or more
    stacks: int = 0
    # (the posterior's P(two sheep or more), whether the truth holds two or more), per stack
    chances: list[tuple[float, bool]] = field(default_factory=list)
    # By the viewer's turn (1: its first board past placement) and split model, each
    # other seat's posterior weight of that model (``SeatBelief.model_weights``).
    weights: dict[tuple[int, str], list[float]] = field(default_factory=dict)

    def add(self, other: WorldErrors) -> None:
        self.err += other.err
        self.exact += other.exact
        self.movable += other.movable
        self.false_movable += other.false_movable
        self.false_dead += other.false_dead
        self.stacks += other.stacks
        self.chances.extend(other.chances)
        for key, values in other.weights.items():
            self.weights.setdefault(key, []).extend(values)


def movable_calibration(chances: Sequence[tuple[float, bool]], bins: int = 10) -> dict[str, float]:
    """How well chances p that a stack can move (two sheep or more) match the truth y:
    the Brier score mean (p - y)^2; the same of the base rate (every stack given the
    share that can move: a belief that knows nothing of the stack), and the calibration
    error: over ``bins`` equal bins of p, the stacks' share of each bin times the gap
    between its mean p and its share that can move."""
    if bins < 1:
        raise ValueError(f"movable_calibration needs at least one bin, not {bins}")
    n = len(chances)
    if n == 0:
        return {"brier": 0.0, "brier_base_rate": 0.0, "calibration_error": 0.0}
    rate = sum(y for _, y in chances) / n
    brier = sum((p - y) ** 2 for p, y in chances) / n
    base = sum((rate - y) ** 2 for _, y in chances) / n
    sums: list[list[float]] = [[0.0, 0.0, 0.0] for _ in range(bins)]  # p, y, stacks
    for p, y in chances:
        row = sums[min(bins - 1, max(0, int(p * bins)))]
        row[0] += p
        row[1] += y
        row[2] += 1
    gap = sum(abs(sp - sy) for sp, sy, _ in sums) / n  # = sum_b (n_b / n) |mean p - share|
    return {"brier": brier, "brier_base_rate": base, "calibration_error": gap}


def mean_world_errors(
    record: Plays,
    viewer: int,
    prior: SplitPrior | SplitMixture,
    hypotheses: int,
    source_search: int = 0,
    split_search: int = 0,
    movable_choice: bool = False,
    median: bool = False,
) -> WorldErrors:
    """Over ``viewer``'s observations, the world the main strategy searches in game 3
    (``Belief.mean_world``, or with ``median`` ``Belief.median_world``) against the
    truth, and the posterior's chance that each hidden stack holds two sheep or more
    (``Belief.marginals``).
    ``source_search``: the sources of moves in doubt weighed as the main strategy does
    with that parameter (0: the highest mean). ``split_search``: the split sizes judged
    as it does with that one (``prior`` should then be ``split_prior(..., valued=True)``).
    ``movable_choice``: the split models weighed by how likely each move's source was
    for a seat choosing any of its slides alike (the main strategy's parameter)."""
    belief = Belief(
        get_setting(3), viewer, prior=prior, hypotheses=hypotheses, movable_choice=movable_choice
    )
    model = None
    if source_search or split_search:
        model = HybridParams(source_search=source_search, split_search=split_search)
    out = WorldErrors()
    for turn, (mine, truth) in enumerate(_views(record, viewer, belief, model), 1):
        # The split models' weights where they are printed (the median world's are the
        # mean world's).
        if turn in WEIGHT_TURNS and not median:
            for seat in belief.seats.values():
                for name, weight in seat.model_weights().items():
                    out.weights.setdefault((turn, name), []).append(weight)
        world = belief.median_world(mine) if median else belief.mean_world(mine)
        # The median world's posterior is the mean world's: scored once, with the mean.
        marginals = {} if median else belief.marginals()
        for p in PLAYERS:
            for c in mine.stacks[p] if p != viewer else ():
                count, true = world.sheep[c], truth.sheep[c]
                out.err += abs(count - true)
                out.exact += count == true
                out.movable += (count > 1) == (true > 1)
                out.false_movable += count > 1 and true == 1
                out.false_dead += count == 1 and true > 1
                out.stacks += 1
                if c in marginals:
                    chance = min(1.0, max(0.0, 1.0 - sum(marginals[c][:2])))
                    out.chances.append((chance, true > 1))
    return out


def bench_belief(
    games: int,
    seats: list[str],
    move_time: float,
    samples: int,
    replays: Path | None = None,
    hypotheses: int = 8,
    source_search: int = 2000,
    split_search: int = 100,
) -> dict[str, float]:
    if replays is not None:
        records = [record_of_replay(p) for p in sorted(replays.glob("*.msgpack"))]
        if len(records) < 2:
            raise ValueError(f"{replays} holds {len(records)} game-3 replays; at least 2 needed")
        half = len(records) // 2
        training, tests = records[:half], records[half:]
    else:
        training = [play_record(10_000 + i, seats, move_time) for i in range(max(4, games // 2))]
        tests = [play_record(i, seats, move_time) for i in range(games)]
    learned = SplitPrior.fit([p for r in training for p in observed_splits(r)], 16)
    priors: dict[str, SplitPrior | SplitMixture] = {
        "learned": learned,
        "uniform": SplitPrior.uniform(16),
    }
    priors.update((kind, split_prior(kind, 16)) for kind in NAMED_PRIORS)
    valued = split_prior("adaptive", 16, valued=True)
    # Per prior: summed belief error, summed reference-guess error, stacks.
    totals = {key: [0.0, 0.0, 0] for key in priors}
    # The mean world of the main strategy's prior, with one hypothesis and with more,
    # with one and the sources weighed by a search (source_search), with one and the
    # split sizes judged by playouts (split_search), and with one and the split models
    # weighed by the choice of a movable stack (movable_choice); and the median world
    # (Belief.median_world) with one.
    worlds: dict[tuple[int, int, int, bool, bool], WorldErrors] = {
        key: WorldErrors()
        for key in sorted(
            {
                (1, 0, 0, False, False),
                (hypotheses, 0, 0, False, False),
                (1, source_search, 0, False, False),
                (1, 0, split_search, False, False),
                (1, 0, 0, True, False),
                (1, 0, 0, False, True),
            }
        )
    }
    observations = 0
    for record in tests:
        for viewer in PLAYERS:
            for (h, search, judge, choice, median), acc in worlds.items():
                prior = valued if judge else priors["adaptive"]
                acc.add(mean_world_errors(record, viewer, prior, h, search, judge, choice, median))
            for key, prior in priors.items():
                rows = errors_of_view(record, viewer, prior, samples)
                for err_b, err_u, n in rows:
                    totals[key][0] += err_b
                    totals[key][1] += err_u
                    totals[key][2] += n
                if key == "learned":
                    observations += len(rows)
    stacks = max(1.0, float(totals["learned"][2]))
    mae_uniform_guess = totals["learned"][1] / stacks
    mae_learned = totals["learned"][0] / stacks
    figures = {
        "games": float(len(tests)),
        "training_games": float(len(training)),
        "observations": float(observations),
        "stack_estimates": stacks,
        "mae_reference_guess": mae_uniform_guess,
        "mae_belief_uniform_prior": totals["uniform"][0] / stacks,
        "mae_belief_learned_prior": mae_learned,
        "ratio_learned_to_reference": mae_learned / max(mae_uniform_guess, 1e-9),
    }
    for kind in NAMED_PRIORS:
        figures[f"mae_belief_{kind}"] = totals[kind][0] / stacks
    for (h, search, judge, choice, median), sums in worlds.items():
        suffix = "_source" if search else "_split" if judge else "_choice" if choice else ""
        suffix = suffix or ("" if h == 1 else "_hypotheses")
        name = "median_world" if median else "mean_world"
        seen = max(1.0, float(sums.stacks))
        figures[f"{name}_mae{suffix}"] = sums.err / seen
        figures[f"{name}_exact{suffix}"] = sums.exact / seen
        figures[f"{name}_movable_right{suffix}"] = sums.movable / seen
        figures[f"{name}_false_movable{suffix}"] = sums.false_movable / seen
        figures[f"{name}_false_dead{suffix}"] = sums.false_dead / seen
        if not median:  # the median world's posterior is the mean world's
            for key, value in movable_calibration(sums.chances).items():
                figures[f"posterior_movable_{key}{suffix}"] = value
        if suffix in ("", "_split", "_choice"):
            for (turn, model), values in sorted(sums.weights.items()):
                figures[f"split_weight_{model}_turn{turn}{suffix}"] = statistics.mean(values)
    figures["hypotheses"] = float(hypotheses)
    figures["source_search"] = float(source_search)
    figures["split_search"] = float(split_search)
    return figures


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "belief", help="game 3: error of hidden-count estimates against the reference's guess"
    )
    p.add_argument("--games", type=int, default=20, help="games to play")
    p.add_argument(
        "--seats",
        default="greedy,greedy,random,greedy",
        help="four comma-separated strategies (name:key=value) that play the games",
    )
    p.add_argument("--move-time", type=float, default=0.2, help="seconds per move of the seats")
    p.add_argument("--samples", type=int, default=64, help="posterior draws per observation")
    p.add_argument(
        "--replays",
        type=Path,
        default=None,
        help="a folder of game-3 arena replays (serve/match --record): first half trains the prior",
    )
    p.add_argument(
        "--hypotheses",
        type=int,
        default=8,
        help="the mean world (adaptive prior) is also measured with this many explanations "
        "of the moves' sources (belief_hypotheses), beside one",
    )
    p.add_argument(
        "--source-search",
        type=int,
        default=2000,
        help="the mean world (one explanation) is also measured with the sources of moves "
        "in doubt weighed by a search of this many iterations (source_search; 0: not)",
    )
    p.add_argument(
        "--split-search",
        type=int,
        default=100,
        help="the mean world (one explanation) is also measured with the split sizes of "
        "the moves judged by this many playouts of each (split_search; 0: not)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    quiet_games()
    seats = [s.strip() for s in args.seats.split(",")]
    if len(seats) != 4:
        raise ConfigError(f"--seats needs four strategies, not {len(seats)}: {args.seats!r}")
    try:
        if args.hypotheses < 1:
            raise ValueError(f"--hypotheses must be 1 or more, not {args.hypotheses}")
        if args.source_search < 0:
            raise ValueError(f"--source-search must be 0 or more, not {args.source_search}")
        if args.split_search < 0:
            raise ValueError(f"--split-search must be 0 or more, not {args.split_search}")
        figures = bench_belief(
            args.games,
            seats,
            args.move_time,
            args.samples,
            args.replays,
            args.hypotheses,
            args.source_search,
            args.split_search,
        )
    except ValueError as exc:  # a replay of another setting, too few replays
        raise ConfigError(str(exc)) from None
    print_figures(figures)
    return 0
