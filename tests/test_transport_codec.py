"""The msgpack frames of the ws and mqtt transports, their schema, and transport URLs."""

from __future__ import annotations

import json

import msgpack
import pytest

from protocol import GameOver, InitialMap, MoveReply, PositionReply, ProtocolError, Turn
from protocol.endpoints import parse_endpoint, team_of_topic, to_server_topic
from protocol.msgpack_codec import (
    CLIENT_TYPES,
    MAX_PAYLOAD,
    MODEL_OF,
    SERVER_TYPES,
    Bye,
    Hello,
    decode_payload,
    encode_payload,
    message_schema,
)
from tests.cli_support import battlesheep

BOARD12 = tuple(tuple((x * 12 + y) % 6 - 1 for y in range(12)) for x in range(12))
SHEEP12 = tuple(tuple((x + y) % 5 for y in range(12)) for x in range(12))
BOARD15 = tuple(tuple(0 for _ in range(15)) for _ in range(15))

MESSAGES = [
    Hello(team_id=-7, token="t", session="s"),
    InitialMap(code=1, id_package=2, player_id=3, map=BOARD12),
    PositionReply(id_package=2, x=11, y=0),
    Turn(code=5, id_package=-(2**31), map=BOARD12, sheep=SHEEP12),
    MoveReply(id_package=9, x=3, y=4, split=15, direction=9),
    GameOver(id_package=2**31 - 1),
    Bye(),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_round_trip_keeps_every_field(message: object) -> None:
    payload = encode_payload(message, 12, session="abc")  # type: ignore[arg-type]
    data = msgpack.unpackb(payload)
    kind = data["type"]
    assert MODEL_OF[kind] is type(message)
    decoded, session = decode_payload(payload, 12, CLIENT_TYPES | SERVER_TYPES)
    assert decoded == message
    if kind in CLIENT_TYPES:
        assert session == ("s" if kind == "hello" else "abc")


def test_boards_are_x_outer_like_the_tcp_wire() -> None:
    data = msgpack.unpackb(
        encode_payload(Turn(code=1, id_package=1, map=BOARD12, sheep=SHEEP12), 12)
    )
    assert data["map"][2][5] == BOARD12[2][5] == (2 * 12 + 5) % 6 - 1
    assert len(encode_payload(Turn(code=1, id_package=1, map=BOARD15, sheep=BOARD15), 15)) < 1024


BAD = {
    "oversized": (b"\x90" + b"\x00" * MAX_PAYLOAD, "frame"),
    "junk": (b"\xc1", "frame"),
    "trailing bytes": (msgpack.packb({"type": "bye"}) + b"\x00", "frame"),
    "not a map": (msgpack.packb([1, 2]), "frame"),
    "no type": (msgpack.packb({"id_package": 1}), "type"),
    "unknown type": (msgpack.packb({"type": "teleport"}), "type"),
    "server type from a player": (msgpack.packb({"type": "turn"}), "type"),
    "missing field": (msgpack.packb({"type": "position", "id_package": 1, "x": 1}), "y"),
    "extra field": (msgpack.packb({"type": "bye", "seat": 1}), "seat"),
    "string for int": (
        msgpack.packb({"type": "position", "id_package": 1, "x": "1", "y": 1}),
        "x",
    ),
    "direction 5": (
        msgpack.packb(
            {"type": "move", "id_package": 1, "x": 1, "y": 1, "split": 1, "direction": 5}
        ),
        "direction",
    ),
    "x off the board": (
        msgpack.packb({"type": "position", "id_package": 1, "x": 12, "y": 1}),
        "x",
    ),
    "session not text": (msgpack.packb({"type": "bye", "session": 3}), "session"),
    "binary token": (msgpack.packb({"type": "hello", "team_id": 1, "token": b"x"}), "frame"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_frames_name_the_field(name: str) -> None:
    payload, field = BAD[name]
    with pytest.raises(ProtocolError) as info:
        decode_payload(payload, 12)
    assert info.value.field == field, str(info.value)


def test_board_of_the_wrong_game_is_refused() -> None:
    payload = encode_payload(Turn(code=1, id_package=1, map=BOARD15, sheep=BOARD15), 15)
    with pytest.raises(ProtocolError, match="rows is not 12"):
        decode_payload(payload, 12, SERVER_TYPES)


def test_schema_command_prints_every_message() -> None:
    out = battlesheep("schema", check=True).stdout
    schema = json.loads(out)
    assert schema == json.loads(json.dumps(message_schema()))
    defs = schema["$defs"]
    assert {d["properties"]["type"]["const"] for d in defs.values()} == set(MODEL_OF)
    move = defs["MoveReply"]
    assert move["required"][0] == "type"
    assert move["properties"]["direction"]["enum"] == [1, 2, 3, 4, 6, 7, 8, 9]
    assert "session" in move["properties"]
    assert defs["Turn"]["properties"]["map"]["maxItems"] == 15
    assert len(schema["oneOf"]) == len(MODEL_OF)


def test_endpoints_and_topics() -> None:
    ws = parse_endpoint("ws://127.0.0.1:8765/arena")
    assert (ws.scheme, ws.host, ws.port, ws.path) == ("ws", "127.0.0.1", 8765, "/arena")
    mqtt = parse_endpoint("mqtt://user:p%40ss@broker:1884/cup-1")
    assert (mqtt.username, mqtt.password, mqtt.match, mqtt.port) == ("user", "p@ss", "cup-1", 1884)
    assert "p@ss" not in mqtt.url
    assert parse_endpoint("mqtt://localhost").match == "local"
    assert parse_endpoint("tcp://localhost").port == 8887
    topic = to_server_topic("cup-1", 42)
    assert topic == "battlesheep/cup-1/42/to_server"
    assert team_of_topic(topic, "cup-1") == 42
    assert team_of_topic(topic, "other") is None
    assert team_of_topic("battlesheep/cup-1/x/to_server", "cup-1") is None
    for bad, why in [
        ("http://x:1", "scheme"),
        ("ws://:1/", "no host"),
        ("tcp://x:1/path", "no path"),
        ("mqtt://x/a/b", "match id"),
        ("ws://u:p@x:1/", "credentials"),
        ("ws://x:99999/", "port"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_endpoint(bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--transport", "ws", "--url", "mqtt://127.0.0.1:1/m"], "does not fit"),
        (["--url", "gopher://x"], "scheme"),
    ],
)
def test_play_rejects_bad_transport_options(args: list[str], message: str) -> None:
    proc = battlesheep("play", "--game", "1", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
