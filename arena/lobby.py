"""The four seats of the current game and the listeners that fill them.

Every transport's listener hands each connection that says who it is to
``Lobby.claim``: the lobby seats it by team id, or says why not (a
``Refusal``); the transport closes a refused connection its own way. The
course's TCP socket is the lobby's own listener (``arena.tcp_listener``);
WebSocket and MQTT come in through ``listeners`` (``arena.listeners``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from arena.connections import Refusal, RefusalKind, SeatConnection, SeatStats
from arena.tcp_listener import TcpListener
from protocol import GameOver
from state.settings import PLAYERS

logger = logging.getLogger(__name__)


class Listener(Protocol):
    """A way in: the course's TCP socket, WebSocket or MQTT (``arena.listeners``)."""

    url: str

    async def start(self, lobby: Lobby) -> str:
        """Start accepting players for ``lobby``; returns where (for the log)."""
        ...

    async def close(self) -> None: ...


MakeConnection = Callable[[int, SeatStats], SeatConnection]
"""Builds a transport's connection once the lobby knows its seat and stats."""


class Lobby:
    """The listeners and the four seats of the current game.

    With ``teams`` the seats are fixed: seat k belongs to the k-th team id. With
    ``teams=None`` (open mode) the first four distinct team ids that connect
    take the seats in ascending order of team id; until then their connections
    wait, and the seats stay with those teams for later games.
    """

    def __init__(
        self,
        teams: Sequence[int] | None,
        size: int,
        host: str = "127.0.0.1",
        port: int = 0,
        handshake_timeout: float = 2.0,
        listeners: Sequence[Listener] = (),
        tcp: bool = True,
    ) -> None:
        if teams is not None and (len(teams) != 4 or len(set(teams)) != 4):
            raise ValueError(f"four distinct team ids are needed, not {list(teams)}")
        self.teams = list(teams) if teams is not None else []
        self.size = size
        self.host = host
        self.port = port
        self.handshake_timeout = handshake_timeout
        self.listeners = list(listeners)
        self.tcp = tcp
        self._tcp = TcpListener(host, port) if tcp else None
        self.seat_of = dict(zip(self.teams, PLAYERS, strict=False))
        self.connections: dict[int, SeatConnection | None] = dict.fromkeys(PLAYERS)
        self.stats: dict[int, SeatStats] = {seat: SeatStats() for seat in PLAYERS}
        self.accepting = False
        self.rejected = 0
        self._seated = asyncio.Event()
        self._waiting: dict[int, SeatConnection] = {}
        self._teams_known = asyncio.Event()
        if self.teams:
            self._teams_known.set()

    async def start(self) -> int:
        """Listen; returns the TCP port (the real one when asked for port 0; 0 without TCP)."""
        self.port = 0
        if self._tcp is not None:
            logger.info("listening on %s", await self._tcp.start(self))
            self.port = self._tcp.port
        for listener in self.listeners:
            where = await listener.start(self)
            logger.info("listening on %s", where)
        return self.port

    def addresses(self) -> list[str]:
        """Where players can come in, as actually bound (after ``start``)."""
        tcp = self._tcp.urls if self._tcp is not None else []
        return [*tcp, *(listener.url for listener in self.listeners)]

    def new_game(self) -> None:
        self.stats = {seat: SeatStats() for seat in PLAYERS}
        self._seated.clear()
        self.accepting = True

    def connection(self, seat: int) -> SeatConnection | None:
        conn = self.connections[seat]
        return None if conn is None or conn.closed else conn

    def all_seated(self) -> bool:
        return all(self.connection(seat) is not None for seat in PLAYERS)

    async def wait_teams(self) -> list[int]:
        """Open mode: until four distinct teams have connected; the teams by seat."""
        await self._teams_known.wait()
        return list(self.teams)

    async def wait_seated(self, timeout: float) -> bool:
        """Wait until all four seats are connected, at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.all_seated():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._seated.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seated.wait(), remaining)
        return True

    def claim(self, team: int, peer: object, make: MakeConnection) -> Refusal | None:
        """Seat a connection that says it is ``team``: None if seated (or waiting for the
        other teams in open mode), else why it is refused (the caller closes it)."""
        if not self.accepting:
            return Refusal(RefusalKind.NO_GAME, "no game is open")
        seat = self.seat_of.get(team)
        if seat is None:
            if self._teams_known.is_set():
                return Refusal(RefusalKind.UNKNOWN_TEAM, f"unknown team id {team}")
            return self._wait_for_teams(team, peer, make)
        if self.connection(seat) is not None:
            why = f"claims seat {seat} (team {team}), whose player is connected"
            return Refusal(RefusalKind.SEAT_TAKEN, why)
        stats = self.stats[seat]
        stats.connects += 1
        conn = make(seat, stats)
        self.connections[seat] = conn
        conn.start()
        logger.info(
            "seat %s: team %s connected over %s from %s%s",
            seat,
            team,
            conn.transport,
            peer,
            " (reconnect)" if stats.connects > 1 else "",
        )
        if self.all_seated():
            self._seated.set()
        return None

    def _wait_for_teams(self, team: int, peer: object, make: MakeConnection) -> Refusal | None:
        waiting = self._waiting.get(team)
        if waiting is not None and not waiting.closed:
            why = f"team {team} is already connected and waiting for the others"
            return Refusal(RefusalKind.TEAM_WAITING, why)
        conn = make(0, SeatStats())
        # A team whose connection closed while waiting is no longer in: only live ones count.
        self._waiting = {t: c for t, c in self._waiting.items() if not c.closed}
        self._waiting[team] = conn
        conn.start()
        logger.info("team %s connected over %s from %s; waiting", team, conn.transport, peer)
        if len(self._waiting) == len(PLAYERS):
            self._fix_teams()
        return None

    def _fix_teams(self) -> None:
        """Open mode: four teams are in; seat them by ascending team id."""
        self.teams = sorted(self._waiting)
        self.seat_of = {team: seat for seat, team in zip(PLAYERS, self.teams, strict=True)}
        for team, seat in self.seat_of.items():
            conn = self._waiting[team]
            conn.seat = seat
            conn.stats = self.stats[seat]
            conn.stats.connects += 1
            self.connections[seat] = conn
            logger.info("seat %s: team %s (%s)", seat, team, conn.transport)
        self._waiting.clear()
        self._teams_known.set()
        if self.all_seated():
            self._seated.set()

    async def end_game(self, id_package: int) -> None:
        """Game over header to every connected seat; no new players until ``new_game``."""
        self.accepting = False
        for seat in PLAYERS:
            conn = self.connection(seat)
            if conn is not None:
                conn.send(GameOver(id_package=id_package))
                conn.game_over = True

    async def drop_all(self) -> None:
        conns = [c for c in self.connections.values() if c is not None]
        conns += list(self._waiting.values())
        self._waiting.clear()
        self.connections = dict.fromkeys(PLAYERS)
        await asyncio.gather(*(c.close() for c in conns))

    async def close(self) -> None:
        """Stop accepting, close every seat and waiting connection, then every listener."""
        self.accepting = False
        await self.drop_all()
        listeners: list[Listener] = [self._tcp] if self._tcp is not None else []
        for listener in [*listeners, *self.listeners]:
            with contextlib.suppress(Exception):
                await listener.close()
