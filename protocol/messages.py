"""One frozen model per frame of the course wire protocol (RULES.md section 4).

Fields are in wire order. Boards are indexed ``[x][y]``, x being the outer loop on
the wire. The models are the published schema (``model_json_schema()``); their
value ranges are enforced by ``check_values`` (see ``protocol.limits`` for why it
is plain Python), which runs after pydantic's type checks on construction and
which the codec runs with the board size it knows. Every failure is a
``ProtocolError``; pydantic's ``ValidationError`` never escapes.

A ``size`` in the validation context (``Model.model_validate(data, context={"size": 12})``)
checks boards and coordinates against that N; without it, any board side of
the game is accepted and coordinates are checked against the largest board.
"""

from __future__ import annotations

from typing import Annotated, Any, Self, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)

from protocol.errors import ProtocolError
from protocol.limits import (
    BOARD_SIZES,
    CELL_MAX,
    CELL_MIN,
    DIRECTIONS,
    INT32_MAX,
    INT32_MIN,
    SEAT_MAX,
    SEAT_MIN,
    SHEEP_MAX,
    SHEEP_MIN,
    SPLIT_MIN,
    board_side,
    check_at_least,
    check_board_code,
    check_board_values,
    check_coordinate,
    check_direction,
    check_int32,
    check_range,
)

__all__ = [
    "Board",
    "ClientMessage",
    "GameOver",
    "InitialMap",
    "Message",
    "MoveReply",
    "PositionReply",
    "ServerMessage",
    "TeamId",
    "Turn",
    "WireMessage",
]

Board: TypeAlias = tuple[tuple[int, ...], ...]
"""A board as sent: ``board[x][y]``, N rows of N ints."""

_MapCell = Annotated[
    StrictInt, WithJsonSchema({"type": "integer", "minimum": CELL_MIN, "maximum": CELL_MAX})
]
_SheepCell = Annotated[
    StrictInt, WithJsonSchema({"type": "integer", "minimum": SHEEP_MIN, "maximum": SHEEP_MAX})
]
_BOARD_SIDES: dict[str, JsonValue] = {"minItems": min(BOARD_SIZES), "maxItems": max(BOARD_SIZES)}


def _int_field(description: str, minimum: int = INT32_MIN, maximum: int = INT32_MAX) -> Any:
    # Ranges go to the schema only; check_values enforces them with our own errors.
    return Field(
        description=description, json_schema_extra={"minimum": minimum, "maximum": maximum}
    )


def _board_field(description: str) -> Any:
    return Field(description=description, json_schema_extra=_BOARD_SIDES)


def protocol_error_from(exc: ValidationError) -> ProtocolError:
    """The first failure of a pydantic ValidationError as a ProtocolError."""
    first = exc.errors()[0]
    inner = (first.get("ctx") or {}).get("error")
    if isinstance(inner, ProtocolError):
        return inner
    loc = first["loc"]
    field = str(loc[0]) if loc else "message"
    if first["type"] == "missing":
        return ProtocolError(field, None, "is missing")
    reason = "is rejected: " + first["msg"][:1].lower() + first["msg"][1:]
    if len(loc) > 1:
        reason += f" (at {field}{''.join(f'[{part}]' for part in loc[1:])})"
    return ProtocolError(field, first["input"], reason)


