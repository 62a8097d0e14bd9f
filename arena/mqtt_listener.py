"""The arena's MQTT way in (``mqtt://[user:password@]host:port/<match>``).

The arena is a client of the broker. It subscribes to
``battlesheep/<match>/+/to_server`` and answers on ``.../<team>/to_player``,
QoS 1. Every broker client reads every payload, so with a token the token
never travels: a ``hello`` on a team's topic (that team id, a session id and
a nonce) gets a sealed ``challenge``, and a right ``proof`` seats the session
in the ``Lobby`` (``protocol.mqtt_auth``); from then on a payload counts for
the seat only if its MAC verifies under that session's key with a new
``seq``. A forged, replayed or malformed payload costs nobody anything: it is
logged, counted in ``MqttListener.forged`` and discarded, and a sniffed
session id is worth nothing. Without a token (open mode) a ``hello`` with a
session id seats it at once and payloads carrying that session count for the
seat, so anyone on the broker can play, or unseat a player with a ``bye``;
there a malformed payload of the seated session unseats it. A ``bye`` of the
seated session (the player's own, or its will, which the broker publishes
when it vanishes) unseats it; a session unseated during the game is told so
with a ``refused`` (sealed, with a token), and so is a refused hello.
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
from arena.connections import MAX_UNASKED, Flood, SeatConnection, SeatStats
from arena.lobby import Lobby
from protocol import (
    GameOver,
    MoveReply,
    PositionReply,
    ProtocolError,
    ServerMessage,
    WireMessage,
)
from protocol.endpoints import Endpoint, team_of_topic, to_player_topic, to_server_wildcard
from protocol.mqtt_auth import WILL_SEQ, Challenges, MacChannel, Pending
from protocol.msgpack_codec import (
    MAX_PAYLOAD,
    MAX_TEXT,
    Bye,
    Challenge,
    Envelope,
    Hello,
    Proof,
    Refused,
    decode_envelope,
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
        auth: Pending | None = None,
    ) -> None:
        super().__init__(seat, team, stats, f"mqtt session {session[:12]}", size)
        self.session = session
        self.auth = auth
        """The handshake that seated this session (with a token): its keys."""
        self._listener = listener
        self._last: ServerMessage | None = None

    @property
    def channel(self) -> MacChannel | None:
        return None if self.auth is None else self.auth.channel

    def _transmit(self, message: ServerMessage) -> None:
        self._last = message
        self._listener.publish(self.team, encode_payload(message, self.size, seal=self.channel))

    def resend_pending(self) -> None:
        """The same session said hello again (it reconnected): the request it may have missed."""
        if self._pending is not None and self._last is not None:
            self._transmit(self._last)

    def _lost(self, reason: str) -> None:
        if not (self.closed or self.closed_by_server or self.game_over):
            # Still there, it must not believe it plays on (its seat may go to another).
            self._listener.tell(self.team, self.session, Refused(reason=reason[:MAX_TEXT]), self)
        super()._lost(reason)

    def _close_transport(self) -> None:
        # The broker connection is the arena's, shared by all seats: nothing to close.
        return None


class MqttListener:
    def __init__(self, endpoint: Endpoint, token: str | None) -> None:
        self.endpoint = endpoint
        self.url = endpoint.url
        self.token = token
        self.match = endpoint.match
        self.forged = 0
        """Payloads refused as forged, replayed or malformed: counted against nobody."""
        self._challenges = None if token is None else Challenges(token)
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

    def tell(
        self, team: int, session: str, message: WireMessage, auth: MqttConnection | Pending | None
    ) -> None:
        """A frame for one session on its team's topic, sealed under its key if it has one."""
        channel = auth.channel if auth is not None else None
        size = self._lobby.size if self._lobby is not None else 12
        self.publish(team, encode_payload(message, size, session, seal=channel))

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

    def _refuse(self, what: str, topic: str, why: str, session: str | None) -> None:
        """A payload that counts for nobody: logged, counted, discarded."""
        self.forged += 1
        logger.warning(
            "mqtt: %s on %s from session %s: %s; discarded",
            what,
            topic,
            (session or "none")[:12],
            why,
        )

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
            frame = decode_envelope(payload, lobby.size)
        except ProtocolError as exc:
            sender = _peek_session(payload)
            if (
                self.token is None
                and conn is not None
                and not conn.closed
                and sender == conn.session
            ):
                conn.drop(f"sent a malformed payload ({exc}); unseated")
            else:  # with a token, the session id alone proves nothing
                self._refuse("malformed payload", topic, str(exc), sender)
            return
        message, session = frame.message, frame.session
        if isinstance(message, Hello):
            self._hello(team, message, topic)
            return
        if isinstance(message, Proof):
            self._proof(team, message, session, topic)
            return
        what = type(message).__name__
        if conn is None or conn.closed or session != conn.session:
            if isinstance(message, Bye) and conn is not None and session == conn.session:
                return  # its bye after the game, or a second one
            self._refuse(f"a {what}", topic, "not the seated one", session)
            return
        why = self._forged(conn, frame)
        if why:
            self._refuse(f"a {what}", topic, why, session)
            return
        if isinstance(message, Bye):
            conn.disconnected("left (bye)")  # after the game, when it is closed already: no-op
            return
        assert isinstance(message, PositionReply | MoveReply)
        try:
            conn.deliver(message)
        except Flood:
            conn.drop(f"sent more than {MAX_UNASKED} replies nobody asked for; unseated")

    def _forged(self, conn: MqttConnection, frame: Envelope) -> str:
        """Why a frame of the seated session is not genuine and new ('' if it is)."""
        if conn.auth is None or self._challenges is None:
            return ""
        if isinstance(frame.message, Bye) and frame.seq == WILL_SEQ:
            will = self._challenges.will_of(conn.team, conn.session, conn.auth.client_nonce)
            return will.check(frame.signed, frame.seq, frame.mac, will=True)
        return conn.auth.channel.check(frame.signed, frame.seq, frame.mac)

    def _hello(self, team: int, hello: Hello, topic: str) -> None:
        if hello.team_id != team:
            logger.warning(
                "mqtt: hello of team %s on %s, the topic of team %s; ignored",
                hello.team_id,
                topic,
                team,
            )
            return
        session = hello.session
        if session is None:
            logger.warning("mqtt: hello of team %s without a session id; ignored", team)
            return
        if self._challenges is None:
            self._seat(team, session, None)
            return
        if hello.token is not None:
            self._refuse("hello", topic, "it carries a token, which MQTT never sends", session)
            return
        if hello.nonce is None:
            self._refuse("hello", topic, "no nonce: this arena wants the token proved", session)
            return
        pending = self._challenges.issue(team, session, hello.nonce)
        logger.debug("mqtt: hello of team %s (session %s): challenged", team, session[:12])
        self.tell(team, session, Challenge(nonce=pending.server_nonce), pending)

    def _proof(self, team: int, proof: Proof, session: str | None, topic: str) -> None:
        if self._challenges is None or session is None:
            self._refuse("proof", topic, "no challenge was sent", session)
            return
        answered = self._challenges.answer(team, session, proof.nonce, proof.proof)
        if isinstance(answered, str):
            if answered == "a wrong token":
                logger.warning("mqtt: hello of team %s with a wrong token; ignored", team)
            self._refuse("proof", topic, answered, session)
            return
        self._seat(team, session, answered)

    def _seat(self, team: int, session: str, auth: Pending | None) -> None:
        lobby = self._lobby
        assert lobby is not None
        conn = self._conns.get(team)
        if conn is not None and not conn.closed and conn.session == session:
            logger.info("mqtt: team %s (session %s) said hello again", team, session[:12])
            if auth is not None:
                conn.auth = auth  # its new connection's keys
            conn.resend_pending()
            return
        made: MqttConnection | None = None

        def make(seat: int, stats: SeatStats) -> SeatConnection:
            nonlocal made
            made = MqttConnection(seat, team, session, self, stats, lobby.size, auth)
            return made

        refusal = lobby.claim(team, f"mqtt session {session[:12]}", make)
        if refusal is not None:
            logger.warning("mqtt: hello of team %s refused: %s", team, refusal.reason)
            lobby.rejected += 1
            # An unknown team has no game here: game over; anyone else may try again later.
            told: WireMessage = Refused(reason=refusal.reason[:MAX_TEXT])
            if refusal.tells_game_over:
                told = GameOver(id_package=0)
            self.tell(team, session, told, auth)
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
