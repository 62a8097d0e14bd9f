"""``battlesheep bench engine``: the state's and the playout kernels' speed on random games.

Random playouts three ways on the same positions (just after placement): with the
state's make/unmake (``state.playout``, the tree's and the client's engine), with the
chosen playout kernel under the uniform policy, and with the kernel under the main
strategy's playout policy; then move generation on positions of random games,
ingest of one seat's boards (the games played by the one game loop), and the main
strategy's MCTS (tree, priors and playouts, one process) on some of those positions.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any, Literal

from bench import print_figures, quiet_games
from bench.games import random_game
from state.boardgen import random_geometry
from state.game import GameState
from state.observe import ingest, state_from_observation
from state.playout import random_placement, random_playout
from state.settings import get_setting
from strategies.base import Budget
from strategies.hybrid import HybridParams
from strategies.kernel import (
    KERNELS,
    KernelName,
    PlayoutKernel,
    PlayoutPolicy,
    get_kernel,
    wait_warm,
)
from strategies.kernel import default_kernel_name as default_kernel
from strategies.mcts import Mcts

BOARDS = 20
"""Positions (boards just after placement) the playouts cycle through."""

SEARCHES = 6
"""Positions of random games (the early middle game) the MCTS runs on."""


def bench_engine(
    game: int = 1, seconds: float = 3.0, seed: int = 1, kernel: KernelName | None = None
) -> dict[str, float | str]:
    """Each part for about a sixth of ``seconds`` (with the fast kernel, the Python
    kernel's uniform playouts too, for the ratio); returns figures by name."""
    setting = get_setting(game)
    rng = random.Random(seed)
    share = seconds / 6
    name = kernel or default_kernel()
    compile_start = time.perf_counter()
    chosen = get_kernel(name)
    starts: list[GameState] = []
    for _ in range(BOARDS):
        state = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(state, rng)
        state.clear_history()
        starts.append(state)
    # The first playout compiles the fast kernel (or loads it from numba's cache); the
    # searches below need it (and the compiled tree) ready, not warming up behind them.
    chosen.scores(starts[0], PlayoutPolicy.uniform(), rng)
    if name == "fast":
        wait_warm(None)
    ready_s = time.perf_counter() - compile_start

    playouts = plies = 0
    start = time.perf_counter()
    while time.perf_counter() - start < share:
        for state in starts:
            n = random_playout(state, rng)
            plies += n
            playouts += 1
            for _ in range(n):
                state.undo()
    state_rate = playouts / (time.perf_counter() - start)
    plies_per_playout = plies / max(playouts, 1)

    uniform_rate = _kernel_rate(chosen, starts, PlayoutPolicy.uniform(), rng, share)
    policy = HybridParams().playout_policy()
    policy_rate = _kernel_rate(chosen, starts, policy, rng, share)
    # The compiled kernel against the Python one, in the same run.
    versus: dict[str, float | str] = {}
    if name == "fast":
        python_rate = _kernel_rate(
            get_kernel("python"), starts, PlayoutPolicy.uniform(), rng, share
        )
        versus = {
            "python_playouts_per_s": python_rate,
            "fast_over_python": uniform_rate / python_rate,
        }

    # Move generation and ingest on random games played by the game loop.
    positions: list[GameState] = []
    views: list[list[tuple[list[list[int]], list[list[int]]]]] = []
    while len(positions) < 200:
        watched = random_game(game, rng.getrandbits(31))
        positions += watched.positions
        views.append(watched.boards)
    generated = calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < share:
        for state in positions:
            generated += len(state.legal_moves())
            calls += 1
    gen_time = time.perf_counter() - start

    # Ingest: seat 1's boards, one per turn of seat 1, into seat 1's state.
    ingests = 0
    ingest_time = 0.0
    while ingest_time < share:
        for boards in views:
            if not boards:
                continue
            mine = state_from_observation(setting, *boards[0], 1, to_move=1)
            for board, sheep in boards[1:]:
                t0 = time.perf_counter()
                ingest(mine, board, sheep, 1)
                ingest_time += time.perf_counter() - t0
                ingests += 1
    search_rate = _search_rate(positions, name, share)
    compiled_rate = _search_rate(positions, name, share, "compiled") if name == "fast" else 0.0
    return {
        "game": float(game),
        "kernel": name,
        "playouts_per_s": uniform_rate,
        "state_playouts_per_s": state_rate,
        "kernel_speedup": uniform_rate / state_rate,
        "policy_playouts_per_s": policy_rate,
        **versus,
        "kernel_ready_s": ready_s,
        "plies_per_playout": plies_per_playout,
        "movegen_calls_per_s": calls / gen_time,
        "moves_generated_per_s": generated / gen_time,
        "ingest_us": 1e6 * ingest_time / max(ingests, 1),
        "search_iterations_per_s": search_rate,
        **({"compiled_search_iterations_per_s": compiled_rate} if name == "fast" else {}),
    }


def _kernel_rate(
    kernel: PlayoutKernel,
    starts: list[GameState],
    policy: PlayoutPolicy,
    rng: random.Random,
    seconds: float,
) -> float:
    """Playouts per second of ``kernel`` from ``starts`` (scores included)."""
    playouts = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for state in starts:
            kernel.scores(state, policy, rng)
        playouts += len(starts)
    return playouts / (time.perf_counter() - start)


def _search_rate(
    positions: list[GameState],
    kernel: KernelName,
    seconds: float,
    tree: Literal["python", "compiled"] = "python",
) -> float:
    """Iterations per second of the main strategy's MCTS (its default parameters,
    ``kernel`` and ``tree``), a fresh tree on each of ``SEARCHES`` positions of the
    early middle game, ``seconds`` shared among them."""

    def taken(state: GameState) -> int:
        return sum(len(cells) for cells in state.stacks)

    # From two rounds after placement to a quarter of the field taken.
    early = [s for s in positions if 12 <= taken(s) <= s.setting.cells // 4 + 12 and s.slides()]
    picked = early[:: max(1, len(early) // SEARCHES)][:SEARCHES]
    params = HybridParams(kernel=kernel, tree=tree)
    iterations = 0
    spent = 0.0
    for i, state in enumerate(picked):
        mcts = Mcts(params, random.Random(i))
        mcts.set_root(state)
        start = time.perf_counter()
        mcts.search(state, Budget.seconds(60 + seconds), time.monotonic() + seconds / len(picked))
        spent += time.perf_counter() - start
        iterations += mcts.iterations
    return iterations / spent if spent else 0.0


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "engine", help="playouts (state and kernel), move generation, ingest"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--seed", type=int, default=1, help="the first board's seed")
    p.add_argument(
        "--kernel",
        choices=KERNELS,
        default=None,
        help=f"playout kernel (default: the fastest installed, here {default_kernel()})",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    quiet_games()
    print_figures(bench_engine(args.game, args.seconds, args.seed, args.kernel))
    return 0
