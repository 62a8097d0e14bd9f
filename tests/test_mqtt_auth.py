"""MQTT with a token against real brokers (Mosquitto, amqtt): the token never travels, a
sniffed session id or a replayed frame is worth nothing, and a player that loses its seat
says so.

Every client of the broker reads every payload; these tests play one, listening
on ``battlesheep/#`` and publishing what the issue's attacker would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiomqtt
import pytest

from arena.mqtt_listener import MqttListener
from client.errors import ConnectionFailed, ExitCode
from protocol.endpoints import to_player_topic, to_server_topic
from protocol.messages import GameOver, MoveReply, PositionReply, Turn
from protocol.mqtt_auth import (
    TO_SERVER,
    Challenges,
    new_nonce,
    proof_of,
    session_channel,
    will_channel,
)
from protocol.msgpack_codec import (
    CLIENT_TYPES,
    MQTT_SERVER_TYPES,
    Bye,
    Challenge,
    Hello,
    Proof,
    Refused,
    decode_envelope,
    encode_payload,
)
from tests.arena_support import check_game
from tests.transport_support import (
    Arena,
    Broker,
    match_id,
    mqtt_player,
    open_arena,
    others_clean,
    wait_for,
)

TOKEN = "s3cret-Token-of-the-cup"
SIZE = 12  # game 1


def listener_of(arena: Arena) -> MqttListener:
    found = [x for x in arena.lobby.listeners if isinstance(x, MqttListener)]
    assert len(found) == 1
    return found[0]


@dataclass
class Sniffer:
    """A client of the broker that keeps every payload of the match, and publishes at will."""

    mqtt: aiomqtt.Client
    match: str
    seen: list[tuple[str, bytes]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def frames(self, topic: str) -> list[tuple[Any, bytes]]:
        """The decodable frames seen on ``topic``: (envelope, payload)."""
        allowed = CLIENT_TYPES if topic.endswith("to_server") else MQTT_SERVER_TYPES
        out = []
        for t, payload in self.seen:
            if t == topic:
                with contextlib.suppress(Exception):
                    out.append((decode_envelope(payload, SIZE, allowed), payload))
        return out

    async def publish(self, topic: str, payload: bytes) -> None:
        await self.mqtt.publish(topic, payload, qos=1)

    async def until(self, found: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Wait for payloads until ``found()`` is truthy; return it."""
        async with asyncio.timeout(timeout):
            while not (result := found()):
                self.arrived.clear()
                await self.arrived.wait()
        return result


@contextlib.asynccontextmanager
async def sniffing(broker: Broker, match: str) -> AsyncIterator[Sniffer]:
    async with aiomqtt.Client("127.0.0.1", broker.port) as mqtt:
        await mqtt.subscribe("battlesheep/#", qos=1)
        sniffer = Sniffer(mqtt, match)

        async def read() -> None:
            async for incoming in mqtt.messages:
                if isinstance(incoming.payload, bytes):
                    sniffer.seen.append((str(incoming.topic), incoming.payload))
                    sniffer.arrived.set()

        reader = asyncio.ensure_future(read())
        try:
            yield sniffer
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


def moves_of(record: Any, seat: int) -> int:
    return sum(1 for e in record.events if e.seat == seat and e.kind == "move")


