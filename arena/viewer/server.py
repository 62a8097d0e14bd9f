"""Serves the viewer page over HTTP and its event stream over a WebSocket, on one port.

``GET /`` (and ``/viewer.css``, ``/viewer.js``) returns the static page;
``/ws`` is the event stream (``arena.viewer.stream``): a client that connects
late first gets every message of the current game, then the new ones as they
happen. ``/upload`` takes one binary message, a replay file (the page's drag
and drop), and answers with that game's whole stream or an ``error`` message.
Uploads are refused to other sites' pages (a browser's ``Origin`` must be the
viewer's own), capped in size, and parsed in a worker thread, one at a time,
so that a game the server referees meanwhile is not held up.

The server is a ``GameListener``: give it to the referee (``ServerConfig.listener``)
and it follows every game; or give it a replay's messages and it shows that game.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import ipaddress
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
MAX_REPLAY_BYTES = 2**20
"""An upload's limit: a recorded game takes a few kilobytes."""
UPLOAD_IDLE = 30.0
"""Seconds an upload connection may take to send its file."""
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
        self._parsing = asyncio.Lock()
        """One upload is parsed at a time."""

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
        if path == "/upload" and not self._own_origin(request):
            origin = request.headers.get("Origin")
            logger.warning("viewer: upload from the page of %s refused", origin)
            why = f"uploads are taken from the viewer's own page only, not from {origin}\n"
            return connection.respond(http.HTTPStatus.FORBIDDEN, why)
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

    def _own_origin(self, request: Request) -> bool:
        """A browser says which page opened the socket (``Origin``): it must be one of this
        viewer's own, reached by an address (a name other than localhost could be another
        site's, rebound to this machine). Clients that are no browser send none."""
        origin = request.headers.get("Origin")
        if origin is None:
            return True
        host = request.headers.get("Host", "")
        if origin != f"http://{host}":
            return False
        name = urllib.parse.urlsplit(origin).hostname or ""
        if name in ("localhost", self.host):
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

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
        query = connection.request.path.partition("?")[2] if connection.request else ""
        fields = urllib.parse.parse_qs(query)
        name = fields.get("name", ["the dropped file"])[0]
        size = fields.get("size", ["0"])[0]
        try:
            if size.isdigit() and int(size) > MAX_REPLAY_BYTES:
                raise ReplayError(_too_big(name))
            messages = await self._read_upload(connection, name)
        except ReplayError as exc:
            messages = [{"type": "error", "message": str(exc)}]
        except ConnectionClosed as exc:
            if exc.sent is not None and exc.sent.code == 1009:
                logger.warning("viewer: upload of %s refused: %s", name, _too_big(name))
            return
        for message in messages:
            await connection.send(json.dumps(message))
        await connection.close()

    async def _read_upload(self, connection: ServerConnection, name: str) -> list[Message]:
        """The upload's stream, parsed off the event loop; ReplayError if it has none."""
        try:
            data = await asyncio.wait_for(connection.recv(), UPLOAD_IDLE)
        except TimeoutError:
            logger.warning(
                "viewer: upload of %s sent nothing within %g s; closed", name, UPLOAD_IDLE
            )
            raise ReplayError(f"{name}: nothing came within {UPLOAD_IDLE:g} s") from None
        if isinstance(data, str):
            raise ReplayError(f"{name}: expected the file's bytes")
        async with self._parsing:
            return await asyncio.to_thread(upload_messages, data, name)


def upload_messages(data: bytes, name: str) -> list[Message]:
    """A replay file's bytes as the viewer's stream (in a worker thread); ReplayError if not."""
    return replay_messages(parse_replay(data, name), name)


def _too_big(name: str) -> str:
    return f"{name} is larger than the {MAX_REPLAY_BYTES // 1024} KiB a replay file can be"
