"""``battlesheep bench priors``: how well the tree's priors predict each seat's slides.

The tree's priors at a node are a softmax of ``strategies.common.slide_key`` (each
slide's terms, ``slide_terms``, weighted by ``prior_weights``, at its area split) at
``prior_temperature``, or ``prior_temperature_other`` at the other seats' nodes
(``strategies.mcts_tree.expand``). For every slide a seat plays in games of the given
seats (played in-process by the one game loop, the seats rotated a place each game),
this takes the terms of every slide the seat had and the one it chose, and reports by
strategy: the moves that had a choice, the temperature of ``TEMPERATURES`` most likely
to have made those choices with the default weights, and the mean log-likelihood of a
choice at that temperature and at the priors' default, each over uniform choice among
the slides (nats per move: 0 where the key tells nothing of the seat's choices, its
entropy where it tells all).

With ``--fit`` it also learns the weights most likely to have made each strategy's
choices (``Choices.fit_weights``: a multinomial logit over the terms, Newton's method,
a little L2), printed at the default temperature, ready for ``prior_weights``, with
their nats per move in the games they were fitted on and, fitted on the even games
alone, on the odd games beside the default priors' there. Games of visible counts only
(1, 2 and 4): game 3's counts, which the terms read, are hidden from the seats.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena.referee import GameRecord
from bench import print_figures, quiet_games
from bench.games import add_seat_games, replay_turn, rotated_games
from state.game import GameState
from state.settings import get_setting
from strategies.base import ConfigError
from strategies.common import KEY_WEIGHTS, PRIOR_TERMS, area_split, slide_terms, weigh
from strategies.mcts import MctsParams

TEMPERATURES = (0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0, 5.6, 8.0, 16.0, 64.0)
"""The temperatures a strategy's choices are fitted among (``Choices.fit``)."""

Terms = tuple[float, ...]


@dataclass
class Choices:
    """A strategy's observed choices: for each move, every slide's terms
    (``slide_terms``), the one it picked and the game it was in."""

    terms: list[list[Terms]] = field(default_factory=list)
    chosen: list[int] = field(default_factory=list)
    games: list[int] = field(default_factory=list)

    def add(self, terms: list[Terms], chosen: int, game: int = 0) -> None:
        self.terms.append(terms)
        self.chosen.append(chosen)
        self.games.append(game)

    def part(self, keep: Callable[[int], bool]) -> Choices:
        """The choices made in the games ``keep`` keeps."""
        out = Choices()
        for terms, c, g in zip(self.terms, self.chosen, self.games, strict=True):
            if keep(g):
                out.add(terms, c, g)
        return out

    def keys(self, weights: Sequence[float] = KEY_WEIGHTS) -> list[list[float]]:
        """Each move's slide keys by ``weights``."""
        return [[weigh(t, weights) for t in move] for move in self.terms]

    def log_likelihood(self, temperature: float, weights: Sequence[float] = KEY_WEIGHTS) -> float:
        """The mean log-probability of a choice under the priors at ``temperature``
        with the key's ``weights``."""
        total = 0.0
        for keys, c in zip(self.keys(weights), self.chosen, strict=True):
            top = max(keys)
            z = sum(math.exp((k - top) / temperature) for k in keys)
            total += (keys[c] - top) / temperature - math.log(z)
        return total / max(1, len(self.chosen))

    def uniform(self) -> float:
        """The mean log-probability of a choice made uniformly among the slides."""
        return -sum(math.log(len(move)) for move in self.terms) / max(1, len(self.terms))

    def fit(self, weights: Sequence[float] = KEY_WEIGHTS) -> float:
        """The temperature of ``TEMPERATURES`` most likely to have made these choices
        with the key's ``weights``."""
        return max(TEMPERATURES, key=lambda t: self.log_likelihood(t, weights))

    def fit_weights(self, l2: float = 0.01) -> Terms:
        """The weights (at temperature 1) most likely to have made these choices, less
        ``l2`` times half their squared length: a multinomial logit over the terms,
        maximised by Newton's method with step halving (the objective is concave). A
        term that never varies within a move gets 0."""
        import numpy as np  # with numba (battlesheep[fast]); the fit's only need of it

        moves = [np.array(move, np.float64) for move in self.terms]
        size = len(PRIOR_TERMS)

        def objective(w: Any) -> float:
            total = -0.5 * l2 * float(w @ w)
            for x, c in zip(moves, self.chosen, strict=True):
                z = x @ w
                top = z.max()
                total += float(z[c] - top - np.log(np.exp(z - top).sum()))
            return total

        w = np.zeros(size)
        value = objective(w)
        for _ in range(100):
            grad = -l2 * w
            hess = -l2 * np.eye(size)
            for x, c in zip(moves, self.chosen, strict=True):
                z = x @ w
                p = np.exp(z - z.max())
                p /= p.sum()
                mean = p @ x
                grad += x[c] - mean
                hess -= (x * p[:, None]).T @ x - np.outer(mean, mean)
            step = np.linalg.solve(hess, grad)
            scale = 1.0
            while scale > 1e-6:
                trial = w - scale * step
                trial_value = objective(trial)
                if trial_value >= value:
                    break
                scale /= 2
            else:
                break
            w, value = trial, trial_value
            if float(np.abs(scale * step).max()) < 1e-9:
                break
        return tuple(float(v) for v in w)


