"""The one game loop: plays one game on the true ``GameState`` with four ``Seats``.

Seats are connections of the match server (``arena.connections.Lobby``: TCP,
WebSocket or MQTT players) or client sessions in this process
(``arena.local``); the rules, the clock, the outcomes and the record are the
same for both.

Placement is sequential in seat order: the seat to place gets the initial map
(earlier placements show) and answers with a cell; an illegal, late or
missing answer is replaced by a random free border cell. Then turns go in
seat order: a seat with no legal move is skipped and sent nothing; the others
get the board (game 3: others' counts as 0) and answer with a move; an
illegal, late or missing move loses the turn. The time limit is measured by
the server from sending the request to receiving the reply. The game ends
when no seat can move, or when no seat has moved for ``stall_rounds`` full
rounds (every seat left with moves is not answering).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from arena.connections import Reply, SeatStats
from protocol import InitialMap, InvalidReply, MoveReply, PositionReply, ReplyKind, Turn
from protocol.messages import Board
from state.boardgen import initial_map, random_geometry
from state.game import GameState, IllegalMoveError, Move
from state.settings import PLAYERS, GameSetting

logger = logging.getLogger(__name__)


@dataclass
class Event:
    """One seat's turn as it happened (the replay's unit).

    kind: ``place``, ``move`` (applied), ``pass`` (no legal move, sent nothing)
    or ``skip`` (turn lost). outcome: ``ok``, ``late``, ``illegal``, ``absent``
    (no connection) or ``disconnect``; for ``place`` anything but ``ok`` means the
    cell was drawn at random. ``elapsed``: seconds from request to reply, None
    when nothing was asked or nothing came.
    """

    seat: int
    kind: str
    outcome: str = "ok"
    x: int = -1
    y: int = -1
    split: int = 0
    direction: int = 0
    elapsed: float | None = None
    reply: tuple[int, ...] | None = None


@dataclass
class GameRecord:
    """A finished game: the true state and everything the results and replays need."""

    setting: GameSetting
    seed: int
    teams: list[int]
    initial_map: list[list[int]]
    state: GameState
    events: list[Event]
    stats: list[SeatStats]
    time_limit: float
    duration: float
    stalled: bool
    overhead: list[float] = field(default_factory=list)
    """Seconds from a reply's arrival to the next request sent: the server's own work."""


class SeatLink(Protocol):
    """One seat as the referee talks to it: a connection (``arena.connections``) or an
    in-process session (``arena.local``)."""

    stats: SeatStats

    def request(
        self, message: InitialMap | Turn, kind: ReplyKind
    ) -> asyncio.Future[Reply | None]: ...

    def cancel_request(self) -> None: ...


class Seats(Protocol):
    """The four seats of a game: ``connection(seat)`` is None while a seat is empty."""

    @property
    def stats(self) -> Mapping[int, SeatStats]: ...

    def connection(self, seat: int) -> SeatLink | None: ...

    async def end_game(self, id_package: int) -> None: ...


class GameListener(Protocol):
    """Watches a game (the viewer): called in the referee's task, so it must not block."""

    def game_started(
        self, state: GameState, seed: int, teams: Sequence[int], time_limit: float
    ) -> None: ...

    def turn_played(self, event: Event, state: GameState) -> None:
        """``event`` has just been applied to ``state`` (placements included)."""

    def game_over(self, record: GameRecord) -> None: ...


def _board(rows: list[list[int]]) -> Board:
    return tuple(tuple(row) for row in rows)


