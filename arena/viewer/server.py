"""Serves the viewer page over HTTP and its event stream over a WebSocket, on one port.

``GET /`` (and ``/viewer.css``, ``/viewer.js``) returns the static page;
``/ws`` is the event stream (``arena.viewer.stream``): a client that connects
late first gets every message of the current game, then the new ones as they
happen. ``/upload`` takes one binary message, a replay file (the page's drag
and drop), and answers with that game's whole stream or an ``error`` message.

The server is a ``GameListener``: give it to the referee (``ServerConfig.listener``)
and it follows every game; or give it a replay's messages and it shows that game.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import json
import logging
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from arena.referee import Event, GameRecord
from arena.replay import ReplayError, ReplayEvent, parse_replay
from arena.viewer.stream import (
    Message,
    TurnDiffer,
    live_end_message,
    replay_messages,
    start_message,
)
from state.game import GameState

logger = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/viewer.css": ("viewer.css", "text/css; charset=utf-8"),
    "/viewer.js": ("viewer.js", "text/javascript; charset=utf-8"),
}
MAX_REPLAY_BYTES = 8 * 2**20
MAX_BACKLOG = 20_000
"""Messages queued for one client before it is dropped as too slow."""


def parse_hostport(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as given to ``--http``."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http wants HOST:PORT such as 127.0.0.1:8080, not {text!r}")
    return host, int(port)


class ViewerServer:
    """The page and its stream; a listener of live games, or the player of one replay."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, messages: Sequence[Message] = ()
    ) -> None:
        self.host = host
        self.requested_port = port
        self._history: list[str] = [json.dumps(m) for m in messages]
        self._clients: set[asyncio.Queue[str | None]] = set()
        self._differ: TurnDiffer | None = None
        self._server: Server | None = None

    # ------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            self.host,
            self.requested_port,
            process_request=self._http,
            max_size=MAX_REPLAY_BYTES,
            # Under "arena." so the CLI's quiet mode (warnings only) covers it too.
            logger=logging.getLogger("arena.viewer.ws"),
        )

    async def close(self) -> None:
        for queue in list(self._clients):
            queue.put_nowait(None)
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the viewer is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    # --------------------------------------------------------- GameListener
    def game_started(
        self, state: GameState, seed: int, teams: Sequence[int], time_limit: float
    ) -> None:
        self._history.clear()
        self._differ = TurnDiffer(state)
        self._publish(start_message(state, seed, teams, time_limit))

    def turn_played(self, event: Event, state: GameState) -> None:
        if self._differ is not None:
            self._publish(self._differ.turn(ReplayEvent.of(event), state))

    def game_over(self, record: GameRecord) -> None:
        self._differ = None
        self._publish(live_end_message(record))

    def _publish(self, message: Message) -> None:
        text = json.dumps(message)
        self._history.append(text)
        for queue in list(self._clients):
            if queue.qsize() > MAX_BACKLOG:
                logger.warning("viewer client too slow; dropped")
                self._clients.discard(queue)
                queue.put_nowait(None)
            else:
                queue.put_nowait(text)

    # ------------------------------------------------------------------ HTTP
    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path in ("/ws", "/upload"):
            return None
        entry = FILES.get(path)
        if entry is None:
            return connection.respond(http.HTTPStatus.NOT_FOUND, f"no such page: {path}\n")
        name, content_type = entry
        body = (STATIC / name).read_bytes()
        headers = Headers(
            [
                ("Content-Type", content_type),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-cache"),
                ("Connection", "close"),
            ]
        )
        return Response(200, "OK", headers, body)

    # ------------------------------------------------------------- WebSocket
    async def _handle(self, connection: ServerConnection) -> None:
        path = connection.request.path.split("?", 1)[0] if connection.request else "/ws"
        try:
            if path == "/upload":
                await self._upload(connection)
            else:
                await self._stream(connection)
        except ConnectionClosed:
            pass

    async def _stream(self, connection: ServerConnection) -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        # The history and the registration happen without a pause in between,
        # so the client sees every message exactly once and in order.
        for text in self._history:
            queue.put_nowait(text)
        self._clients.add(queue)
        try:
            while (message := await queue.get()) is not None:
                await connection.send(message)
        finally:
            self._clients.discard(queue)

    async def _upload(self, connection: ServerConnection) -> None:
        data = await asyncio.wait_for(connection.recv(), 30.0)
        query = connection.request.path.partition("?")[2] if connection.request else ""
        name = urllib.parse.parse_qs(query).get("name", ["the dropped file"])[0]
        try:
            if isinstance(data, str):
                raise ReplayError(f"{name}: expected the file's bytes")
            messages = replay_messages(parse_replay(data, name), name)
        except ReplayError as exc:
            messages = [{"type": "error", "message": str(exc)}]
        for message in messages:
            await connection.send(json.dumps(message))
        await connection.close()