async def test_sniffer_never_sees_the_token(broker: Broker) -> None:
    match = match_id()
    url = broker.url(match)
    async with (
        sniffing(broker, match) as sniffer,
        open_arena((url,), token=TOKEN, tcp=False) as arena,
    ):
        summaries = await arena.run_players(
            *(mqtt_player(url, t, token=TOKEN) for t in (1, 2, 3, 4))
        )
        record, result = await arena.result()
        await sniffer.until(lambda: sum(b"game_over" in p for _, p in sniffer.seen) >= 4)
    check_game(record, result)
    others_clean(result)
    for summary in summaries:
        assert summary.seat is not None
        assert summary.moves == moves_of(record, summary.seat)
    # The players are random (unseeded), so how long the game lasts is chance: a random
    # player may be shut in at placement, and a whole game once took 16 moves. That
    # the game was played is what counts here (each seat's moves match the record).
    assert sum(summary.moves for summary in summaries) > 0
    secret = TOKEN.encode()
    # At least the hellos, proofs, placements (asked and answered) and game overs.
    assert len(sniffer.seen) > 20
    for topic, payload in sniffer.seen:
        assert secret not in payload, topic
        assert secret.hex().encode() not in payload, topic
    # Every frame after the hello and the proof is sealed.
    for team in (1, 2, 3, 4):
        for topic in (to_server_topic(match, team), to_player_topic(match, team)):
            frames = sniffer.frames(topic)
            assert frames
            for frame, _ in frames:
                if not isinstance(frame.message, Hello | Proof):
                    assert frame.mac is not None and frame.seq is not None, frame


async def _sniff_seat_one(sniffer: Sniffer, match: str) -> tuple[str, bytes]:
    """The seated session of team 1 and its first reply, once it has sent one."""
    up = to_server_topic(match, 1)

    def reply() -> tuple[str, bytes] | None:
        for frame, payload in sniffer.frames(up):
            if isinstance(frame.message, PositionReply | MoveReply) and frame.session:
                return frame.session, payload
        return None

    found: tuple[str, bytes] = await sniffer.until(reply)
    return found


async def _attack_game(
    broker: Broker,
    attack: Callable[[Sniffer, str, Arena], Awaitable[None]],
    token: str | None = TOKEN,
) -> tuple[Any, Any, list[Any], MqttListener]:
    """Four players of the token's arena, and ``attack`` once seat 1 has moved."""
    match = match_id()
    url = broker.url(match)
    async with (
        sniffing(broker, match) as sniffer,
        open_arena((url,), token=token, tcp=False) as arena,
    ):
        players = [asyncio.ensure_future(mqtt_player(url, t, token=token)) for t in (1, 2, 3, 4)]
        await attack(sniffer, match, arena)
        summaries = await arena.run_players(*players, return_exceptions=True)
        record, result = await arena.result()
    return record, result, summaries, listener_of(arena)