def choices_in(
    record: GameRecord, names: dict[int, str], out: dict[str, Choices], game: int = 0
) -> None:
    """Every move of ``record`` (game number ``game``) with a choice of slides,
    replayed from its start, into ``out`` under the mover's strategy name (``names``,
    by seat)."""
    truth = GameState(record.setting, record.state.geometry)
    n = truth.geometry.size
    for e in record.events:
        cell = e.x * n + e.y
        if e.kind == "move":
            slides = truth.slides()
            picked = [k for k, (c, d, _) in enumerate(slides) if (c, d) == (cell, e.direction)]
            if len(slides) > 1 and picked:
                terms = [slide_terms(truth, c, t, area_split(truth, c, t)) for c, _, t in slides]
                out.setdefault(names[e.seat], Choices()).add(terms, picked[0], game)
        replay_turn(truth, e.kind, cell, e.split, e.direction)


def label(spec: str) -> str:
    """A seat spec as a word for figure names (``uct:c=2`` -> ``uct_c_2``)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", spec).strip("_")


def bench_priors(
    game: int, seats: Sequence[str], games: int, time_limit: float, seed: int, fit: bool = False
) -> dict[str, float | str]:
    """Games of ``seats`` (rotated a place each game) on the boards of ``seed`` on, and
    each strategy's figures (module docstring); with ``fit`` the learned weights too."""
    setting = get_setting(game)
    if setting.hidden_counts:
        raise ConfigError("bench priors: game 3 hides the counts the keys read; use 1, 2 or 4")
    found: dict[str, Choices] = {}
    plays = rotated_games(game, seats, games, time_limit, seed, lambda: None)
    for g, (lineup, record, _) in enumerate(plays):
        choices_in(record, {k + 1: label(spec) for k, spec in enumerate(lineup)}, found, g)
    defaults = MctsParams()
    default, weights = defaults.prior_temperature, defaults.prior_weights
    figures: dict[str, float | str] = {
        "games": float(games),
        "default_temperature": default,
        "default_weights": ",".join(f"{w:g}" for w in weights),
    }
    for name, choices in sorted(found.items()):
        best = choices.fit(weights)
        uniform = choices.uniform()
        figures[f"{name}_moves"] = float(len(choices.chosen))
        figures[f"{name}_temperature"] = best
        figures[f"{name}_nats_over_uniform"] = choices.log_likelihood(best, weights) - uniform
        at_default = choices.log_likelihood(default, weights) - uniform
        figures[f"{name}_nats_over_uniform_at_default"] = at_default
        figures[f"{name}_entropy_uniform"] = -uniform
        if fit:
            figures.update(fitted_figures(name, choices, default, weights))
    return figures


def fitted_figures(
    name: str, choices: Choices, temperature: float, weights: Sequence[float]
) -> dict[str, float | str]:
    """The weights learned from ``choices`` (at ``temperature``, for ``prior_weights``),
    their nats per move over uniform on the games fitted, and, learned from the even
    games alone, on the odd games beside the default priors' (``weights`` at
    ``temperature``) there."""
    learned = choices.fit_weights()
    out: dict[str, float | str] = {
        f"{name}_fitted_weights": ",".join(f"{temperature * w:.3g}" for w in learned),
        f"{name}_nats_over_uniform_fitted": choices.log_likelihood(1.0, learned)
        - choices.uniform(),
    }
    train, test = choices.part(lambda g: g % 2 == 0), choices.part(lambda g: g % 2 == 1)
    if train.chosen and test.chosen:
        held = train.fit_weights()
        out[f"{name}_held_out_moves"] = float(len(test.chosen))
        out[f"{name}_nats_over_uniform_held_out_fitted"] = (
            test.log_likelihood(1.0, held) - test.uniform()
        )
        out[f"{name}_nats_over_uniform_held_out_at_default"] = (
            test.log_likelihood(temperature, weights) - test.uniform()
        )
    return out


def run(args: argparse.Namespace) -> int:
    quiet_games()
    seats = [s.strip() for s in args.seats.split(",")]
    figures = bench_priors(args.game, seats, args.games, args.time_limit, args.seed, args.fit)
    print_figures(figures)
    return 0


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "priors", help="how well the tree's priors (the slide key) predict each seat's slides"
    )
    add_seat_games(p, game=1, time_limit=1.0)
    p.add_argument(
        "--fit",
        action="store_true",
        help="also learn each strategy's weights of the key's terms (for prior_weights)",
    )
    p.set_defaults(func=run)
