"""protocol/: properties over random messages, random chunking and random bytes."""

from __future__ import annotations

import struct
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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
    ServerStreamDecoder,
    TeamId,
    Turn,
    encode,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
# Junk that is mostly small ints frames often, so it reaches the value checks, not only
# the header checks; the rest is raw bytes, trailing partial ints included.
JUNK = st.one_of(
    st.binary(max_size=4000),
    st.tuples(st.lists(st.integers(-3, 70), max_size=600), st.binary(max_size=3)).map(
        lambda ints_tail: struct.pack(f"<{len(ints_tail[0])}i", *ints_tail[0]) + ints_tail[1]
    ),
)
CODES = INT32.filter(lambda code: code != 0)
SIZES = st.sampled_from([12, 15])


@st.composite
def boards(draw: st.DrawFn, size: int, low: int, high: int) -> tuple[tuple[int, ...], ...]:
    # A fill plus scattered cells: varied values at a fraction of the draws of N*N ints.
    board = [[draw(st.integers(low, high))] * size for _ in range(size)]
    cell = st.tuples(st.integers(0, size - 1), st.integers(0, size - 1))
    for (x, y), value in draw(st.dictionaries(cell, st.integers(low, high), max_size=40)).items():
        board[x][y] = value
    return tuple(map(tuple, board))


def initial_maps(size: int) -> st.SearchStrategy[InitialMap]:
    return st.builds(
        InitialMap,
        code=CODES,
        id_package=INT32,
        player_id=st.integers(1, 4),
        map=boards(size, -1, 4),
    )


def turns(size: int) -> st.SearchStrategy[Turn]:
    return st.builds(
        Turn, code=CODES, id_package=INT32, map=boards(size, -1, 4), sheep=boards(size, 0, 64)
    )


GAME_OVERS = st.builds(GameOver, id_package=INT32)


def positions(size: int, id_package: int) -> st.SearchStrategy[PositionReply]:
    cell = st.integers(0, size - 1)
    return st.builds(PositionReply, id_package=st.just(id_package), x=cell, y=cell)


def moves(size: int, id_package: int) -> st.SearchStrategy[MoveReply]:
    cell = st.integers(0, size - 1)
    return st.builds(
        MoveReply,
        id_package=st.just(id_package),
        x=cell,
        y=cell,
        split=st.integers(1, 2**31 - 1),
        direction=st.sampled_from([1, 2, 3, 4, 6, 7, 8, 9]),
    )


def chunked(data: st.DataObject, wire: bytes) -> list[bytes]:
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(wire)), max_size=25), label="cuts")))
    bounds = [0, *cuts, len(wire)]
    return [wire[a:b] for a, b in pairwise(bounds)]


def decode_all(
    decoder: ServerStreamDecoder | PlayerStreamDecoder, chunks: list[bytes]
) -> list[Any]:
    out = []
    for chunk in chunks:
        decoder.feed(chunk)
        while (message := decoder.next_message()) is not NEED_DATA:
            out.append(message)
    assert decoder.pending == 0
    return out


@settings(max_examples=150, deadline=None)
@given(data=st.data(), size=SIZES)
def test_server_stream_round_trips(data: st.DataObject, size: int) -> None:
    before = data.draw(st.lists(GAME_OVERS, max_size=2), label="before")
    initial = data.draw(initial_maps(size), label="initial")
    after = data.draw(st.lists(st.one_of(turns(size), GAME_OVERS), max_size=4), label="after")
    messages: list[Message] = [*before, initial, *after]
    wire = b"".join(encode(message, size) for message in messages)
    assert decode_all(ServerStreamDecoder(size), chunked(data, wire)) == messages


@settings(max_examples=100, deadline=None)
@given(data=st.data(), size=SIZES)
def test_turn_stream_of_a_placed_client_round_trips(data: st.DataObject, size: int) -> None:
    messages = data.draw(st.lists(st.one_of(turns(size), GAME_OVERS), min_size=1, max_size=4))
    wire = b"".join(encode(message, size) for message in messages)
    decoder = ServerStreamDecoder(size, expect_initial_map=False)
    assert decode_all(decoder, chunked(data, wire)) == messages


@settings(max_examples=200, deadline=None)
@given(data=st.data(), size=SIZES, team_id=INT32)
def test_player_stream_round_trips(data: st.DataObject, size: int, team_id: int) -> None:
    # Even ids ask for positions, odd ids for moves, so no id is asked for as both.
    ids = data.draw(st.lists(st.integers(-(2**30), 2**30 - 1), max_size=8), label="ids")
    replies: list[PositionReply | MoveReply] = [
        data.draw(positions(size, 2 * k)) if i % 2 == 0 else data.draw(moves(size, 2 * k + 1))
        for i, k in enumerate(ids)
    ]
    decoder = PlayerStreamDecoder(size)
    for reply in replies:
        decoder.expect(reply.id_package, "position" if isinstance(reply, PositionReply) else "move")
    messages: list[Message] = [TeamId(team_id=team_id), *replies]
    wire = b"".join(encode(message, size) for message in messages)
    assert decode_all(decoder, chunked(data, wire)) == messages


@settings(max_examples=300, deadline=None)
@given(
    size=SIZES,
    x=st.integers(-3, 17),
    y=st.integers(-3, 17),
    split=st.integers(-2, 3),
    direction=st.integers(-1, 11),
)
def test_any_move_frame_is_a_reply_or_an_invalid_reply(
    size: int, x: int, y: int, split: int, direction: int
) -> None:
    decoder = PlayerStreamDecoder(size)
    decoder.expect(7, "move")
    decoder.expect(8, "position")
    frame = (1, 7, x, y, split, direction)
    decoder.feed(struct.pack("<7i", 0, *frame) + struct.pack("<4i", 1, 8, 0, 0))
    assert decoder.next_message() == TeamId(team_id=0)
    reply = decoder.next_message()
    valid = 0 <= x < size and 0 <= y < size and split >= 1 and direction in {1, 2, 3, 4, 6, 7, 8, 9}
    if valid:
        assert reply == MoveReply(id_package=7, x=x, y=y, split=split, direction=direction)
    else:
        assert isinstance(reply, InvalidReply)
        assert reply.values == frame
        assert reply.error.field in {"x", "y", "split", "direction"}
    # Exactly one frame was consumed either way.
    assert decoder.next_message() == PositionReply(id_package=8, x=0, y=0)


@settings(max_examples=300, deadline=None)
@given(size=SIZES, expect_initial_map=st.booleans(), wire=JUNK)
def test_junk_for_a_client_is_messages_need_data_or_protocol_error(
    size: int, expect_initial_map: bool, wire: bytes
) -> None:
    decoder = ServerStreamDecoder(size, expect_initial_map=expect_initial_map)
    decoder.feed(wire)
    try:
        while decoder.next_message() is not NEED_DATA:
            pass
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(size=SIZES, wire=JUNK)
def test_junk_for_the_server_is_messages_need_data_or_protocol_error(
    size: int, wire: bytes
) -> None:
    decoder = PlayerStreamDecoder(size, max_buffer=1 << 16)
    for id_package in range(-2, 3):
        decoder.expect(id_package, "move" if id_package % 2 else "position")
    decoder.feed(wire)
    try:
        while decoder.next_message() is not NEED_DATA:
            pass
    except ProtocolError:
        pass
