"""``battlesheep bench engine``: the engine's speed on random games (figures, no I/O)."""

from __future__ import annotations

import random
import time

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

    # Move generation on positions sampled from random games.
    positions: list[GameState] = []
    while len(positions) < 200:
        state = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(state, rng)
        for _ in range(rng.randrange(0, 40)):
            slides = state.slides()
            if not slides:
                break
            cell, _d, dst = rng.choice(slides)
            state.slide(cell, dst, rng.randint(1, state.sheep[cell] - 1))
        positions.append(state)
    generated = calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < third:
        for state in positions:
            generated += len(state.legal_moves())
            calls += 1
    gen_time = time.perf_counter() - start

    # Ingest: one observation per round, from the point of view of seat 1.
    ingests = 0
    ingest_time = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < third:
        truth = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(truth, rng)
        mine = state_from_observation(
            setting, truth.wire_map(), truth.wire_sheep(), 1, to_move=truth.to_move
        )
        mine.to_move = 1
        while not truth.is_terminal():
            for _ in range(4):
                slides = truth.slides()
                if slides:
                    cell, _d, dst = rng.choice(slides)
                    truth.slide(cell, dst, rng.randint(1, truth.sheep[cell] - 1))
                else:
                    truth.skip_turn()
            board, sheep = truth.wire_map(), truth.wire_sheep()
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