class Referee:
    def __init__(
        self,
        seats: Seats,
        setting: GameSetting,
        seed: int,
        time_limit: float,
        teams: list[int],
        stall_rounds: int = 3,
        listener: GameListener | None = None,
        reveal: Collection[int] = (),
    ) -> None:
        """``reveal``: seats sent every count in game 3 (a diagnostic of in-process games,
        ``bench strength --reveal``; the course's server shows a seat only its own)."""
        self.seats = seats
        self.reveal = frozenset(reveal)
        self.setting = setting
        self.seed = seed
        self.time_limit = time_limit
        self.teams = teams
        self.stall_rounds = stall_rounds
        self.listener = listener
        self.state = GameState(setting, random_geometry(setting, seed))
        self.rng = random.Random(f"arena-placement-{seed}")
        self.ids = itertools.count(1)
        self.events: list[Event] = []
        self.overhead: list[float] = []
        self._last_reply: float | None = None

    async def _ask(
        self, conn: SeatLink, message: InitialMap | Turn, kind: ReplyKind
    ) -> tuple[Reply | None, str]:
        """Send the request and wait for its reply: (reply, 'ok'|'late'|'disconnect')."""
        sent = time.monotonic()
        if self._last_reply is not None:
            self.overhead.append(sent - self._last_reply)
            self._last_reply = None
        future = conn.request(message, kind)
        try:
            reply = await asyncio.wait_for(asyncio.shield(future), self.time_limit)
        except TimeoutError:
            conn.cancel_request()
            return None, "late"
        if reply is None:
            return None, "disconnect"
        self._last_reply = reply.received
        if reply.received - sent > self.time_limit:
            return None, "late"
        conn.stats.move_times.append(reply.received - sent)
        return reply, "ok"

    def _count(self, seat: int, outcome: str, what: str, detail: str = "") -> None:
        stats = self.seats.stats[seat]
        team = self.teams[seat - 1]
        if outcome == "late":
            stats.late += 1
            logger.warning(
                "seat %s (team %s): %s late (limit %.3g s)%s",
                seat,
                team,
                what,
                self.time_limit,
                detail,
            )
        elif outcome == "illegal":
            stats.illegal += 1
            logger.warning("seat %s (team %s): illegal %s: %s", seat, team, what, detail)
        elif outcome == "absent":
            stats.absent += 1
            logger.info("seat %s (team %s): not connected, %s lost", seat, team, what)
        elif outcome == "disconnect":
            logger.warning("seat %s (team %s): disconnected during its %s", seat, team, what)

    async def _placement(self) -> None:
        state, n = self.state, self.setting.size
        seat = state.to_move
        conn = self.seats.connection(seat)
        event = Event(seat, "place", "absent")
        cell: int | None = None
        detail = ""
        if conn is not None:
            message = InitialMap.model_construct(
                code=1,
                id_package=next(self.ids),
                player_id=seat,
                map=_board(state.wire_map()),
            )
            sent = time.monotonic()
            reply, event.outcome = await self._ask(conn, message, "position")
            if reply is not None:
                event.elapsed = reply.received - sent
                msg = reply.message
                if isinstance(msg, PositionReply):
                    event.reply = (msg.x, msg.y)
                    candidate = msg.x * n + msg.y
                    if candidate in state.initial_positions():
                        cell = candidate
                    else:
                        event.outcome = "illegal"
                        detail = f"({msg.x}, {msg.y}) is not a free border cell"
                else:
                    event.outcome = "illegal"
                    event.reply = tuple(getattr(msg, "values", ()))
                    detail = str(getattr(msg, "error", "not a position reply"))
        if cell is None:
            if event.outcome == "ok":
                event.outcome = "illegal"
            cell = self.rng.choice(state.initial_positions())
            self._count(
                seat,
                event.outcome,
                "initial position",
                detail if event.outcome == "illegal" else "; a random border cell is used",
            )
        event.x, event.y = state.geometry.xy(cell)
        state.place(cell)
        self.events.append(event)

    async def _turn(self) -> bool:
        """Play the turn of the seat to move; True if a move was applied."""
        state, n = self.state, self.setting.size
        seat = state.to_move
        if not state.has_moves(seat):
            state.apply_pass()
            self.events.append(Event(seat, "pass"))
            return False
        conn = self.seats.connection(seat)
        event = Event(seat, "skip", "absent")
        self.events.append(event)
        if conn is None:
            self._count(seat, "absent", "turn")
            state.skip_turn()
            return False
        message = Turn.model_construct(
            code=1,
            id_package=next(self.ids),
            map=_board(state.wire_map()),
            sheep=_board(state.wire_sheep(None if seat in self.reveal else seat)),
        )
        sent = time.monotonic()
        reply, event.outcome = await self._ask(conn, message, "move")
        detail = ""
        if reply is not None:
            event.elapsed = reply.received - sent
            msg = reply.message
            if isinstance(msg, MoveReply):
                event.reply = (msg.x, msg.y, msg.split, msg.direction)
                move = Move(msg.x * n + msg.y, msg.split, msg.direction)
                try:
                    state.apply(move)
                except IllegalMoveError as exc:
                    event.outcome = "illegal"
                    detail = f"{event.reply}: {exc}"
                else:
                    event.kind = "move"
                    event.x, event.y, event.split, event.direction = event.reply
                    return True
            else:
                event.outcome = "illegal"
                if isinstance(msg, InvalidReply):
                    event.reply = msg.values
                    detail = str(msg.error)
                else:
                    detail = "a position reply to a turn"
        self._count(seat, event.outcome, "move", detail)
        state.skip_turn()
        return False

    async def play(self) -> GameRecord:
        started = time.monotonic()
        initial = initial_map(self.state.geometry)
        listener = self.listener
        if listener is not None:
            listener.game_started(self.state, self.seed, self.teams, self.time_limit)
        for _ in PLAYERS:
            await self._placement()
            if listener is not None:
                listener.turn_played(self.events[-1], self.state)
        idle = 0
        stalled = False
        state = self.state
        while not state.is_terminal():
            if idle >= 4 * self.stall_rounds:
                stalled = True
                logger.warning(
                    "no seat has moved for %s rounds; the game ends here", self.stall_rounds
                )
                break
            idle = 0 if await self._turn() else idle + 1
            if listener is not None:
                listener.turn_played(self.events[-1], self.state)
        await self.seats.end_game(next(self.ids))
        record = GameRecord(
            setting=self.setting,
            seed=self.seed,
            teams=list(self.teams),
            initial_map=initial,
            state=state,
            events=self.events,
            stats=[self.seats.stats[seat] for seat in PLAYERS],
            time_limit=self.time_limit,
            duration=time.monotonic() - started,
            stalled=stalled,
            overhead=self.overhead,
        )
        if listener is not None:
            listener.game_over(record)
        return record