async def test_sniffed_session_bye_and_hello_take_no_seat(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's attack: ``bye`` with the sniffed session, then ``hello`` for it."""
    caplog.set_level(logging.INFO, logger="arena")
    caplog.set_level(logging.WARNING, logger="client")

    async def attack(sniffer: Sniffer, match: str, arena: Arena) -> None:
        session, _ = await _sniff_seat_one(sniffer, match)
        up, down = to_server_topic(match, 1), to_player_topic(match, 1)
        await sniffer.publish(up, encode_payload(Bye(), SIZE, session))
        # Without the token: an old client's hello, one without a nonce, one with a nonce.
        for hello in (
            Hello(team_id=1, session=session, token="guess"),
            Hello(team_id=1, session=session),
            Hello(team_id=1, session=session, nonce=new_nonce()),
        ):
            await sniffer.publish(up, encode_payload(hello, SIZE))

        # Its challenge comes (after the honest player's): no proof without the token, and
        # the honest proof is spent.
        def challenges() -> list[Any]:
            found = [f for f, _ in sniffer.frames(down) if isinstance(f.message, Challenge)]
            return found if len(found) >= 2 else []

        mine = (await sniffer.until(challenges))[-1]
        proof = Proof(nonce=mine.message.nonce, proof="0" * 64)
        await sniffer.publish(up, encode_payload(proof, SIZE, session))
        honest_proof = next(p for f, p in sniffer.frames(up) if isinstance(f.message, Proof))
        await sniffer.publish(up, honest_proof)
        # And a board of the attacker's own for the honest player: it must not answer it.
        fake = Turn(
            code=1, id_package=10**6, map=((0,) * SIZE,) * SIZE, sheep=((0,) * SIZE,) * SIZE
        )
        await sniffer.publish(down, encode_payload(fake, SIZE))
        await sniffer.publish(down, encode_payload(GameOver(id_package=7), SIZE))

    record, result, summaries, listener = await _attack_game(broker, attack)
    check_game(record, result)
    others_clean(result)  # seat 1 included: the attack cost the honest player nothing
    assert result.teams == [1, 2, 3, 4]
    for summary in summaries:
        assert not isinstance(summary, BaseException), summary
        assert summary.moves == moves_of(record, summary.seat)
    # The players are random (unseeded): a whole game may take 20 moves or fewer (one
    # CI game took 20). That it was played to its end, every seat's moves as recorded,
    # is what counts (check_game and the loop above).
    assert sum(s.moves for s in summaries if not isinstance(s, BaseException)) > 0
    assert listener.forged >= 5
    assert "Bye on battlesheep/" in caplog.text and "no mac; discarded" in caplog.text
    assert "it carries a token, which MQTT never sends" in caplog.text
    assert "hello of team 1 with a wrong token; ignored" in caplog.text
    assert "answers no open challenge" in caplog.text
    assert "a Turn on battlesheep/" in caplog.text
    assert "that is not the arena's (no mac); ignored" in caplog.text


async def test_replayed_and_forged_replies_are_refused(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="arena")
    caplog.set_level(logging.WARNING, logger="client")

    async def attack(sniffer: Sniffer, match: str, arena: Arena) -> None:
        _, reply = await _sniff_seat_one(sniffer, match)
        up = to_server_topic(match, 1)
        for _ in range(3):
            await sniffer.publish(up, reply)
        tampered = bytearray(reply)
        tampered[-1] = ord("0") if tampered[-1] != ord("0") else ord("1")  # the mac's last digit
        await sniffer.publish(up, bytes(tampered))

    record, result, summaries, listener = await _attack_game(broker, attack)
    check_game(record, result)
    others_clean(result)  # no stale reply counted against seat 1: the copies never got in
    for summary in summaries:
        assert not isinstance(summary, BaseException), summary
        assert summary.moves == moves_of(record, summary.seat)
    # The players are random (unseeded): a whole game may take 20 moves or fewer (one
    # CI game took 20). That it was played to its end, every seat's moves as recorded,
    # is what counts (check_game and the loop above).
    assert sum(s.moves for s in summaries if not isinstance(s, BaseException)) > 0
    assert listener.forged >= 4
    assert "replayed (last" in caplog.text
    assert "a wrong mac; discarded" in caplog.text


async def test_wrong_token_gets_no_seat(broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="arena")
    url = broker.url(match_id())
    async with open_arena((url,), token=TOKEN, tcp=False) as arena:
        with pytest.raises(ConnectionFailed, match="does not verify under this token"):
            await mqtt_player(url, 0, token="guess", connect_for=1.0)
        with pytest.raises(ConnectionFailed, match="did not answer the hello"):
            await mqtt_player(url, 0, token=None, connect_for=1.0)
        await arena.run_players(*(mqtt_player(url, team, token=TOKEN) for team in (1, 2, 3, 4)))
        record, result = await arena.result()
    check_game(record, result)
    others_clean(result)
    assert result.teams == [1, 2, 3, 4]
    assert "hello of team 0 with a wrong token; ignored" in caplog.text
    assert "no nonce: this arena wants the token proved" in caplog.text


async def test_a_second_player_of_a_team_is_refused_with_the_connection_error(
    broker: Broker,
) -> None:
    url = broker.url(match_id())
    async with open_arena((url,), token=TOKEN, tcp=False) as arena:
        players = [asyncio.ensure_future(mqtt_player(url, t, token=TOKEN)) for t in (1, 2, 3, 4)]
        await wait_for(lambda: len(arena.lobby.teams) == 4)
        with pytest.raises(ConnectionFailed, match="refused this player: claims seat 2") as info:
            await mqtt_player(url, 2, token=TOKEN, connect_for=10)
        assert info.value.exit_code == ExitCode.CONNECTION
        await arena.run_players(*players)
        record, result = await arena.result()
    check_game(record, result)
    others_clean(result)


async def test_open_mode_player_unseated_by_a_sniffed_bye_does_not_report_moves(
    broker: Broker,
) -> None:
    """Without a token anyone can unseat a player; that player then ends with the connection
    error instead of exit 0 and a count of moves it did not play to the end."""

    async def attack(sniffer: Sniffer, match: str, arena: Arena) -> None:
        session, _ = await _sniff_seat_one(sniffer, match)
        await sniffer.publish(to_server_topic(match, 1), encode_payload(Bye(), SIZE, session))

    record, result, summaries, _ = await _attack_game(broker, attack, token=None)
    check_game(record, result)
    others_clean(result, faulty={1})
    assert result.disconnects[0] == 1
    lost = summaries[0]
    assert isinstance(lost, ConnectionFailed), lost
    assert "refused this player: left (bye)" in str(lost)
    assert lost.exit_code == ExitCode.CONNECTION
    for summary in summaries[1:]:
        assert not isinstance(summary, BaseException), summary


def test_handshake_and_seals_without_a_broker() -> None:
    """The pieces: a proof only the token makes, seals that verify once and in order."""
    cn, sn, session = new_nonce(), new_nonce(), "s" * 32
    arena = Challenges(TOKEN)
    pending = arena.issue(3, session, cn)
    sn = pending.server_nonce
    assert arena.answer(3, session, sn, proof_of("guess", sn, cn, 3, session)) == "a wrong token"
    pending = arena.issue(3, session, cn)
    sn = pending.server_nonce
    assert arena.answer(3, "other", sn, proof_of(TOKEN, sn, cn, 3, "other")) != pending
    assert arena.answer(3, session, sn, proof_of(TOKEN, sn, cn, 3, session)) is pending
    assert arena.answer(3, session, sn, proof_of(TOKEN, sn, cn, 3, session)) == (
        "answers no open challenge"
    )
    player = session_channel(TOKEN, sn, cn, 3, session, TO_SERVER)
    frames = [
        decode_envelope(encode_payload(m, SIZE, session, player), SIZE)
        for m in (PositionReply(id_package=1, x=0, y=0), Bye())
    ]
    assert [f.seq for f in frames] == [1, 2]
    check = pending.channel.check
    assert check(frames[1].signed, frames[1].seq, frames[1].mac) == ""
    assert check(frames[0].signed, frames[0].seq, frames[0].mac).startswith("seq 1 replayed")
    assert check(frames[1].signed, frames[1].seq, frames[1].mac).startswith("seq 2 replayed")
    wrong = session_channel("guess", sn, cn, 3, session, TO_SERVER)
    forged = decode_envelope(encode_payload(Bye(), SIZE, session, wrong), SIZE)
    assert check(forged.signed, 99, forged.mac) == "a wrong mac"
    # A server frame cannot pass as a player's: the direction is under the mac.
    told = decode_envelope(
        encode_payload(Refused(reason="x"), SIZE, session, pending.channel), SIZE, MQTT_SERVER_TYPES
    )
    assert check(told.signed, told.seq, told.mac) == "a wrong mac"
    will = decode_envelope(
        encode_payload(Bye(), SIZE, session, will_channel(TOKEN, cn, 3, session, TO_SERVER)), SIZE
    )
    assert will.seq == 0
    assert arena.will_of(3, session, cn).check(will.signed, will.seq, will.mac, will=True) == ""
    assert arena.will_of(3, session, new_nonce()).check(will.signed, 0, will.mac, will=True)
    assert TOKEN.encode() not in encode_payload(Proof(nonce=sn, proof="0" * 64), SIZE, session)
