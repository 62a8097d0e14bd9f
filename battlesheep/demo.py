"""``battlesheep demo``: a self-play game of the built-in random players, shown turn by turn."""

from __future__ import annotations

import argparse
import random
from typing import Any

from state.boardgen import random_geometry
from state.game import GameState
from state.playout import random_placement
from state.render import render, score_line
from state.scoring import tournament_points
from state.settings import get_setting


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "demo", help="self-play of random players, no network"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    setting = get_setting(args.game)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    rng = random.Random(seed)
    state = GameState(setting, random_geometry(setting, seed))
    print(f"game {setting.game}, seed {seed}")
    random_placement(state, rng)
    print(render(state))
    turn = 0
    while not state.is_terminal():
        seat = state.to_move
        slides = state.slides()
        if not slides:
            state.skip_turn()
            continue
        cell, direction, dst = rng.choice(slides)
        split = rng.randint(1, state.sheep[cell] - 1)
        state.slide(cell, dst, split)
        turn += 1
        x, y = state.geometry.xy(cell)
        tx, ty = state.geometry.xy(dst)
        print(f"\nturn {turn}: seat {seat} moves {split} from ({x},{y}) dir {direction}", end="")
        print(f" to ({tx},{ty})")
        print(render(state))
        print(score_line(state))
    print("\nfinal:", score_line(state))
    print("points:", tournament_points(state.scores()))
    return 0
