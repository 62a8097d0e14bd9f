"""``battlesheep bench arena``: games of random players through the server, over TCP.

The players are small asyncio clients in the server's own process (no
interpreter start-up per game), so the figures are the server's: games per
second, and its own work per move, from a reply's arrival to the next request
sent (decoding, checking, applying, encoding; skipped seats included).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import random
import struct
import time
from typing import Any

from arena.config import ServerConfig
from arena.players import Player, TaskPlayer
from arena.server import GamePlan, play_single
from bench import cpu_hogs, print_figures
from protocol import (
    NEED_DATA,
    Board,
    GameOver,
    InitialMap,
    MoveReply,
    PositionReply,
    ServerStreamDecoder,
    encode,
)
from state.game import GameState
from state.geometry import OBSTACLE, Geometry
from state.observe import ingest, state_from_observation
from state.settings import GameSetting, get_setting

TEAMS = (1, 2, 3, 4)


def random_reply(
    rng: random.Random, state: GameState, seat: int, id_package: int
) -> PositionReply | MoveReply | None:
    """A uniformly random free border cell, or a uniformly random slide and split
    (None when the seat has no move), as ``state`` reads the rules."""
    if state.placing:
        x, y = state.geometry.xy(rng.choice(state.initial_positions()))
        return PositionReply(id_package=id_package, x=x, y=y)
    slides = sorted(state.slides(seat))  # in cell order, whatever order they were taken
    if not slides:
        return None
    cell, direction, _dst = rng.choice(slides)
    x, y = state.geometry.xy(cell)
    split = rng.randint(1, state.sheep[cell] - 1)
    return MoveReply(id_package=id_package, x=x, y=y, split=split, direction=direction)


@functools.lru_cache(maxsize=4)
def _geometry(size: int, board: Board) -> Geometry:
    """The board's geometry, computed once for the four players of a game."""
    return Geometry(size, [v != OBSTACLE for col in board for v in col])


def random_player(team: int, setting: GameSetting, seed: int) -> TaskPlayer:
    """A uniformly random player speaking the course protocol over TCP."""
    rng = random.Random(seed)
    size = setting.size

    async def run(host: str, port: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(struct.pack("<i", team))
        decoder = ServerStreamDecoder(size)
        seat = 0
        state: GameState | None = None
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
                        geometry = _geometry(setting.size, message.map)
                        state = state_from_observation(
                            setting, message.map, None, seat, to_move=seat, geometry=geometry
                        )
                    elif state is not None:
                        ingest(state, message.map, message.sheep, seat)
                    else:
                        continue  # a board before the initial map: not ours to play
                    reply = random_reply(rng, state, seat, message.id_package)
                    if reply is not None:
                        writer.write(encode(reply, size))
        finally:
            writer.close()

    return TaskPlayer(run, label=f"random-{team}")


async def bench_arena(games: int, game: int, seed: int) -> dict[str, float]:
    setting = get_setting(game)
    config = ServerConfig(time_limit=3.0, connect_timeout=10.0, exit_grace=1.0)
    overhead: list[float] = []
    moves = 0
    started = time.perf_counter()
    for k in range(games):
        players: list[Player] = [random_player(t, setting, seed * 100 + k * 4 + t) for t in TEAMS]
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
    p.add_argument("--games", type=int, default=30, help="games to play")
    p.add_argument("--seed", type=int, default=1, help="the first board's seed")
    p.add_argument(
        "--hog",
        type=int,
        default=0,
        metavar="N",
        help="N processes burning a core each while the games run (a loaded machine)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.getLogger("arena").setLevel(logging.WARNING)  # one line per figure, no chatter
    with cpu_hogs(args.hog, 60 + 10 * args.games):  # bounded: the hogs end by themselves
        figures = asyncio.run(bench_arena(args.games, args.game, args.seed))
    print_figures({**figures, "hogs": args.hog})
    return 0
