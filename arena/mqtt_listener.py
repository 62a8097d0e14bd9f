"""The arena's MQTT way in (``mqtt://[user:password@]host:port/<match>``).

The arena is a client of the broker. It subscribes to
``battlesheep/<match>/+/to_server`` and answers on ``.../<team>/to_player``,
QoS 1. A ``hello`` on a team's topic, with that team id, the token and a
session id, seats the session in the ``Lobby``; afterwards only payloads
carrying that session count for the seat (anyone on the broker can publish on
any topic, so a payload from another session is logged and discarded and
cannot cost the seat anything). A malformed payload of the seated session
unseats it; oversized and unattributable payloads are discarded. A ``bye`` of
the seated session (the player's own, or its will, which the broker publishes
when it vanishes) unseats it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid

import aiomqtt
import msgpack

from arena.background import BackgroundTasks
from arena.connections import MAX_UNASKED, Flood, SeatConnection, SeatStats, token_ok
from arena.lobby import Lobby
from protocol import GameOver, MoveReply, PositionReply, ProtocolError, ServerMessage
from protocol.endpoints import Endpoint, team_of_topic, to_player_topic, to_server_wildcard
from protocol.msgpack_codec import (
    MAX_PAYLOAD,
    MAX_TEXT,
    Bye,
    Hello,
    decode_payload,
    encode_payload,
)

logger = logging.getLogger(__name__)

QOS = 1


class MqttConnection(SeatConnection):
    transport = "mqtt"

    def __init__(
        self,
        seat: int,
        team: int,
        session: str,
        listener: MqttListener,
        stats: SeatStats,
        size: int,
    ) -> None:
        super().__init__(seat, team, stats, f"mqtt session {session[:12]}", size)
        self.session = session
        self._listener = listener
        self._last: ServerMessage | None = None

    def _transmit(self, message: ServerMessage) -> None:
        self._last = message
        self._listener.publish(self.team, encode_payload(message, self.size))

    def resend_pending(self) -> None:
        """The same session said hello again (it reconnected): the request it may have missed."""
        if self._pending is not None and self._last is not None:
            self._transmit(self._last)

    def _close_transport(self) -> None:
        # The broker connection is the arena's, shared by all seats: nothing to close.
        return None


class MqttListener:
    def __init__(self, endpoint: Endpoint, token: str | None) -> None:
        self.endpoint = endpoint
        self.url = endpoint.url
        self.token = token
        self.match = endpoint.match
        self._lobby: Lobby | None = None
        self._broker = contextlib.AsyncExitStack()
        """Holds the broker connection from ``start`` to ``close``."""
        self._tasks = BackgroundTasks()
        self._outgoing: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        self._conns: dict[int, MqttConnection] = {}

    async def start(self, lobby: Lobby) -> str:
        self._lobby = lobby
        client = aiomqtt.Client(
            self.endpoint.host,
            self.endpoint.port,
            username=self.endpoint.username,
            password=self.endpoint.password,
            identifier=f"battlesheep-arena-{self.match}-{uuid.uuid4().hex[:8]}",
            timeout=10.0,
            # Frames are small and each waits for an answer: no Nagle delay.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        try:
            await self._broker.enter_async_context(client)
        except aiomqtt.MqttError as exc:
            raise OSError(f"cannot reach the MQTT broker at {self.url}: {exc}") from None
        await client.subscribe(to_server_wildcard(self.match), qos=QOS)
        self._tasks.spawn(self._receive_loop(client), "arena-mqtt-receiver")
        self._tasks.spawn(self._send_loop(client), "arena-mqtt-sender")
        return f"{self.url} (topics {to_server_wildcard(self.match)} and .../to_player)"

    def publish(self, team: int, payload: bytes) -> None:
        self._outgoing.put_nowait((to_player_topic(self.match, team), payload))

    async def _send_loop(self, client: aiomqtt.Client) -> None:
        while True:
            topic, payload = await self._outgoing.get()
            try:
                await client.publish(topic, payload, qos=QOS, timeout=10.0)
            except aiomqtt.MqttError as exc:
                logger.error("mqtt: publishing on %s failed: %s", topic, exc)
            finally:
                self._outgoing.task_done()

    async def _receive_loop(self, client: aiomqtt.Client) -> None:
        try:
            async for incoming in client.messages:
                payload = incoming.payload
                if not isinstance(payload, bytes | bytearray):
                    continue
                try:
                    self._on_payload(str(incoming.topic), bytes(payload))
                except Exception:  # one bad payload must not stop the arena's only reader
                    logger.exception("mqtt: payload on %s could not be handled", incoming.topic)
        except aiomqtt.MqttError as exc:
            logger.error(
                "mqtt: lost the broker at %s: %s; its seats lose their turns", self.url, exc
            )
            for conn in self._conns.values():
                conn.disconnected("the arena lost the broker")

    def _on_payload(self, topic: str, payload: bytes) -> None:
        lobby = self._lobby
        assert lobby is not None
        team = team_of_topic(topic, self.match)
        if team is None:
            logger.debug("mqtt: ignored topic %s", topic)
            return
        if len(payload) > MAX_PAYLOAD:
            logger.warning(
                "mqtt: a %s-byte payload on %s is over %s bytes; discarded",
                len(payload),
                topic,
                MAX_PAYLOAD,
            )
            return
        conn = self._conns.get(team)
        try:
            message, session = decode_payload(payload, lobby.size)
        except ProtocolError as exc:
            sender = _peek_session(payload)
            if conn is not None and not conn.closed and sender == conn.session:
                conn.drop(f"sent a malformed payload ({exc}); unseated")
            else:
                logger.warning("mqtt: malformed payload on %s (%s); discarded", topic, exc)
            return
        if isinstance(message, Hello):
            self._hello(team, message, topic)
            return
        if isinstance(message, Bye) and conn is not None and session == conn.session:
            conn.disconnected("left (bye)")  # after the game, when it is closed already: no-op
            return
        if conn is None or conn.closed or session != conn.session:
            logger.warning(
                "mqtt: a %s on %s from session %s, not the seated one; discarded",
                type(message).__name__,
                topic,
                (session or "none")[:12],
            )
            return
        if isinstance(message, Bye):
            return
        assert isinstance(message, PositionReply | MoveReply)
        try:
            conn.deliver(message)
        except Flood:
            conn.drop(f"sent more than {MAX_UNASKED} replies nobody asked for; unseated")

    def _hello(self, team: int, hello: Hello, topic: str) -> None:
        lobby = self._lobby
        assert lobby is not None
        if hello.team_id != team:
            logger.warning(
                "mqtt: hello of team %s on %s, the topic of team %s; ignored",
                hello.team_id,
                topic,
                team,
            )
            return
        if not token_ok(self.token, hello.token):
            logger.warning(
                "mqtt: hello of team %s with %s token; ignored",
                team,
                "no" if hello.token is None else "a wrong",
            )
            return
        session = hello.session
        if session is None:
            logger.warning("mqtt: hello of team %s without a session id; ignored", team)
            return
        conn = self._conns.get(team)
        if conn is not None and not conn.closed and conn.session == session:
            logger.info("mqtt: team %s (session %s) said hello again", team, session[:12])
            conn.resend_pending()
            return
        made: MqttConnection | None = None

        def make(seat: int, stats: SeatStats) -> SeatConnection:
            nonlocal made
            made = MqttConnection(seat, team, session, self, stats, lobby.size)
            return made

        refusal = lobby.claim(team, f"mqtt session {session[:12]}", make)
        if refusal is not None:
            logger.warning("mqtt: hello of team %s refused: %s", team, refusal.reason)
            lobby.rejected += 1
            if refusal.tells_game_over:
                # Nobody else can be on an unknown team's topic: tell it to stop.
                self.publish(team, encode_payload(GameOver(id_package=0), lobby.size))
            return
        assert made is not None
        self._conns[team] = made

    async def close(self) -> None:
        # The last game-over frames are still queued when the game ends: let them go.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._outgoing.join(), 2.0)
        await self._tasks.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._broker.aclose(), 2.0)


def _peek_session(payload: bytes) -> str | None:
    """The session of a payload that failed validation, if it is a map with one."""
    try:
        data = msgpack.unpackb(payload, raw=False, max_str_len=MAX_TEXT, max_bin_len=0)
    except Exception:
        return None
    session = data.get("session") if isinstance(data, dict) else None
    return session if isinstance(session, str) else None
