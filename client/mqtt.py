"""The MQTT transport: msgpack payloads on the match's topics (``protocol.endpoints``), QoS 1.

The player connects to the broker (with the URL's credentials, if any),
subscribes to ``battlesheep/<match>/<team>/to_player``, and publishes on
``.../to_server`` a ``hello`` with its team id and a random session id that it
keeps for the whole game (reconnects included) and puts in every later
message. With a token, the token never travels (every broker client reads
every payload): the hello carries a fresh nonce per connection, the arena
answers with a ``challenge``, the player sends the ``proof``, and from then on
every frame either way is sealed under the session key (``protocol.mqtt_auth``);
a frame that does not verify, or replays an older ``seq``, is logged and
ignored, so nobody else on the broker can feed this player boards. Without a
token (open mode) frames are taken as they come. The broker publishes a
``bye`` as the player's will if it vanishes, and the player publishes one
itself when it leaves. Until the first game frame arrives the connect window
applies: an arena that refused the hello (wrong token or team) may send
nothing, so the player gives up then. A ``refused`` for this session (the
arena unseated it, or will not seat it) ends the game with the connection
error: this player did not play it to the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiomqtt

from client.errors import ConnectionFailed, ServerDataError
from client.lifecycle import (
    ConnectionLost,
    LinkOptions,
    Progress,
    answer,
    play_reconnecting,
    retry_connect,
)
from client.session import GameSession, GameSummary
from protocol import ProtocolError
from protocol.endpoints import Endpoint, parse_endpoint, to_player_topic, to_server_topic
from protocol.messages import ClientMessage, ServerMessage
from protocol.mqtt_auth import (
    TO_SERVER,
    MacChannel,
    new_nonce,
    proof_of,
    session_channel,
    will_channel,
)
from protocol.msgpack_codec import (
    MQTT_SERVER_TYPES,
    Bye,
    Challenge,
    Envelope,
    Hello,
    Proof,
    Refused,
    decode_envelope,
    encode_payload,
)

log = logging.getLogger(__name__)

QOS = 1
UNVERIFIED_ANSWERS = 4
"""Challenges per connection answered although they do not verify under this player's token
(the arena then logs the wrong token); more are only ignored."""


@dataclass(frozen=True, slots=True)
class MqttOptions(LinkOptions):
    url: str = "mqtt://127.0.0.1:1883/local"
    token: str | None = None
    keepalive: int = 10
    """Seconds; the broker publishes the will after 1.5 times this without a word."""


async def play_mqtt(
    session: GameSession, options: MqttOptions, rng: random.Random | None = None
) -> GameSummary:
    """Play one game through an MQTT broker; the summary at game over.

    Raises ``ServerDataError`` for a malformed payload (open mode) and
    ``ConnectionFailed`` when the broker cannot be reached in time, the arena
    never answers, or it refuses this player.
    """
    chosen = rng or random.Random()
    try:
        endpoint = parse_endpoint(options.url)
    except ValueError as exc:
        raise ConnectionFailed(str(exc)) from None
    if endpoint.scheme != "mqtt":
        raise ConnectionFailed(f"{options.url!r} is no mqtt:// URL")
    session_id = uuid.UUID(int=chosen.getrandbits(128)).hex
    up = to_server_topic(endpoint.match, options.team)
    down = to_player_topic(endpoint.match, options.team)

    def client(will: bytes) -> aiomqtt.Client:
        return aiomqtt.Client(
            endpoint.host,
            endpoint.port,
            username=endpoint.username,
            password=endpoint.password,
            identifier=f"battlesheep-{options.team}-{session_id[:12]}",
            will=aiomqtt.Will(up, will, qos=QOS),
            keepalive=options.keepalive,
            timeout=5.0,
            # Frames are small and each waits for an answer: no Nagle delay.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )

    answered_once = False

    async def run_connection(give_up_at: float, progress: Progress) -> None:
        nonlocal answered_once
        link = _Link(session, options, session_id, endpoint, up)
        try:
            async with contextlib.AsyncExitStack() as held:
                mqtt = await _connect(
                    held, lambda: client(link.will()), endpoint.url, give_up_at, chosen, options
                )
                link.mqtt = mqtt
                await mqtt.subscribe(down, qos=QOS)
                await link.publish(link.hello())
                wait_until = None if answered_once else give_up_at
                await _serve(session, link, progress, wait_until)
                answered_once = True
                with contextlib.suppress(aiomqtt.MqttError):
                    await link.publish(link.encode(Bye()))
        except aiomqtt.MqttError as exc:
            if session.finished:  # only leaving the broker failed: the game is played
                log.debug("mqtt: disconnecting after the game: %s", exc)
                return
            if progress.messages:
                answered_once = True
            raise ConnectionLost(f"broker connection lost: {exc}") from None

    return await play_reconnecting(session, run_connection, options)


async def _connect(
    held: contextlib.AsyncExitStack,
    client: Callable[[], aiomqtt.Client],
    where: str,
    give_up_at: float,
    rng: random.Random,
    options: MqttOptions,
) -> aiomqtt.Client:
    """A client connected to the broker, retried until ``give_up_at`` (monotonic).

    The client's own async context holds the connection, entered on ``held``:
    each attempt enters a fresh client, and the one that connects stays
    entered until ``held`` closes.
    """

    async def open_once(timeout: float) -> aiomqtt.Client:
        try:
            return await asyncio.wait_for(held.enter_async_context(client()), timeout)
        except aiomqtt.MqttError as exc:
            raise OSError(str(exc)) from None

    return await retry_connect(open_once, where, give_up_at, rng, options)


class _Link:
    """One broker connection of the game: its nonce, its session key once proved, its frames."""

    def __init__(
        self,
        session: GameSession,
        options: MqttOptions,
        session_id: str,
        endpoint: Endpoint,
        up: str,
    ) -> None:
        self.size = session.setting.size
        self.team = options.team
        self.token = options.token
        self.session_id = session_id
        self.endpoint = endpoint
        self.up = up
        self.nonce = None if options.token is None else new_nonce()
        self.channel: MacChannel | None = None
        """With a token: the session key, once a challenge verified."""
        self.unverified = 0
        self.unsealed = 0
        self.mqtt: aiomqtt.Client | None = None

    def will(self) -> bytes:
        seal = None
        if self.token is not None and self.nonce is not None:
            seal = will_channel(self.token, self.nonce, self.team, self.session_id, TO_SERVER)
        return encode_payload(Bye(), self.size, self.session_id, seal)

    def hello(self) -> bytes:
        hello = Hello(team_id=self.team, session=self.session_id, nonce=self.nonce)
        return encode_payload(hello, self.size)

    def encode(self, message: ClientMessage | Bye | Proof) -> bytes:
        return encode_payload(message, self.size, self.session_id, self.channel)

    async def publish(self, payload: bytes) -> None:
        assert self.mqtt is not None
        if log.isEnabledFor(logging.DEBUG):
            log.debug("publish %d bytes on %s: %s", len(payload), self.up, payload.hex())
        await self.mqtt.publish(self.up, payload, qos=QOS, timeout=10.0)

    async def challenged(self, frame: Envelope, challenge: Challenge) -> None:
        """Prove the token to a challenge for this session; keep its key if it verifies."""
        if self.token is None or self.nonce is None or self.channel is not None:
            return
        if frame.session != self.session_id:
            return
        sn = challenge.nonce
        channel = session_channel(self.token, sn, self.nonce, self.team, self.session_id, TO_SERVER)
        why = channel.check(frame.signed, frame.seq, frame.mac)
        if why:
            self.unverified += 1
            log.warning("a challenge that does not verify under this token (%s)", why)
            if self.unverified > UNVERIFIED_ANSWERS:
                return
        else:
            self.channel = channel
        proof = proof_of(self.token, sn, self.nonce, self.team, self.session_id)
        await self.publish(encode_payload(Proof(nonce=sn, proof=proof), self.size, self.session_id))

    def genuine(self, frame: Envelope, topic: object) -> bool:
        """Whether a frame is the arena's (always, without a token) and new."""
        if self.token is None:
            return True
        what = type(frame.message).__name__
        if self.channel is None:
            if frame.mac is None:
                self.unsealed += 1
            log.warning("an unproven %s on %s before the arena's challenge; ignored", what, topic)
            return False
        why = self.channel.check(frame.signed, frame.seq, frame.mac)
        if why:
            log.warning("a %s on %s that is not the arena's (%s); ignored", what, topic, why)
            return False
        return True

    def no_answer(self) -> ConnectionFailed:
        why = "wrong token, team id or match id?"
        if self.unverified:
            why = "its challenge does not verify under this token: wrong token?"
        elif self.unsealed:
            why = "it sends unsealed payloads: does it run without a token?"
        return ConnectionFailed(
            f"the arena at {self.endpoint.url} did not answer the hello on {self.up} in time"
            f" ({why})"
        )


