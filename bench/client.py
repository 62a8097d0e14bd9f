"""``battlesheep bench client``: the client's own cost per turn, without search.

A bench server in the same process replays recorded random games to the
client over real TCP on 127.0.0.1, one board per turn of seat 1. The client
runs with a strategy that answers at once, so what is measured is the
client's own work: receive, decode, ingest, hand-off to the worker thread and
back, check, encode, send. ``overhead_ms_*`` is measured by the server, from
the board's last byte written to the reply's last byte read; ``session_ms_*``
inside the client, from the board's last byte decoded to the reply built.
The client's per-turn INFO log lines are off unless ``--log``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
from typing import Any

from bench import cpu_hogs, print_figures
from bench.games import random_game
from client.clock import TimeLimits
from client.session import GameSession
from client.tcp import ConnectOptions, play_tcp
from protocol import GameOver, InitialMap, Turn, encode
from state.boardgen import initial_map, random_geometry
from state.game import GameState, Move
from state.settings import get_setting
from strategies.base import Budget, Strategy
from strategies.registry import make_strategy

SEAT = 1


class BusyStrategy(Strategy):
    """Computes until the budget expires, checking it every ~0.1 ms, like a real search."""

    name = "busy"

    def place(self, state: GameState, budget: Budget) -> int:
        cell = state.initial_positions()[0]
        budget.offer_placement(cell)
        while not budget.expired():
            sum(range(300))
        return cell

    def move(self, state: GameState, budget: Budget) -> Move | None:
        move = InstantStrategy().move(state, budget)
        budget.offer_move(move)
        nodes = 0
        while not budget.expired():
            sum(range(300))
            nodes += 1
        budget.info["nodes"] = nodes
        return move


class InstantStrategy(Strategy):
    """The first legal move, at once: no search."""

    name = "instant"

    def place(self, state: GameState, budget: Budget) -> int:
        return state.initial_positions()[0]

    def move(self, state: GameState, budget: Budget) -> Move | None:
        for cell, direction, _dst in state.slides():
            return Move(cell, state.sheep[cell] // 2, direction)
        return None


def recorded_game(game: int, seed: int) -> tuple[bytes, list[bytes]]:
    """The initial map frame for seat 1 and the turn frames seat 1 sees in a random game."""
    setting = get_setting(game)
    n = setting.size

    def board(rows: list[list[int]]) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(r) for r in rows)

    empty = initial_map(random_geometry(setting, seed))
    initial = encode(InitialMap(code=1, id_package=1, player_id=SEAT, map=board(empty)), n)
    turns = [
        encode(Turn(code=1, id_package=k + 2, map=board(m), sheep=board(s)), n)
        for k, (m, s) in enumerate(random_game(game, seed, SEAT).boards)
    ]
    return initial, turns


async def _one_game(
    game: int,
    frames: tuple[bytes, list[bytes]],
    round_trips: list[float],
    session_times: list[float],
    strategy: Strategy,
    limits: TimeLimits,
) -> None:
    initial, turns = frames
    size = get_setting(game).size
    done = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readexactly(4)  # team id
            writer.write(initial)
            await writer.drain()
            await reader.readexactly(16)
            for frame in turns:
                writer.write(frame)
                await writer.drain()
                sent = time.perf_counter()
                await reader.readexactly(24)
                round_trips.append(time.perf_counter() - sent)
            writer.write(encode(GameOver(id_package=0), size))
            await writer.drain()
            writer.close()
        finally:
            if not done.done():
                done.set_result(None)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    session = GameSession(get_setting(game), strategy, limits)
    async with server:
        await play_tcp(session, ConnectOptions(port=port, connect_for=5, reconnect_for=0))
        await done
    session_times.extend(session.stats.turn_times[1:])  # without the placement


def _pct(values: list[float], q: int) -> float:
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000, 3)


def _play(
    game: int, turns: int, seed: int, strategy: Strategy, limits: TimeLimits
) -> tuple[list[float], list[float]]:
    round_trips: list[float] = []
    session_times: list[float] = []
    games: list[tuple[bytes, list[bytes]]] = []  # recorded before the clock starts
    left = turns
    while left > 0:
        initial, frames = recorded_game(game, seed + len(games))
        games.append((initial, frames[:left]))
        left -= len(frames[:left])

    async def main() -> None:
        for frames in games:
            await _one_game(game, frames, round_trips, session_times, strategy, limits)

    asyncio.run(main())
    return round_trips, session_times


def bench_client(game: int, turns: int, seed: int) -> dict[str, float]:
    round_trips, session_times = _play(game, turns, seed, InstantStrategy(), TimeLimits())
    pct = _pct
    return {
        "turns": len(round_trips),
        "overhead_ms_p50": pct(round_trips, 50),
        "overhead_ms_p99": pct(round_trips, 99),
        "overhead_ms_max": round(max(round_trips) * 1000, 3),
        "session_ms_p50": pct(session_times, 50),
        "session_ms_p99": pct(session_times, 99),
    }


def bench_deadline(
    game: int, turns: int, seed: int, budget: float, strategy: Strategy | None = None
) -> dict[str, float]:
    """How late past its deadline a reply reaches the server when the search uses it all.

    The search computes until its budget expires (``BusyStrategy``, checking every
    ~0.1 ms, or a real strategy such as ``hybrid`` with its tree, threads and garbage),
    the margin is 0, so the server-side round trip minus the time limit is the
    lateness the margin must cover on this machine.
    """
    searcher = strategy or BusyStrategy()
    round_trips, _ = _play(game, turns, seed, searcher, TimeLimits(budget, 0.0))
    late = [rt - budget for rt in round_trips]
    return {
        "deadline_turns": len(late),
        "late_ms_p50": _pct(late, 50),
        "late_ms_p99": _pct(late, 99),
        "late_ms_max": round(max(late) * 1000, 3),
    }


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "client", help="the client's overhead per turn (receive, decode, ingest, send)"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--turns", type=int, default=500, help="at least this many turns")
    p.add_argument("--seed", type=int, default=1, help="the first board's seed")
    p.add_argument("--log", action="store_true", help="keep the client's INFO lines")
    p.add_argument(
        "--deadline-turns",
        type=int,
        default=0,
        metavar="N",
        help="also measure how late past the deadline replies are when the search uses all"
        " of its time (N turns of --deadline-budget seconds each; what --margin must cover)",
    )
    p.add_argument("--deadline-budget", type=float, default=0.2, metavar="S")
    p.add_argument(
        "--deadline-strategy",
        default=None,
        metavar="NAME",
        help="search with this strategy (e.g. hybrid) instead of a busy loop",
    )
    p.add_argument(
        "--hog",
        type=int,
        default=0,
        metavar="N",
        help="N processes burning a core each during the deadline turns (a loaded machine)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.log:
        logging.getLogger("client").setLevel(logging.WARNING)
    print_figures(bench_client(args.game, args.turns, args.seed))
    if args.deadline_turns:
        strategy = make_strategy(args.deadline_strategy) if args.deadline_strategy else None
        # Bounded: the hogs end by themselves well after the turns could have.
        bound = 60 + 3 * args.deadline_turns * args.deadline_budget
        with cpu_hogs(args.hog, bound):
            figures = bench_deadline(
                args.game, args.deadline_turns, args.seed, args.deadline_budget, strategy
            )
        print_figures({**figures, "hogs": args.hog})
    return 0
