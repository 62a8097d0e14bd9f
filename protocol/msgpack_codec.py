"""The message models as msgpack maps: the frames of the WebSocket and MQTT transports.

One message is one msgpack map: the model's fields under their own names plus
``"type"``, one of ``TYPE_OF`` (``"initial_map"``, ``"turn"``, ``"game_over"``
from the server; ``"hello"``, ``"position"``, ``"move"`` from a player, and
``"bye"``, an MQTT player's will).
Boards are arrays of N arrays of N ints, ``map[x][y]`` as on the TCP wire.
The models are the same pydantic models as the TCP codec's, so a frame is
validated exactly like a TCP frame (board side against the game's N), and
every failure is a ``ProtocolError`` naming the field. ``Hello`` replaces the
TCP team id: it carries the team id, the arena's shared token when it asks
for one, and (MQTT) the player's session id.

``message_schema()`` is the JSON Schema of every message, which ``battlesheep
schema`` prints for agents written in other languages.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

import msgpack
from pydantic import Field, StrictInt, StrictStr

from protocol.errors import ProtocolError
from protocol.limits import INT32_MAX, INT32_MIN, check_board_size, check_int32
from protocol.messages import (
    GameOver,
    InitialMap,
    Message,
    MoveReply,
    PositionReply,
    Turn,
    WireMessage,
)

__all__ = [
    "CLIENT_TYPES",
    "MAX_PAYLOAD",
    "SERVER_TYPES",
    "TYPE_OF",
    "Bye",
    "Hello",
    "decode_payload",
    "encode_payload",
    "message_schema",
]

MAX_PAYLOAD: Final = 8 * 1024
"""Bytes of the largest frame either side accepts.

The largest real message, a 15x15 turn, packs to about 600 bytes (small ints
are one byte in msgpack); anything far above is junk or a flood.
"""

MAX_TEXT: Final = 256
"""Characters of a token or session id."""


class Hello(WireMessage):
    """player -> server, first: who this is (the TCP wire's 4-byte team id)."""

    team_id: StrictInt = Field(
        description="The team's id in the course's list.",
        json_schema_extra={"minimum": INT32_MIN, "maximum": INT32_MAX},
    )
    token: StrictStr | None = Field(
        default=None,
        description="The arena's shared secret, when it was started with --token.",
        json_schema_extra={"maxLength": MAX_TEXT},
    )
    session: StrictStr | None = Field(
        default=None,
        description="MQTT only: a random id the player picks per game and puts in every "
        "message it sends; the arena accepts a seat's messages only from the seated session.",
        json_schema_extra={"maxLength": MAX_TEXT},
    )

    def check_values(self, size: int | None = None) -> None:
        check_int32("team_id", self.team_id)
        for name in ("token", "session"):
            text = getattr(self, name)
            if text is not None and not 0 < len(text) <= MAX_TEXT:
                raise ProtocolError(name, text, f"is not 1..{MAX_TEXT} characters long")


class Bye(WireMessage):
    """player -> server, MQTT only: the player is gone (sent by the broker as its will)."""

    def check_values(self, size: int | None = None) -> None:
        return None


MODEL_OF: Final[Mapping[str, type[WireMessage]]] = {
    "hello": Hello,
    "initial_map": InitialMap,
    "position": PositionReply,
    "turn": Turn,
    "move": MoveReply,
    "game_over": GameOver,
    "bye": Bye,
}
TYPE_OF: Final[Mapping[type[WireMessage], str]] = {model: t for t, model in MODEL_OF.items()}
CLIENT_TYPES: Final = frozenset({"hello", "position", "move", "bye"})
SERVER_TYPES: Final = frozenset({"initial_map", "turn", "game_over"})

ENVELOPE: Final = frozenset({"type", "session"})
"""Keys a frame may carry besides the model's fields (``session``: MQTT's sender)."""


def encode_payload(message: Message | Hello | Bye, size: int, session: str | None = None) -> bytes:
    """The msgpack frame of ``message`` on a ``size`` board; ProtocolError if out of range.

    ``session`` is added to a player's frames over MQTT (see ``Hello.session``).
    """
    check_board_size(size)
    kind = TYPE_OF.get(type(message))
    if kind is None:
        raise TypeError(f"not a message of the protocol: {type(message).__name__}")
    message.check_values(size)
    data: dict[str, Any] = {"type": kind, **message.model_dump()}
    if session is not None and kind != "hello":
        data["session"] = session
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    return packed


def decode_payload(
    payload: bytes, size: int, allowed: Collection[str] = CLIENT_TYPES
) -> tuple[WireMessage, str | None]:
    """The message of one frame and its ``session`` (None if absent).

    ``allowed`` is the set of types this side may receive. Raises ProtocolError
    for an oversized frame, bytes that are not one msgpack map, an unknown or
    unexpected type, unknown keys, or values the message does not allow.
    """
    check_board_size(size)
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError("frame", len(payload), f"bytes is more than {MAX_PAYLOAD}")
    try:
        data = msgpack.unpackb(
            payload,
            raw=False,
            strict_map_key=True,
            max_str_len=MAX_TEXT,
            max_bin_len=0,
            max_array_len=max(size, 16),
            max_map_len=16,
            max_ext_len=0,
        )
    except Exception as exc:  # msgpack raises several unrelated types for junk
        raise ProtocolError("frame", payload[:32], f"is not one msgpack value ({exc})") from None
    if not isinstance(data, dict):
        raise ProtocolError("frame", type(data).__name__, "is not a msgpack map")
    kind = data.pop("type", None)
    if not isinstance(kind, str) or kind not in MODEL_OF:
        raise ProtocolError("type", kind, f"is not one of {', '.join(MODEL_OF)}")
    if kind not in allowed:
        raise ProtocolError("type", kind, f"is not expected here (only {', '.join(allowed)})")
    session = data.pop("session", None) if kind != "hello" else data.get("session")
    if session is not None and not isinstance(session, str):
        raise ProtocolError("session", session, "is not a string")
    message = MODEL_OF[kind].model_validate(data, context={"size": size})
    return message, session


def message_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of every frame: one definition per message type."""
    defs: dict[str, Any] = {}
    for kind, model in MODEL_OF.items():
        schema = model.model_json_schema()
        schema["properties"] = {"type": {"const": kind}, **schema["properties"]}
        schema["required"] = ["type", *schema.get("required", [])]
        if kind in CLIENT_TYPES and kind != "hello":
            schema["properties"]["session"] = {
                "type": "string",
                "maxLength": MAX_TEXT,
                "description": "MQTT only: the session id of the player's hello.",
            }
        schema["x-direction"] = "player to server" if kind in CLIENT_TYPES else "server to player"
        defs[model.__name__] = schema
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "battlesheep messages",
        "description": "One msgpack map per WebSocket frame or MQTT payload; 'type' names the "
        f"message. Frames larger than {MAX_PAYLOAD} bytes are refused.",
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in defs],
        "$defs": defs,
    }