async def _serve(
    session: GameSession, link: _Link, progress: Progress, wait_until: float | None
) -> None:
    assert link.mqtt is not None
    debug = log.isEnabledFor(logging.DEBUG)

    async def send(reply: ClientMessage) -> None:
        await link.publish(link.encode(reply))

    loop = asyncio.get_running_loop()
    first_by = None
    if wait_until is not None and progress.messages == 0:
        first_by = loop.time() + max(0.0, wait_until - time.monotonic())
    try:
        async with asyncio.timeout_at(first_by) as first_frame:
            async for incoming in link.mqtt.messages:
                if await _handle(session, incoming, link, send, progress, debug):
                    first_frame.reschedule(None)  # the arena answered: no more window
                if session.finished:
                    return
    except TimeoutError:
        if not first_frame.expired():
            raise
        raise link.no_answer() from None
    raise ConnectionLost("the broker ended the subscription")


async def _handle(
    session: GameSession,
    incoming: aiomqtt.Message,
    link: _Link,
    send: Callable[[ClientMessage], Awaitable[None]],
    progress: Progress,
    debug: bool,
) -> bool:
    """Decode one payload from the arena and answer it; whether it was a genuine game frame."""
    received_at = time.monotonic()
    payload = incoming.payload
    if not isinstance(payload, bytes | bytearray):
        raise ServerDataError(f"a payload on {incoming.topic} is not bytes")
    if debug:
        log.debug("recv %d bytes on %s: %s", len(payload), incoming.topic, payload.hex())
    try:
        frame = decode_envelope(bytes(payload), session.setting.size, MQTT_SERVER_TYPES)
    except ProtocolError as exc:
        if link.token is None:
            raise ServerDataError(f"the arena sent a malformed payload: {exc}") from None
        # With a token anyone's junk can reach this topic: only sealed frames count.
        log.warning("a malformed payload on %s (%s); ignored", incoming.topic, exc)
        return False
    message = frame.message
    if isinstance(message, Challenge):
        await link.challenged(frame, message)
        return False
    if not link.genuine(frame, incoming.topic):
        return False
    if isinstance(message, Refused):
        if frame.session != link.session_id:
            return False  # open mode: another session's
        raise ConnectionFailed(
            f"the arena at {link.endpoint.url} refused this player: {message.reason}"
        )
    assert isinstance(message, ServerMessage)
    progress.messages += 1
    await answer(session, [(message, received_at)], send, debug)
    return True
