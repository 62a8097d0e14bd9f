"""``battlesheep demo``: a game of built-in strategies in this process, shown turn by turn.

The game is played by the one game loop (``arena.local``): each seat a client
session of its strategy, judged by the referee; a listener prints every turn.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from typing import Any

from arena.local import play_local
from arena.referee import Event, GameRecord
from arena.results import result_of
from bench import quiet_games
from state.game import GameState
from state.render import render, score_line
from strategies.base import ConfigError
from strategies.kernel import wait_warm
from strategies.registry import make_strategy, parse_seat


class TurnPrinter:
    """Prints each turn of a game (an ``arena.referee.GameListener``)."""

    def __init__(self) -> None:
        self.turn = 0

    def game_started(
        self, state: GameState, seed: int, teams: Sequence[int], time_limit: float
    ) -> None:
        print(f"game {state.setting.game}, seed {seed}")

    def turn_played(self, event: Event, state: GameState) -> None:
        if event.kind == "place":
            if state.placing:
                return
            print(render(state))
            return
        self.turn += 1
        if event.kind == "move":
            what = f"moves {event.split} from ({event.x},{event.y}) dir {event.direction}"
        elif event.kind == "pass":
            what = "has no legal move and passes"
        else:
            what = f"loses its turn ({event.outcome})"
        print(f"\nturn {self.turn}: seat {event.seat} {what}")
        if event.kind == "move":
            print(render(state))
            print(score_line(state))

    def game_over(self, record: GameRecord) -> None:
        print("\nfinal:", score_line(record.state))


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "demo", help="a game of built-in strategies in this process, shown turn by turn"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--seed", type=int, default=None, help="the board's seed (default: random)")
    p.add_argument(
        "--seats",
        default="random,random,random,random",
        help="four comma-separated strategies (NAME or NAME:key=value)",
    )
    p.add_argument("--time-limit", type=float, default=1.0, help="seconds per move")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    quiet_games()
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    specs = [s.strip() for s in args.seats.split(",")]
    if len(specs) != 4:
        raise ConfigError(f"--seats needs 4 strategies, not {len(specs)}")
    players = []
    for k, spec in enumerate(specs):
        name, params = parse_seat(spec)
        players.append(make_strategy(name, {"seed": seed * 4 + k, **params}))
    if not wait_warm(0, start=False):  # the game loop waits for it: say why
        print("loading the fast kernel (numba: seconds; compiling on a first run, about 30 s)")
    game = play_local(args.game, seed, players, args.time_limit, listener=TurnPrinter())
    print("points:", result_of(game.record).points)
    return 0
