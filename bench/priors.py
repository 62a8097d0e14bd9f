"""``battlesheep bench priors``: how well the tree's priors predict each seat's slides.

The tree's priors at a node are a softmax of ``strategies.common.slide_key`` (each
slide at its area split) at ``prior_temperature``, or ``prior_temperature_other`` at
the other seats' nodes (``strategies.mcts_tree.expand``). For every slide a seat
plays in games of the given seats (played in-process by the one game loop, the seats
rotated a place each game), this takes the keys of every slide the seat had and the
one it chose, and reports by strategy: the moves that had a choice, the temperature
of ``TEMPERATURES`` most likely to have made those choices, and the mean
log-likelihood of a choice at that temperature and at the priors' default, each over
uniform choice among the slides (nats per move: 0 where the key tells nothing of the
seat's choices, its entropy where it tells all). Games of visible counts only (1, 2
and 4): game 3's counts, which the keys read, are hidden from the seats.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arena.local import play_local
from arena.referee import GameRecord
from bench import print_figures, quiet_games
from bench.games import replay_turn, seat_players
from state.game import GameState
from state.settings import get_setting
from strategies.base import ConfigError
from strategies.common import area_split, slide_key
from strategies.mcts import MctsParams

TEMPERATURES = (0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0, 5.6, 8.0, 16.0, 64.0)
"""The temperatures a strategy's choices are fitted among (``Choices.fit``)."""


@dataclass
class Choices:
    """A strategy's observed choices: for each move, every slide's key and its pick."""

    keys: list[list[float]] = field(default_factory=list)
    chosen: list[int] = field(default_factory=list)

    def log_likelihood(self, temperature: float) -> float:
        """The mean log-probability of a choice under the priors at ``temperature``."""
        total = 0.0
        for keys, c in zip(self.keys, self.chosen, strict=True):
            top = max(keys)
            z = sum(math.exp((k - top) / temperature) for k in keys)
            total += (keys[c] - top) / temperature - math.log(z)
        return total / max(1, len(self.chosen))

    def uniform(self) -> float:
        """The mean log-probability of a choice made uniformly among the slides."""
        return -sum(math.log(len(keys)) for keys in self.keys) / max(1, len(self.keys))

    def fit(self) -> float:
        """The temperature of ``TEMPERATURES`` most likely to have made these choices."""
        return max(TEMPERATURES, key=self.log_likelihood)


def choices_in(record: GameRecord, names: dict[int, str], out: dict[str, Choices]) -> None:
    """Every move of ``record`` with a choice of slides, replayed from its start, into
    ``out`` under the mover's strategy name (``names``, by seat)."""
    truth = GameState(record.setting, record.state.geometry)
    n = truth.geometry.size
    for e in record.events:
        cell = e.x * n + e.y
        if e.kind == "move":
            slides = truth.slides()
            picked = [k for k, (c, d, _) in enumerate(slides) if (c, d) == (cell, e.direction)]
            if len(slides) > 1 and picked:
                choices = out.setdefault(names[e.seat], Choices())
                choices.keys.append(
                    [slide_key(truth, c, t, area_split(truth, c, t)) for c, _, t in slides]
                )
                choices.chosen.append(picked[0])
        replay_turn(truth, e.kind, cell, e.split, e.direction)


def label(spec: str) -> str:
    """A seat spec as a word for figure names (``uct:c=2`` -> ``uct_c_2``)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", spec).strip("_")


def bench_priors(
    game: int, seats: Sequence[str], games: int, time_limit: float, seed: int
) -> dict[str, float]:
    """Games of ``seats`` (rotated a place each game) on the boards of ``seed`` on, and
    each strategy's figures (module docstring)."""
    setting = get_setting(game)
    if setting.hidden_counts:
        raise ConfigError("bench priors: game 3 hides the counts the keys read; use 1, 2 or 4")
    if len(seats) != 4:
        raise ConfigError(f"bench priors: need four seat specs, not {len(seats)}")
    found: dict[str, Choices] = {}
    for g in range(games):
        lineup = [seats[(k + g) % 4] for k in range(4)]
        players = seat_players(lineup, seed + g)
        try:
            record = play_local(game, seed + g, players, time_limit).record
        finally:
            for player in players:
                player.close()
        choices_in(record, {k + 1: label(spec) for k, spec in enumerate(lineup)}, found)
    default = MctsParams().prior_temperature
    figures: dict[str, float] = {"games": float(games), "default_temperature": default}
    for name, choices in sorted(found.items()):
        best = choices.fit()
        figures[f"{name}_moves"] = float(len(choices.chosen))
        figures[f"{name}_temperature"] = best
        figures[f"{name}_nats_over_uniform"] = choices.log_likelihood(best) - choices.uniform()
        at_default = choices.log_likelihood(default) - choices.uniform()
        figures[f"{name}_nats_over_uniform_at_default"] = at_default
        figures[f"{name}_entropy_uniform"] = -choices.uniform()
    return figures


def run(args: argparse.Namespace) -> int:
    quiet_games()
    seats = [s.strip() for s in args.seats.split(",")]
    print_figures(bench_priors(args.game, seats, args.games, args.time_limit, args.seed))
    return 0


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "priors", help="how well the tree's priors (the slide key) predict each seat's slides"
    )
    p.add_argument("--game", type=int, choices=(1, 2, 4), default=1, help="game setting")
    p.add_argument(
        "--seats",
        default="hybrid,flatmc,flatmc,flatmc",
        help="four comma-separated strategies (name:key=value), rotated a place each game",
    )
    p.add_argument("--games", type=int, default=4, help="games to play")
    p.add_argument("--time-limit", type=float, default=1.0, help="seconds per move")
    p.add_argument("--seed", type=int, default=1, help="the first game's board")
    p.set_defaults(func=run)
