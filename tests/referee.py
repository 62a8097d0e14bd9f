"""A small scripted referee for client tests: one game by RULES.md over real TCP.

It accepts four players by team id (seat = position of the team in ``teams``),
asks each seat for its initial position and moves in turn order with the
course frames, checks every reply against its own ``GameState``, applies the
legal ones that come in time, and records every reply with its legality and
latency. Options inject the faults the client must survive.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, field

from protocol import (
    NEED_DATA,
    GameOver,
    InitialMap,
    InvalidReply,
    MoveReply,
    PlayerStreamDecoder,
    PositionReply,
    ProtocolError,
    ReplyKind,
    TeamId,
    Turn,
    encode,
)
from state.boardgen import random_geometry
from state.game import GameState, Move
from state.settings import get_setting

Board = tuple[tuple[int, ...], ...]


def as_board(rows: list[list[int]]) -> Board:
    return tuple(tuple(r) for r in rows)


@dataclass
class ReplyRecord:
    seat: int
    id_package: int
    kind: ReplyKind
    values: tuple[int, ...] | None  # None: no reply in time
    legal: bool
    elapsed: float  # seconds from the request's last byte sent to the reply decoded
    had_moves: bool = True
    stale: bool = False  # a reply to a superseded request


@dataclass
class RefereeResult:
    records: list[ReplyRecord] = field(default_factory=list)
    scores: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    connections: dict[int, int] = field(default_factory=dict)  # seat -> connections seen

    def replies(self, seat: int | None = None) -> list[ReplyRecord]:
        return [
            r
            for r in self.records
            if (seat is None or r.seat == seat) and r.had_moves and not r.stale
        ]


@dataclass
class _Conn:
    seat: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    decoder: PlayerStreamDecoder
    inbox: asyncio.Queue[tuple[object, float] | None]
    task: asyncio.Task[None] | None = None


class Referee:
    def __init__(
        self,
        game: int,
        *,
        teams: tuple[int, ...] = (11, 12, 13, 14),
        seed: int = 1,
        time_limit: float = 0.5,
        grace: float = 0.15,
        leak_counts: bool = False,
        boards_to_passing: bool = False,
        drop_after: dict[int, int] | None = None,
        stale_for: frozenset[int] = frozenset(),
        wait_for_players: float = 20.0,
    ) -> None:
        self.setting = get_setting(game)
        self.teams = teams
        self.rng = random.Random(seed)
        self.geometry = random_geometry(self.setting, seed)
        self.time_limit = time_limit
        self.grace = grace
        self.leak_counts = leak_counts
        self.boards_to_passing = boards_to_passing
        self.drop_after = dict(drop_after or {})
        self.stale_for = stale_for
        self.wait_for_players = wait_for_players
        self.result = RefereeResult()
        self._conns: dict[int, _Conn] = {}
        self._ready = {seat: asyncio.Event() for seat in range(1, 5)}
        self._boards_sent = dict.fromkeys(range(1, 5), 0)
        self._last_id = dict.fromkeys(range(1, 5), 0)
        self._ids = iter(range(100, 1 << 30))
        self._server: asyncio.Server | None = None
        self.port = 0

    # ------------------------------------------------------------ connections
    async def start(self, port: int = 0) -> int:
        self._server = await asyncio.start_server(self._on_connect, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        for conn in list(self._conns.values()):
            await self._drop(conn)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = self.setting.size
        decoder = PlayerStreamDecoder(size)
        try:
            data = await asyncio.wait_for(reader.readexactly(4), timeout=10)
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            writer.close()
            return
        decoder.feed(data)
        hello = decoder.next_message()
        assert isinstance(hello, TeamId)
        if hello.team_id not in self.teams:
            self.result.errors.append(f"unknown team {hello.team_id}")
            writer.write(encode(GameOver(id_package=0), size))
            writer.close()
            return
        seat = self.teams.index(hello.team_id) + 1
        old = self._conns.get(seat)
        if old is not None:
            await self._drop(old)
        conn = _Conn(seat, reader, writer, decoder, asyncio.Queue())
        conn.task = asyncio.create_task(self._read(conn))
        self._conns[seat] = conn
        self.result.connections[seat] = self.result.connections.get(seat, 0) + 1
        self._ready[seat].set()

    async def _read(self, conn: _Conn) -> None:
        try:
            while True:
                data = await conn.reader.read(1 << 16)
                if not data:
                    break
                conn.decoder.feed(data)
                while (msg := conn.decoder.next_message()) is not NEED_DATA:
                    conn.inbox.put_nowait((msg, time.monotonic()))
        except ProtocolError as exc:
            self.result.errors.append(f"seat {conn.seat}: unframeable reply: {exc}")
        except ConnectionError:
            pass
        conn.inbox.put_nowait(None)

    async def _drop(self, conn: _Conn) -> None:
        if self._conns.get(conn.seat) is conn:
            del self._conns[conn.seat]
            self._ready[conn.seat].clear()
        if conn.task is not None:
            conn.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await conn.task
        conn.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await conn.writer.wait_closed()

    async def _conn(self, seat: int) -> _Conn | None:
        try:
            await asyncio.wait_for(self._ready[seat].wait(), timeout=self.wait_for_players)
        except TimeoutError:
            self.result.errors.append(f"seat {seat} not connected")
            return None
        return self._conns[seat]

    # ----------------------------------------------------------------- asking
    async def _ask(
        self,
        seat: int,
        message: InitialMap | Turn,
        kind: ReplyKind,
        stale: InitialMap | Turn | None = None,
    ) -> tuple[tuple[int, ...] | None, float]:
        """Send a request; (the reply's values, seconds taken), values None if none in time.

        ``stale`` is sent first in the same write, with an older id_package.
        """
        conn = await self._conn(seat)
        if conn is None:
            return None, 0.0
        size = self.setting.size
        conn.decoder.expect(message.id_package, kind)
        frame = encode(message, size)
        if stale is not None:
            conn.decoder.expect(stale.id_package, kind)
            frame = encode(stale, size) + frame
        try:
            conn.writer.write(frame)
            await conn.writer.drain()
        except ConnectionError:
            return None, 0.0
        sent = time.monotonic()
        self._boards_sent[seat] += 1
        while True:
            left = sent + self.time_limit + self.grace - time.monotonic()
            try:
                item = await asyncio.wait_for(conn.inbox.get(), timeout=max(0.0, left))
            except TimeoutError:
                return None, time.monotonic() - sent
            if item is None:
                self.result.errors.append(f"seat {seat}: connection lost while asked")
                return None, time.monotonic() - sent
            reply, at = item
            if isinstance(reply, InvalidReply):
                values: tuple[int, ...] = reply.values
            else:
                assert isinstance(reply, PositionReply | MoveReply)
                values = (1, *reply.model_dump().values())
            if reply.id_package != message.id_package:
                self.result.records.append(
                    ReplyRecord(seat, reply.id_package, kind, values, False, at - sent, stale=True)
                )
                continue
            if isinstance(reply, InvalidReply):
                self.result.errors.append(f"seat {seat}: invalid reply {values}")
                return None, at - sent
            return values, at - sent

    # ------------------------------------------------------------------- game
    async def play(self) -> RefereeResult:
        size = self.setting.size
        state = GameState(self.setting, self.geometry)
        for seat in range(1, 5):
            ident = next(self._ids)
            initial = InitialMap(
                code=1, id_package=ident, player_id=seat, map=as_board(state.wire_map())
            )
            values, elapsed = await self._ask(seat, initial, "position")
            cell: int | None = None
            if values is not None and elapsed <= self.time_limit + self.grace:
                _, _, x, y = values
                c = self.geometry.index_or_none(x, y)
                cell = c if c is not None and c in state.initial_positions() else None
            self.result.records.append(
                ReplyRecord(seat, ident, "position", values, cell is not None, elapsed)
            )
            if cell is None:
                cell = self.rng.choice(state.initial_positions())
            state.place(cell)
        while not state.is_terminal():
            seat = state.to_move
            has = state.has_moves(seat)
            if not has and not self.boards_to_passing:
                state.skip_turn()
                continue
            ident = next(self._ids)
            viewer = None if self.leak_counts else seat
            msg = Turn(
                code=1,
                id_package=ident,
                map=as_board(state.wire_map()),
                sheep=as_board(state.wire_sheep(viewer)),
            )
            stale = None
            if seat in self.stale_for and self._last_id[seat]:
                stale = msg.model_copy(update={"id_package": self._last_id[seat]})
            self._last_id[seat] = ident
            values, elapsed = await self._ask(seat, msg, "move", stale)
            move: Move | None = None
            if values is not None and has and elapsed <= self.time_limit + self.grace:
                _, _, x, y, split, direction = values
                c = self.geometry.index_or_none(x, y)
                if c is not None and Move(c, split, direction) in state.legal_moves(seat):
                    move = Move(c, split, direction)
            self.result.records.append(
                ReplyRecord(seat, ident, "move", values, move is not None, elapsed, has)
            )
            if move is not None:
                state.apply(move)
            else:
                state.skip_turn()
            if self.drop_after.get(seat) == self._boards_sent[seat] and seat in self._conns:
                await self._drop(self._conns[seat])
        self.result.scores = state.scores()
        for seat in range(1, 5):
            conn = self._conns.get(seat)
            if conn is not None:
                with contextlib.suppress(ConnectionError):
                    conn.writer.write(encode(GameOver(id_package=next(self._ids)), size))
                    await conn.writer.drain()
        return self.result