class WireMessage(BaseModel):
    """Base of all wire messages: frozen, no extra fields, ProtocolError on bad input."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise protocol_error_from(exc) from None

    def __setattr__(self, name: str, value: Any) -> None:
        # pydantic would raise a ValidationError; a write to a frozen object is an attribute error.
        raise AttributeError(f"{type(self).__name__} is frozen; use model_copy(update=...)")

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            raise protocol_error_from(exc) from None

    @classmethod
    def model_validate_json(cls, json_data: Any, *args: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate_json(json_data, *args, **kwargs)
        except ValidationError as exc:
            raise protocol_error_from(exc) from None

    @model_validator(mode="after")
    def _check_after_types(self, info: ValidationInfo) -> Self:
        context = info.context
        self.check_values(context.get("size") if isinstance(context, dict) else None)
        return self

    def check_values(self, size: int | None = None) -> None:
        """Raise ProtocolError if a value is out of range (boards and coordinates for ``size``)."""
        raise NotImplementedError


class TeamId(WireMessage):
    """client -> server on connect: ``team_id``."""

    team_id: StrictInt = _int_field("The team's id in the course's list.")

    def check_values(self, size: int | None = None) -> None:
        check_int32("team_id", self.team_id)


class InitialMap(WireMessage):
    """server -> client, once: ``code, id_package, player_id, map`` (N*N ints, x outer)."""

    code: StrictInt = _int_field("Any non-zero value; 0 would be a game-over header.")
    id_package: StrictInt = _int_field("To be echoed by the reply.")
    player_id: StrictInt = _int_field("The seat, 1..4.", SEAT_MIN, SEAT_MAX)
    map: tuple[tuple[_MapCell, ...], ...] = _board_field(
        "map[x][y]: -1 obstacle, 0 free, 1..4 owner (earlier placements show)."
    )

    def check_values(self, size: int | None = None) -> None:
        check_board_code("code", self.code)
        check_int32("id_package", self.id_package)
        check_range("player_id", self.player_id, SEAT_MIN, SEAT_MAX)
        board_side("map", self.map, size)
        check_board_values("map", self.map, CELL_MIN, CELL_MAX)


class PositionReply(WireMessage):
    """client -> server: ``1, id_package, x, y``, the cell for all the player's sheep."""

    id_package: StrictInt = _int_field("The id_package of the InitialMap answered.")
    x: StrictInt = _int_field("First board index.", 0, max(BOARD_SIZES) - 1)
    y: StrictInt = _int_field("Second board index.", 0, max(BOARD_SIZES) - 1)

    def check_values(self, size: int | None = None) -> None:
        check_int32("id_package", self.id_package)
        check_coordinate("x", self.x, size)
        check_coordinate("y", self.y, size)


class Turn(WireMessage):
    """server -> client: ``code, id_package, map, sheep`` (two N*N boards, x outer)."""

    code: StrictInt = _int_field("Any non-zero value; 0 would be a game-over header.")
    id_package: StrictInt = _int_field("To be echoed by the reply.")
    map: tuple[tuple[_MapCell, ...], ...] = _board_field(
        "map[x][y]: -1 obstacle, 0 free, 1..4 owner."
    )
    sheep: tuple[tuple[_SheepCell, ...], ...] = _board_field(
        "sheep[x][y]: sheep in the cell, 0 where none (and in hidden cells in game 3)."
    )

    def check_values(self, size: int | None = None) -> None:
        check_board_code("code", self.code)
        check_int32("id_package", self.id_package)
        side = board_side("map", self.map, size)
        board_side("sheep", self.sheep, side)
        check_board_values("map", self.map, CELL_MIN, CELL_MAX)
        check_board_values("sheep", self.sheep, SHEEP_MIN, SHEEP_MAX)


class MoveReply(WireMessage):
    """client -> server: ``1, id_package, x, y, m, dir``: move ``split`` sheep from (x, y)."""

    id_package: StrictInt = _int_field("The id_package of the Turn answered.")
    x: StrictInt = _int_field("First index of the stack moved from.", 0, max(BOARD_SIZES) - 1)
    y: StrictInt = _int_field("Second index of the stack moved from.", 0, max(BOARD_SIZES) - 1)
    split: StrictInt = _int_field("m: how many sheep move (the rest stay).", SPLIT_MIN)
    direction: StrictInt = Field(
        description="Keypad direction; 5 does not exist.",
        json_schema_extra={"enum": list(DIRECTIONS)},
    )

    def check_values(self, size: int | None = None) -> None:
        check_int32("id_package", self.id_package)
        check_coordinate("x", self.x, size)
        check_coordinate("y", self.y, size)
        check_at_least("split", self.split, SPLIT_MIN)
        check_direction("direction", self.direction)


class GameOver(WireMessage):
    """server -> client: ``0, id_package``, header only; the game is over."""

    id_package: StrictInt = _int_field("Echoes nothing; carried for logs.")

    def check_values(self, size: int | None = None) -> None:
        check_int32("id_package", self.id_package)


ClientMessage: TypeAlias = TeamId | PositionReply | MoveReply
ServerMessage: TypeAlias = InitialMap | Turn | GameOver
Message: TypeAlias = ClientMessage | ServerMessage
