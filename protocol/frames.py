"""Whole frames, already unpacked to ints, to checked messages.

Each function gets exactly one frame's ints (header included) and builds the
message with ``model_construct`` after ``check_values``: the values are ints
straight from struct, so pydantic's type pass would only cost time.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.messages import Board, GameOver, InitialMap, MoveReply, PositionReply, TeamId, Turn


def _rows(flat: Sequence[int], start: int, size: int) -> Board:
    # x is the outer loop on the wire: consecutive runs of N ints are the rows map[x].
    return tuple(tuple(flat[i : i + size]) for i in range(start, start + size * size, size))


def team_id_from_ints(ints: Sequence[int]) -> TeamId:
    message = TeamId.model_construct(team_id=ints[0])
    message.check_values()
    return message


def game_over_from_ints(ints: Sequence[int]) -> GameOver:
    message = GameOver.model_construct(id_package=ints[1])
    message.check_values()
    return message


def initial_map_from_ints(ints: Sequence[int], size: int) -> InitialMap:
    message = InitialMap.model_construct(
        code=ints[0], id_package=ints[1], player_id=ints[2], map=_rows(ints, 3, size)
    )
    message.check_values(size)
    return message


def turn_from_ints(ints: Sequence[int], size: int) -> Turn:
    message = Turn.model_construct(
        code=ints[0],
        id_package=ints[1],
        map=_rows(ints, 2, size),
        sheep=_rows(ints, 2 + size * size, size),
    )
    message.check_values(size)
    return message


def position_reply_from_ints(ints: Sequence[int], size: int) -> PositionReply:
    message = PositionReply.model_construct(id_package=ints[1], x=ints[2], y=ints[3])
    message.check_values(size)
    return message


def move_reply_from_ints(ints: Sequence[int], size: int) -> MoveReply:
    message = MoveReply.model_construct(
        id_package=ints[1], x=ints[2], y=ints[3], split=ints[4], direction=ints[5]
    )
    message.check_values(size)
    return message
