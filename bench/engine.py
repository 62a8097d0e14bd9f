"""``battlesheep bench engine``: the state's speed on random games.

Random playouts with make/unmake, move generation on positions of random games,
and ingest of one seat's boards (the games played by the one game loop).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from bench import print_figures, quiet_games
from bench.games import random_game
from state.boardgen import random_geometry
from state.game import GameState
from state.observe import ingest, state_from_observation
from state.playout import random_placement, random_playout
from state.settings import get_setting


def bench_engine(game: int = 1, seconds: float = 3.0, seed: int = 1) -> dict[str, float]:
    """Random playouts, move generation and observation ingest, each for about a third
    of ``seconds``; returns figures by name."""
    setting = get_setting(game)
    rng = random.Random(seed)
    third = seconds / 3

    playouts = plies = 0
    start = time.perf_counter()
    while time.perf_counter() - start < third:
        state = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(state, rng)
        for _ in range(20):
            n = random_playout(state, rng)
            plies += n
            playouts += 1
            for _ in range(n):
                state.undo()
    playout_time = time.perf_counter() - start

    # Move generation and ingest on random games played by the game loop.
    positions: list[GameState] = []
    views: list[list[tuple[list[list[int]], list[list[int]]]]] = []
    while len(positions) < 200:
        watched = random_game(game, rng.getrandbits(31))
        positions += watched.positions
        views.append(watched.boards)
    generated = calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < third:
        for state in positions:
            generated += len(state.legal_moves())
            calls += 1
    gen_time = time.perf_counter() - start

    # Ingest: seat 1's boards, one per turn of seat 1, into seat 1's state.
    ingests = 0
    ingest_time = 0.0
    while ingest_time < third:
        for boards in views:
            if not boards:
                continue
            mine = state_from_observation(setting, *boards[0], 1, to_move=1)
            for board, sheep in boards[1:]:
                t0 = time.perf_counter()
                ingest(mine, board, sheep, 1)
                ingest_time += time.perf_counter() - t0
                ingests += 1
    return {
        "game": float(game),
        "playouts_per_s": playouts / playout_time,
        "plies_per_s": plies / playout_time,
        "plies_per_playout": plies / max(playouts, 1),
        "movegen_calls_per_s": calls / gen_time,
        "moves_generated_per_s": generated / gen_time,
        "ingest_us": 1e6 * ingest_time / max(ingests, 1),
    }


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "engine", help="random playouts, move generation, ingest"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--seed", type=int, default=1, help="the first board's seed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    quiet_games()
    print_figures(bench_engine(args.game, args.seconds, args.seed))
    return 0
