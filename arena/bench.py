"""``battlesheep bench arena``: games of random players through the server, over TCP.

The players are small asyncio clients in the server's own process (no
interpreter start-up per game), so the figures are the server's: games per
second, and its own work per move, from a reply's arrival to the next request
sent (decoding, checking, applying, encoding; skipped seats included).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import struct
import time
from typing import Any

from arena.config import ServerConfig
from arena.players import Player, TaskPlayer
from arena.server import GamePlan, play_single
from protocol import (
    NEED_DATA,
    GameOver,
    InitialMap,
    MoveReply,
    PositionReply,
    ServerStreamDecoder,
    encode,
)
from state.geometry import DIRECTIONS
from state.settings import get_setting

TEAMS = (1, 2, 3, 4)


def _random_move(
    rng: random.Random, seat: int, board: Any, sheep: Any
) -> tuple[int, int, int, int] | None:
    n = len(board)
    options = []
    for x in range(n):
        for y in range(n):
            if board[x][y] == seat and sheep[x][y] > 1:
                for d, (dx, dy) in DIRECTIONS.items():
                    nx, ny = x + dx, y + dy
                    if 0 <= nx < n and 0 <= ny < n and board[nx][ny] == 0:
                        options.append((x, y, d))
    if not options:
        return None
    x, y, d = rng.choice(options)
    return x, y, rng.randint(1, sheep[x][y] - 1), d


def _border(board: Any) -> list[tuple[int, int]]:
    n = len(board)
    cells = []
    for x in range(n):
        for y in range(n):
            if board[x][y] == 0 and any(
                not (0 <= x + dx < n and 0 <= y + dy < n) or board[x + dx][y + dy] == -1
                for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
            ):
                cells.append((x, y))
    return cells


def random_player(team: int, size: int, seed: int) -> TaskPlayer:
    """A uniformly random player speaking the course protocol over TCP."""
    rng = random.Random(seed)

    async def run(host: str, port: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(struct.pack("<i", team))
        decoder = ServerStreamDecoder(size)
        seat = 0
        try:
            while True:
                data = await reader.read(1 << 16)
                if not data:
                    return
                decoder.feed(data)
                while (message := decoder.next_message()) is not NEED_DATA:
                    if isinstance(message, GameOver):
                        return
                    if isinstance(message, InitialMap):
                        seat = message.player_id
                        x, y = rng.choice(_border(message.map))
                        reply: PositionReply | MoveReply = PositionReply(
                            id_package=message.id_package, x=x, y=y
                        )
                    else:
                        move = _random_move(rng, seat, message.map, message.sheep)
                        if move is None:
                            continue
                        x, y, m, d = move
                        reply = MoveReply(
                            id_package=message.id_package, x=x, y=y, split=m, direction=d
                        )
                    writer.write(encode(reply, size))
        finally:
            writer.close()

    return TaskPlayer(run, label=f"random-{team}")


async def bench_arena(games: int, game: int, seed: int) -> dict[str, float]:
    size = get_setting(game).size
    config = ServerConfig(time_limit=3.0, connect_timeout=10.0, exit_grace=1.0)
    overhead: list[float] = []
    moves = 0
    started = time.perf_counter()
    for k in range(games):
        players: list[Player] = [random_player(t, size, seed * 100 + k * 4 + t) for t in TEAMS]
        plan = GamePlan(game=game, seed=seed + k, teams=TEAMS, players=players, index=k)
        record, result = await play_single(plan, config)
        overhead.extend(record.overhead)
        moves += result.moves
    elapsed = time.perf_counter() - started
    overhead.sort()

    def pct(q: float) -> float:
        return overhead[min(len(overhead) - 1, int(q * len(overhead)))] * 1000 if overhead else 0

    return {
        "games": games,
        "games_per_s": games / elapsed,
        "moves_per_s": moves / elapsed,
        "server_overhead_ms_p50": pct(0.50),
        "server_overhead_ms_p99": pct(0.99),
        "server_overhead_ms_max": overhead[-1] * 1000 if overhead else 0,
    }


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "arena", help="games of random players through the match server"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--games", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from battlesheep.cli import print_figures

    logging.getLogger("arena").setLevel(logging.WARNING)  # one line per figure, no chatter
    print_figures(asyncio.run(bench_arena(args.games, args.game, args.seed)))
    return 0
