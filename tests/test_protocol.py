"""protocol/: frames written out by hand from RULES.md section 4, both ways."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from pydantic import ValidationError

from protocol import (
    NEED_DATA,
    GameOver,
    InitialMap,
    InvalidReply,
    Message,
    MoveReply,
    PlayerStreamDecoder,
    PositionReply,
    ProtocolError,
    ReplyKind,
    ServerStreamDecoder,
    TeamId,
    Turn,
    encode,
)

SIZES = [12, 15]


def pack(*ints: int) -> bytes:
    """Little-endian signed int32s, as RULES.md says every wire value is."""
    return struct.pack(f"<{len(ints)}i", *ints)


def empty_board(size: int, value: int = 0) -> list[list[int]]:
    return [[value] * size for _ in range(size)]


def drain(decoder: ServerStreamDecoder | PlayerStreamDecoder) -> list[Any]:
    out = []
    while (message := decoder.next_message()) is not NEED_DATA:
        out.append(message)
    return out


def player_decoder(size: int, expected: dict[int, ReplyKind]) -> PlayerStreamDecoder:
    """A player stream past its TeamId, with the requests ``expected`` registered."""
    decoder = PlayerStreamDecoder(size)
    decoder.feed(pack(42))
    assert decoder.next_message() == TeamId(team_id=42)
    for id_package, kind in expected.items():
        decoder.expect(id_package, kind)
    return decoder


# --- the wire layout, by hand ------------------------------------------------------------


def test_move_reply_bytes_are_little_endian_int32() -> None:
    # Written out byte by byte: 1, id 258 (0x0102), x 1, y 2, m 3, dir 9.
    wire = bytes.fromhex("01000000 02010000 01000000 02000000 03000000 09000000")
    message = MoveReply(id_package=258, x=1, y=2, split=3, direction=9)
    assert encode(message, 12) == wire
    decoder = player_decoder(12, {258: "move"})
    decoder.feed(wire)
    assert decoder.next_message() == message


def test_obstacle_is_minus_one_as_four_ff_bytes() -> None:
    board = empty_board(12, -1)
    wire = encode(InitialMap(code=1, id_package=0, player_id=1, map=board), 12)
    assert wire[12:16] == b"\xff\xff\xff\xff"
    assert len(wire) == 4 * (3 + 144)


@pytest.mark.parametrize("size", SIZES)
def test_team_id(size: int) -> None:
    assert encode(TeamId(team_id=11), size) == pack(11)
    decoder = PlayerStreamDecoder(size)
    decoder.feed(pack(11))
    assert decoder.next_message() == TeamId(team_id=11)


@pytest.mark.parametrize("size", SIZES)
def test_initial_map_is_x_outer(size: int) -> None:
    flat = [0] * (size * size)
    flat[2 * size + 5] = 3  # map[2][5]: x=2 is the outer index
    flat[0] = -1
    wire = pack(1, 77, 2, *flat)

    board = empty_board(size)
    board[2][5] = 3
    board[0][0] = -1
    message = InitialMap(code=1, id_package=77, player_id=2, map=board)
    assert encode(message, size) == wire

    decoder = ServerStreamDecoder(size)
    decoder.feed(wire)
    decoded = decoder.next_message()
    assert decoded == message
    assert isinstance(decoded, InitialMap)
    assert decoded.map[2][5] == 3
    assert decoded.map[5][2] == 0
    assert decoded.player_id == 2
    assert decoder.expect_initial_map is False


@pytest.mark.parametrize("size", SIZES)
def test_turn_is_x_outer_in_both_boards(size: int) -> None:
    cells = size * size
    flat_map = [-1] * cells
    flat_sheep = [0] * cells
    flat_map[2 * size + 5] = 3
    flat_sheep[2 * size + 5] = 16
    flat_map[(size - 1) * size + 0] = 1  # map[N-1][0]
    flat_sheep[(size - 1) * size + 0] = 7
    wire = pack(1, 9, *flat_map, *flat_sheep)

    board = empty_board(size, -1)
    sheep = empty_board(size)
    board[2][5], sheep[2][5] = 3, 16
    board[size - 1][0], sheep[size - 1][0] = 1, 7
    message = Turn(code=1, id_package=9, map=board, sheep=sheep)
    assert encode(message, size) == wire

    decoder = ServerStreamDecoder(size, expect_initial_map=False)
    decoder.feed(wire)
    decoded = decoder.next_message()
    assert decoded == message
    assert isinstance(decoded, Turn)
    assert (decoded.map[2][5], decoded.sheep[2][5]) == (3, 16)
    assert (decoded.map[size - 1][0], decoded.sheep[size - 1][0]) == (1, 7)
    assert decoded.sheep[0][size - 1] == 0
    assert len(decoded.map) == size
    assert all(len(row) == size for row in decoded.sheep)


@pytest.mark.parametrize("size", SIZES)
def test_position_reply(size: int) -> None:
    wire = pack(1, 3, size - 1, 4)
    message = PositionReply(id_package=3, x=size - 1, y=4)
    assert encode(message, size) == wire
    decoder = player_decoder(size, {3: "position"})
    decoder.feed(wire)
    assert decoder.next_message() == message


@pytest.mark.parametrize("size", SIZES)
def test_move_reply(size: int) -> None:
    wire = pack(1, 12, 4, size - 1, 5, 7)
    message = MoveReply(id_package=12, x=4, y=size - 1, split=5, direction=7)
    assert encode(message, size) == wire
    decoder = player_decoder(size, {12: "move"})
    decoder.feed(wire)
    assert decoder.next_message() == message


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("expect_initial_map", [True, False])
def test_game_over_is_header_only(size: int, expect_initial_map: bool) -> None:
    wire = pack(0, 31)
    assert encode(GameOver(id_package=31), size) == wire
    decoder = ServerStreamDecoder(size, expect_initial_map=expect_initial_map)
    decoder.feed(wire)
    assert decoder.next_message() == GameOver(id_package=31)
    assert decoder.next_message() is NEED_DATA
    assert decoder.pending == 0
    assert decoder.expect_initial_map is expect_initial_map


def test_game_over_needs_its_id_package_too() -> None:
    decoder = ServerStreamDecoder(12)
    decoder.feed(pack(0))
    assert decoder.next_message() is NEED_DATA
    decoder.feed(pack(5))
    assert decoder.next_message() == GameOver(id_package=5)


# --- incremental decoding ----------------------------------------------------------------


def server_script(size: int) -> tuple[bytes, list[Message]]:
    board = empty_board(size)
    board[1][2] = 1
    sheep = empty_board(size)
    sheep[1][2] = 16
    messages: list[Message] = [
        InitialMap(code=1, id_package=1, player_id=1, map=empty_board(size)),
        Turn(code=1, id_package=2, map=board, sheep=sheep),
        Turn(code=1, id_package=3, map=board, sheep=sheep),
        GameOver(id_package=4),
    ]
    return b"".join(encode(m, size) for m in messages), messages


@pytest.mark.parametrize("size", SIZES)
def test_server_stream_byte_by_byte(size: int) -> None:
    wire, messages = server_script(size)
    decoder = ServerStreamDecoder(size)
    out = []
    frame_ends = set()
    end = 0
    for sent in messages:
        end += len(encode(sent, size))
        frame_ends.add(end)
    for i, byte in enumerate(wire, start=1):
        decoder.feed(bytes([byte]))
        received = decoder.next_message()
        if i in frame_ends:
            assert received is not NEED_DATA, f"frame ending at byte {i} not decoded"
            out.append(received)
        else:
            assert received is NEED_DATA, f"message out of partial data at byte {i}"
    assert out == messages
    assert decoder.pending == 0


@pytest.mark.parametrize("size", SIZES)
def test_server_stream_all_frames_in_one_chunk(size: int) -> None:
    wire, messages = server_script(size)
    decoder = ServerStreamDecoder(size)
    decoder.feed(wire)
    assert drain(decoder) == messages


@pytest.mark.parametrize("size", SIZES)
def test_frame_split_across_feeds_keeps_the_partial_bytes(size: int) -> None:
    wire, messages = server_script(size)
    decoder = ServerStreamDecoder(size)
    cut = len(encode(messages[0], size)) + 37  # inside the first Turn, mid-int
    decoder.feed(wire[:cut])
    assert drain(decoder) == messages[:1]
    assert decoder.pending == 37
    decoder.feed(wire[cut:])
    assert drain(decoder) == messages[1:]


def test_player_stream_byte_by_byte() -> None:
    wire = pack(7) + pack(1, 100, 3, 4) + pack(1, 101, 3, 4, 2, 6) + pack(1, 100, 0, 0)
    decoder = PlayerStreamDecoder(12)
    decoder.expect(100, "position")
    decoder.expect(101, "move")
    out = []
    for byte in wire:
        decoder.feed(bytes([byte]))
        out.extend(drain(decoder))
    assert out == [
        TeamId(team_id=7),
        PositionReply(id_package=100, x=3, y=4),
        MoveReply(id_package=101, x=3, y=4, split=2, direction=6),
        PositionReply(id_package=100, x=0, y=0),  # a repeated id is still framed
    ]


def test_reconnecting_client_expects_turns() -> None:
    board, sheep = empty_board(12), empty_board(12)
    turn = Turn(code=1, id_package=8, map=board, sheep=sheep)
    decoder = ServerStreamDecoder(12)
    decoder.expect_initial_map = False
    decoder.feed(encode(turn, 12))
    assert decoder.next_message() == turn


def test_game_over_before_the_initial_map_keeps_expecting_it() -> None:
    initial = InitialMap(code=1, id_package=2, player_id=3, map=empty_board(12))
    decoder = ServerStreamDecoder(12)
    decoder.feed(pack(0, 1) + encode(initial, 12))
    assert drain(decoder) == [GameOver(id_package=1), initial]


def test_truncated_frame_is_need_data_not_error() -> None:
    decoder = ServerStreamDecoder(15)
    decoder.feed(pack(1, 2, 3) + pack(*[0] * 100))
    assert decoder.next_message() is NEED_DATA
    assert decoder.pending == 4 * 103


# --- invalid values: ProtocolError naming the field --------------------------------------


def assert_names(err: ProtocolError, field: str, value: object) -> None:
    assert err.field == field
    assert err.value == value
    assert str(err).startswith(f"{field}: ")
    assert str(value) in str(err)
    assert not isinstance(err, ValidationError)


def initial_map_frame(size: int, player_id: int = 1, cell: int = 0) -> bytes:
    flat = [0] * (size * size)
    flat[3 * size + 4] = cell
    return pack(1, 5, player_id, *flat)


def turn_frame(size: int, cell: int = 0, count: int = 0) -> bytes:
    flat_map = [0] * (size * size)
    flat_sheep = [0] * (size * size)
    flat_map[size + 2] = cell
    flat_sheep[size + 2] = count
    return pack(1, 6, *flat_map, *flat_sheep)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    ("frame", "expect_initial_map", "field", "value"),
    [
        (lambda n: initial_map_frame(n, player_id=0), True, "player_id", 0),
        (lambda n: initial_map_frame(n, player_id=5), True, "player_id", 5),
        (lambda n: initial_map_frame(n, cell=5), True, "map", 5),
        (lambda n: initial_map_frame(n, cell=-2), True, "map", -2),
        (lambda n: turn_frame(n, cell=7), False, "map", 7),
        (lambda n: turn_frame(n, count=-1), False, "sheep", -1),
        (lambda n: turn_frame(n, count=65), False, "sheep", 65),
    ],
)
def test_server_frame_with_bad_value(
    size: int, frame: Any, expect_initial_map: bool, field: str, value: int
) -> None:
    good = GameOver(id_package=99)
    decoder = ServerStreamDecoder(size, expect_initial_map=expect_initial_map)
    decoder.feed(frame(size) + encode(good, size))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert_names(info.value, field, value)
    # The bad frame was consumed: the stream is still framed after it.
    assert decoder.next_message() == good


def test_bad_cell_error_says_where() -> None:
    decoder = ServerStreamDecoder(12, expect_initial_map=False)
    decoder.feed(turn_frame(12, count=70))
    with pytest.raises(ProtocolError, match=r"x=1, y=2"):
        decoder.next_message()


VALID_MOVE: dict[str, Any] = {"id_package": 1, "x": 2, "y": 3, "split": 1, "direction": 4}


@pytest.mark.parametrize(
    ("changes", "field", "value"),
    [
        ({"direction": 5}, "direction", 5),
        ({"direction": 0}, "direction", 0),
        ({"direction": 10}, "direction", 10),
        ({"split": 0}, "split", 0),
        ({"split": -3}, "split", -3),
        ({"x": -1}, "x", -1),
        ({"y": 15}, "y", 15),
        ({"id_package": 2**31}, "id_package", 2**31),
        ({"x": "2"}, "x", "2"),
        ({"split": True}, "split", True),
        ({"direction": 4.0}, "direction", 4.0),
        ({"extra": 1}, "extra", 1),
    ],
)
def test_move_reply_construction_rejects(
    changes: dict[str, Any], field: str, value: object
) -> None:
    with pytest.raises(ProtocolError) as info:
        MoveReply(**{**VALID_MOVE, **changes})
    assert_names(info.value, field, value)


def test_direction_message_lists_the_directions() -> None:
    with pytest.raises(ProtocolError) as info:
        MoveReply(**{**VALID_MOVE, "direction": 5})
    assert str(info.value) == "direction: 5 is not one of 1,2,3,4,6,7,8,9"


def test_missing_field_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError) as info:
        PositionReply(id_package=1, x=2)
    assert info.value.field == "y"


@pytest.mark.parametrize(
    ("make", "field", "value"),
    [
        (
            lambda: InitialMap(code=1, id_package=1, player_id=0, map=empty_board(12)),
            "player_id",
            0,
        ),
        (lambda: InitialMap(code=0, id_package=1, player_id=1, map=empty_board(12)), "code", 0),
        (lambda: Turn(code=0, id_package=1, map=empty_board(12), sheep=empty_board(12)), "code", 0),
        (lambda: InitialMap(code=1, id_package=1, player_id=1, map=empty_board(13)), "map", 13),
        (
            lambda: Turn(code=1, id_package=1, map=empty_board(15), sheep=empty_board(12)),
            "sheep",
            12,
        ),
        (
            lambda: Turn(code=1, id_package=1, map=empty_board(12), sheep=empty_board(12, -1)),
            "sheep",
            -1,
        ),
        (
            lambda: Turn(
                code=1, id_package=1, map=[*empty_board(12)[:11], [0] * 11], sheep=empty_board(12)
            ),
            "map",
            11,
        ),
        (
            lambda: InitialMap(
                code=1, id_package=1, player_id=1, map=[*empty_board(12)[:11], [0] * 11 + ["x"]]
            ),
            "map",
            "x",
        ),
        (lambda: TeamId(team_id=-(2**31) - 1), "team_id", -(2**31) - 1),
        (lambda: GameOver(id_package=2**40), "id_package", 2**40),
    ],
)
def test_board_message_construction_rejects(make: Any, field: str, value: object) -> None:
    with pytest.raises(ProtocolError) as info:
        make()
    assert_names(info.value, field, value)


def test_boards_accept_lists_and_store_tuples() -> None:
    turn = Turn(code=1, id_package=1, map=empty_board(12), sheep=empty_board(12))
    assert isinstance(turn.map, tuple)
    assert isinstance(turn.sheep[3], tuple)
    assert hash(turn) == hash(Turn(code=1, id_package=1, map=turn.map, sheep=turn.sheep))


def test_messages_are_frozen() -> None:
    message = GameOver(id_package=1)
    with pytest.raises(AttributeError):
        message.id_package = 2  # type: ignore[misc]


def test_validation_context_checks_against_n() -> None:
    data = {"id_package": 1, "x": 12, "y": 0}
    assert PositionReply.model_validate(data) == PositionReply(id_package=1, x=12, y=0)
    with pytest.raises(ProtocolError) as info:
        PositionReply.model_validate(data, context={"size": 12})
    assert_names(info.value, "x", 12)
    board = {"code": 1, "id_package": 1, "map": empty_board(15), "sheep": empty_board(15)}
    with pytest.raises(ProtocolError) as info:
        Turn.model_validate(board, context={"size": 12})
    assert_names(info.value, "map", 15)


def test_json_validation_also_raises_protocol_error() -> None:
    with pytest.raises(ProtocolError) as info:
        MoveReply.model_validate_json('{"id_package":1,"x":2,"y":3,"split":1,"direction":5}')
    assert info.value.field == "direction"


@pytest.mark.parametrize(
    ("message", "field", "value"),
    [
        (PositionReply(id_package=1, x=12, y=0), "x", 12),
        (MoveReply(id_package=1, x=0, y=14, split=1, direction=1), "y", 14),
        (InitialMap(code=1, id_package=1, player_id=1, map=empty_board(15)), "map", 15),
        (Turn(code=1, id_package=1, map=empty_board(15), sheep=empty_board(15)), "map", 15),
    ],
)
def test_encode_checks_against_n(message: Any, field: str, value: int) -> None:
    with pytest.raises(ProtocolError) as info:
        encode(message, 12)
    assert_names(info.value, field, value)


def test_encode_rechecks_messages_built_without_validation() -> None:
    bad = MoveReply.model_construct(id_package=1, x=0, y=0, split=1, direction=5)
    with pytest.raises(ProtocolError) as info:
        encode(bad, 12)
    assert_names(info.value, "direction", 5)


@pytest.mark.parametrize("size", [0, 13, 16, -12])
def test_board_size_must_be_a_game_size(size: int) -> None:
    for make in (ServerStreamDecoder, PlayerStreamDecoder):
        with pytest.raises(ValueError, match="board size") as info:
            make(size)
        assert not isinstance(info.value, ProtocolError)
    with pytest.raises(ValueError, match="board size"):
        encode(GameOver(id_package=1), size)


# --- the player stream: invalid replies, unframeable input -------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    ("kind", "frame", "field", "value"),
    [
        ("move", (1, 50, 3, 4, 2, 5), "direction", 5),
        ("move", (1, 50, 3, 4, 0, 6), "split", 0),
        ("move", (1, 50, -1, 4, 1, 6), "x", -1),
        ("move", (1, 50, 3, "N", 1, 6), "y", "N"),
        ("position", (1, 50, "N", 0), "x", "N"),
        ("position", (1, 50, 0, -5), "y", -5),
    ],
)
def test_well_framed_bad_reply_is_not_fatal(
    size: int, kind: ReplyKind, frame: tuple[Any, ...], field: str, value: object
) -> None:
    ints = tuple(size if v == "N" else v for v in frame)
    value = size if value == "N" else value
    decoder = player_decoder(size, {50: kind, 51: "position"})
    decoder.feed(pack(*ints) + pack(1, 51, 0, 1))
    invalid = decoder.next_message()
    assert isinstance(invalid, InvalidReply)
    assert (invalid.id_package, invalid.kind, invalid.values) == (50, kind, ints)
    assert_names(invalid.error, field, value)
    assert decoder.next_message() == PositionReply(id_package=51, x=0, y=1)
    assert decoder.next_message() is NEED_DATA
    assert decoder.pending == 0


@pytest.mark.parametrize("code", [0, 2, -1, 11])
def test_reply_with_bad_code_is_fatal_as_soon_as_the_code_is_in(code: int) -> None:
    decoder = player_decoder(12, {1: "move"})
    decoder.feed(pack(code))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert_names(info.value, "code", code)


def test_reply_with_unregistered_id_is_fatal() -> None:
    decoder = player_decoder(12, {1: "move"})
    decoder.feed(pack(1, 2))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert_names(info.value, "id_package", 2)


def test_forgotten_id_is_no_longer_framed() -> None:
    decoder = player_decoder(12, {1: "move", 2: "position"})
    decoder.forget(1)
    decoder.forget(1)  # idempotent
    decoder.forget(12345)
    assert dict(decoder.expected) == {2: "position"}
    decoder.feed(pack(1, 1, 0, 0, 1, 6))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert_names(info.value, "id_package", 1)


def test_late_reply_to_an_earlier_request_is_framed() -> None:
    decoder = player_decoder(12, {1: "position", 2: "move"})
    decoder.feed(pack(1, 2, 0, 0, 1, 6) + pack(1, 1, 5, 5))
    assert drain(decoder) == [
        MoveReply(id_package=2, x=0, y=0, split=1, direction=6),
        PositionReply(id_package=1, x=5, y=5),
    ]


def test_expect_rejects_a_conflicting_kind_and_bad_input() -> None:
    decoder = PlayerStreamDecoder(12)
    decoder.expect(3, "move")
    decoder.expect(3, "move")
    with pytest.raises(ValueError, match="already expected"):
        decoder.expect(3, "position")
    with pytest.raises(ValueError, match="kind"):
        decoder.expect(4, "pass")  # type: ignore[arg-type]
    with pytest.raises(ProtocolError):
        decoder.expect(2**31, "move")


def test_team_id_is_only_the_first_frame() -> None:
    decoder = PlayerStreamDecoder(12)
    decoder.expect(11, "move")
    decoder.feed(pack(11, 11))
    assert decoder.next_message() == TeamId(team_id=11)
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert_names(info.value, "code", 11)


# --- the buffer bound --------------------------------------------------------------------


def test_undrained_buffer_is_refused() -> None:
    decoder = PlayerStreamDecoder(12)
    decoder.feed(pack(1))
    for _ in range(4):
        decoder.feed(pack(1, 9, 0, 0, 1, 6))
    with pytest.raises(ProtocolError) as info:
        decoder.feed(pack(1, 9, 0, 0, 1, 6))
    assert info.value.field == "buffer"


def test_a_draining_caller_never_meets_the_bound() -> None:
    decoder = PlayerStreamDecoder(12)
    decoder.expect(9, "move")
    decoder.feed(pack(1))
    for _ in range(1000):
        decoder.feed(pack(1, 9, 0, 0, 1, 6))
        assert len(drain(decoder)) >= 1
    # One big read is the caller's own choice of size and is accepted whole.
    decoder.feed(pack(1, 9, 0, 0, 1, 6) * 500)
    assert len(drain(decoder)) == 500


def test_server_stream_bound_is_configurable() -> None:
    decoder = ServerStreamDecoder(12, max_buffer=8)
    decoder.feed(pack(0, 1, 0))
    with pytest.raises(ProtocolError):
        decoder.feed(pack(2))


# --- the schema --------------------------------------------------------------------------


@pytest.mark.parametrize("model", [TeamId, InitialMap, PositionReply, Turn, MoveReply, GameOver])
def test_json_schema_is_published(model: Any) -> None:
    schema = model.model_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(model.model_fields)


def test_schema_states_the_ranges() -> None:
    move = MoveReply.model_json_schema()["properties"]
    assert move["direction"]["enum"] == [1, 2, 3, 4, 6, 7, 8, 9]
    assert move["split"]["minimum"] == 1
    turn = Turn.model_json_schema()["properties"]
    assert turn["map"]["items"]["items"] == {"type": "integer", "minimum": -1, "maximum": 4}
    assert turn["sheep"]["items"]["items"]["minimum"] == 0
