"""The MQTT transport: msgpack payloads on the match's topics (``protocol.endpoints``), QoS 1.

The player connects to the broker (with the URL's credentials, if any),
subscribes to ``battlesheep/<match>/<team>/to_player``, and publishes on
``.../to_server`` a ``hello`` with its team id, the arena's token and a
random session id that it keeps for the whole game (reconnects included) and
puts in every later message; the arena only takes a seat's replies from the
seated session. The broker publishes a ``bye`` as the player's will if it
vanishes, and the player publishes one itself when it leaves. Until the first
frame arrives the connect window applies: an arena that refused the hello
(wrong token or team) sends nothing, so the player gives up then.
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
from client.lifecycle import ConnectionLost, Progress, answer, play_reconnecting, retry_connect
from client.session import GameSession, GameSummary
from protocol import ProtocolError
from protocol.endpoints import Endpoint, parse_endpoint, to_player_topic, to_server_topic
from protocol.messages import ClientMessage, ServerMessage
from protocol.msgpack_codec import SERVER_TYPES, Bye, Hello, decode_payload, encode_payload

log = logging.getLogger(__name__)

QOS = 1


@dataclass(frozen=True, slots=True)
class MqttOptions:
    url: str = "mqtt://127.0.0.1:1883/local"
    team: int = 1
    token: str | None = None
    connect_for: float = 60.0
    reconnect_for: float = 30.0
    backoff_first: float = 0.05
    backoff_max: float = 1.0
    keepalive: int = 10
    """Seconds; the broker publishes the will after 1.5 times this without a word."""


async def play_mqtt(
    session: GameSession, options: MqttOptions, rng: random.Random | None = None
) -> GameSummary:
    """Play one game through an MQTT broker; the summary at game over.

    Raises ``ServerDataError`` for a malformed payload and ``ConnectionFailed``
    when the broker cannot be reached in time or the arena never answers.
    """
    chosen = rng or random.Random()
    try:
        endpoint = parse_endpoint(options.url)
    except ValueError as exc:
        raise ConnectionFailed(str(exc)) from None
    if endpoint.scheme != "mqtt":
        raise ConnectionFailed(f"{options.url!r} is no mqtt:// URL")
    session_id = uuid.UUID(int=chosen.getrandbits(128)).hex
    size = session.setting.size
    up = to_server_topic(endpoint.match, options.team)
    down = to_player_topic(endpoint.match, options.team)
    bye = encode_payload(Bye(), size, session_id)

    def client() -> aiomqtt.Client:
        return aiomqtt.Client(
            endpoint.host,
            endpoint.port,
            username=endpoint.username,
            password=endpoint.password,
            identifier=f"battlesheep-{options.team}-{session_id[:12]}",
            will=aiomqtt.Will(up, bye, qos=QOS),
            keepalive=options.keepalive,
            timeout=5.0,
            # Frames are small and each waits for an answer: no Nagle delay.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )

    answered_once = False

    async def run_connection(give_up_at: float, progress: Progress) -> None:
        nonlocal answered_once
        try:
            async with contextlib.AsyncExitStack() as held:
                mqtt = await _connect(held, client, endpoint.url, give_up_at, chosen, options)
                await mqtt.subscribe(down, qos=QOS)
                await _publish(mqtt, up, encode_payload(_hello(options, session_id), size))
                wait_until = None if answered_once else give_up_at
                await _serve(session, mqtt, endpoint, up, session_id, progress, wait_until)
                answered_once = True
                with contextlib.suppress(aiomqtt.MqttError):
                    await _publish(mqtt, up, bye)
        except aiomqtt.MqttError as exc:
            if session.finished:  # only leaving the broker failed: the game is played
                log.debug("mqtt: disconnecting after the game: %s", exc)
                return
            if progress.messages:
                answered_once = True
            raise ConnectionLost(f"broker connection lost: {exc}") from None

    return await play_reconnecting(
        session, run_connection, options.connect_for, options.reconnect_for
    )


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

    return await retry_connect(
        open_once, where, give_up_at, rng, options.backoff_first, options.backoff_max
    )


def _hello(options: MqttOptions, session_id: str) -> Hello:
    return Hello(team_id=options.team, token=options.token, session=session_id)


async def _publish(mqtt: aiomqtt.Client, topic: str, payload: bytes) -> None:
    await mqtt.publish(topic, payload, qos=QOS, timeout=10.0)


async def _serve(
    session: GameSession,
    mqtt: aiomqtt.Client,
    endpoint: Endpoint,
    up: str,
    session_id: str,
    progress: Progress,
    wait_until: float | None,
) -> None:
    size = session.setting.size
    debug = log.isEnabledFor(logging.DEBUG)

    async def send(reply: ClientMessage) -> None:
        payload = encode_payload(reply, size, session_id)
        if debug:
            log.debug("publish %d bytes on %s: %s", len(payload), up, payload.hex())
        await _publish(mqtt, up, payload)

    loop = asyncio.get_running_loop()
    first_by = None
    if wait_until is not None and progress.messages == 0:
        first_by = loop.time() + max(0.0, wait_until - time.monotonic())
    try:
        async with asyncio.timeout_at(first_by) as first_frame:
            async for incoming in mqtt.messages:
                first_frame.reschedule(None)  # the arena answered: no more window
                await _handle(session, incoming, send, progress, debug)
                if session.finished:
                    return
    except TimeoutError:
        if not first_frame.expired():
            raise
        raise ConnectionFailed(
            f"the arena at {endpoint.url} did not answer the hello on {up} in time"
            " (wrong token, team id or match id?)"
        ) from None
    raise ConnectionLost("the broker ended the subscription")


async def _handle(
    session: GameSession,
    incoming: aiomqtt.Message,
    send: Callable[[ClientMessage], Awaitable[None]],
    progress: Progress,
    debug: bool,
) -> None:
    """Decode one payload from the arena and answer it."""
    received_at = time.monotonic()
    payload = incoming.payload
    if not isinstance(payload, bytes | bytearray):
        raise ServerDataError(f"a payload on {incoming.topic} is not bytes")
    if debug:
        log.debug("recv %d bytes on %s: %s", len(payload), incoming.topic, payload.hex())
    try:
        message, _ = decode_payload(bytes(payload), session.setting.size, SERVER_TYPES)
    except ProtocolError as exc:
        raise ServerDataError(f"the arena sent a malformed payload: {exc}") from None
    assert isinstance(message, ServerMessage)
    progress.messages += 1
    await answer(session, [(message, received_at)], send, debug)
