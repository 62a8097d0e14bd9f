"""The message models as msgpack maps: the frames of the WebSocket and MQTT transports.

One message is one msgpack map: the model's fields under their own names plus
``"type"``, one of ``TYPE_OF`` (``"initial_map"``, ``"turn"``, ``"game_over"``
from the server; ``"hello"``, ``"position"``, ``"move"`` from a player, and
``"bye"``, an MQTT player's will).
Boards are arrays of N arrays of N ints, ``map[x][y]`` as on the TCP wire.
The models are the same pydantic models as the TCP codec's, so a frame is
validated exactly like a TCP frame (board side against the game's N), and
every failure is a ``ProtocolError`` naming the field. ``Hello`` replaces the
TCP team id: it carries the team id and, over WebSocket, the arena's shared
token when it asks for one; over MQTT the player's session id and nonce
instead (the token is proved, never sent, see ``protocol.mqtt_auth``).
Besides the model's fields a frame may carry the envelope: ``session`` (MQTT:
whose frame), ``seq`` and ``mac`` (MQTT with a token); ``decode_envelope``
returns them with the canonical bytes the MAC covers.

``message_schema()`` is the JSON Schema of every message, which ``battlesheep
schema`` prints for agents written in other languages.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgpack
from pydantic import Field, StrictInt, StrictStr

from protocol.errors import ProtocolError
from protocol.limits import INT32_MAX, INT32_MIN, check_board_size, check_int32
from protocol.messages import (
    GameOver,
    InitialMap,
    MoveReply,
    PositionReply,
    Turn,
    WireMessage,
)
from protocol.mqtt_auth import MAC_HEX, NONCE_HEX, MacChannel, canonical, is_hex

__all__ = [
    "CLIENT_TYPES",
    "MAX_PAYLOAD",
    "MQTT_SERVER_TYPES",
    "SERVER_TYPES",
    "TYPE_OF",
    "Bye",
    "Challenge",
    "Envelope",
    "Hello",
    "Proof",
    "Refused",
    "decode_envelope",
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
"""Characters of a token, session id or reason."""


def _check_text(name: str, text: str | None) -> None:
    if text is not None and not 0 < len(text) <= MAX_TEXT:
        raise ProtocolError(name, text, f"is not 1..{MAX_TEXT} characters long")


def _check_hex(name: str, text: str | None, length: int) -> None:
    if text is not None and not is_hex(text, length):
        raise ProtocolError(name, text, f"is not {length} lowercase hex digits")


class Hello(WireMessage):
    """player -> server, first: who this is (the TCP wire's 4-byte team id)."""

    team_id: StrictInt = Field(
        description="The team's id in the course's list.",
        json_schema_extra={"minimum": INT32_MIN, "maximum": INT32_MAX},
    )
    token: StrictStr | None = Field(
        default=None,
        description="WebSocket only: the arena's shared secret, when it was started with "
        "--token. Never over MQTT, where every broker client reads it: there the arena "
        "refuses a hello with a token and the player proves it instead (nonce, challenge).",
        json_schema_extra={"maxLength": MAX_TEXT},
    )
    session: StrictStr | None = Field(
        default=None,
        description="MQTT only: a random id the player picks per game and puts in every "
        "message it sends; the arena accepts a seat's messages only from the seated session.",
        json_schema_extra={"maxLength": MAX_TEXT},
    )
    nonce: StrictStr | None = Field(
        default=None,
        description="MQTT with a token: the player's fresh random nonce for this connection "
        f"({NONCE_HEX} hex digits); the arena answers with a challenge.",
        json_schema_extra={"pattern": f"^[0-9a-f]{{{NONCE_HEX}}}$"},
    )

    def check_values(self, size: int | None = None) -> None:
        check_int32("team_id", self.team_id)
        _check_text("token", self.token)
        _check_text("session", self.session)
        _check_hex("nonce", self.nonce, NONCE_HEX)


class Bye(WireMessage):
    """player -> server, MQTT only: the player is gone (sent by the broker as its will)."""

    def check_values(self, size: int | None = None) -> None:
        return None


class Challenge(WireMessage):
    """server -> player, MQTT with a token: answer a hello with this nonce (sealed)."""

    nonce: StrictStr = Field(
        description=f"The arena's fresh random nonce ({NONCE_HEX} hex digits).",
        json_schema_extra={"pattern": f"^[0-9a-f]{{{NONCE_HEX}}}$"},
    )

    def check_values(self, size: int | None = None) -> None:
        _check_hex("nonce", self.nonce, NONCE_HEX)


class Proof(WireMessage):
    """player -> server, MQTT with a token: the answer to a challenge."""

    nonce: StrictStr = Field(
        description="The nonce of the challenge this answers.",
        json_schema_extra={"pattern": f"^[0-9a-f]{{{NONCE_HEX}}}$"},
    )
    proof: StrictStr = Field(
        description="HMAC-SHA256(token, server_nonce || client_nonce || team_id as 4 "
        "big-endian bytes || session in UTF-8), the nonces as raw bytes; hex.",
        json_schema_extra={"pattern": f"^[0-9a-f]{{{MAC_HEX}}}$"},
    )

    def check_values(self, size: int | None = None) -> None:
        _check_hex("nonce", self.nonce, NONCE_HEX)
        _check_hex("proof", self.proof, MAC_HEX)


class Refused(WireMessage):
    """server -> player, MQTT: this session has no seat (any more); the player stops."""

    reason: StrictStr = Field(
        description="Why, for the player's log.", json_schema_extra={"maxLength": MAX_TEXT}
    )

    def check_values(self, size: int | None = None) -> None:
        _check_text("reason", self.reason)


MODEL_OF: Final[Mapping[str, type[WireMessage]]] = {
    "hello": Hello,
    "initial_map": InitialMap,
    "position": PositionReply,
    "turn": Turn,
    "move": MoveReply,
    "game_over": GameOver,
    "bye": Bye,
    "challenge": Challenge,
    "proof": Proof,
    "refused": Refused,
}
TYPE_OF: Final[Mapping[type[WireMessage], str]] = {model: t for t, model in MODEL_OF.items()}
CLIENT_TYPES: Final = frozenset({"hello", "position", "move", "bye", "proof"})
SERVER_TYPES: Final = frozenset({"initial_map", "turn", "game_over"})
MQTT_SERVER_TYPES: Final = SERVER_TYPES | {"challenge", "refused"}
"""What an MQTT player may receive: the game's frames, and the arena's handshake."""

ENVELOPE: Final = frozenset({"type", "session", "seq", "mac"})
"""Keys a frame may carry besides the model's fields (MQTT: the sender's session, the MAC)."""

SEQ_MAX: Final = 2**53 - 1
"""The largest ``seq`` (JSON-safe)."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """One decoded frame: the message, its envelope, and the bytes its ``mac`` covers."""

    message: WireMessage
    session: str | None
    seq: int | None
    mac: str | None
    signed: bytes
    """``mqtt_auth.canonical`` of the frame's map without ``mac``."""


def encode_payload(
    message: WireMessage, size: int, session: str | None = None, seal: MacChannel | None = None
) -> bytes:
    """The msgpack frame of ``message`` on a ``size`` board; ProtocolError if out of range.

    ``session`` is added to every MQTT frame but the hello, which has it as a
    field (see ``Hello.session``); ``seal`` adds ``seq`` and ``mac``.
    """
    check_board_size(size)
    kind = TYPE_OF.get(type(message))
    if kind is None:
        raise TypeError(f"not a message of the protocol: {type(message).__name__}")
    message.check_values(size)
    data: dict[str, Any] = {"type": kind, **message.model_dump()}
    if session is not None and kind != "hello":
        data["session"] = session
    if seal is not None:
        seal.seal(data)
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    return packed


def decode_payload(
    payload: bytes, size: int, allowed: Collection[str] = CLIENT_TYPES
) -> tuple[WireMessage, str | None]:
    """The message of one frame and its ``session`` (None if absent); see ``decode_envelope``."""
    envelope = decode_envelope(payload, size, allowed)
    return envelope.message, envelope.session


def decode_envelope(payload: bytes, size: int, allowed: Collection[str] = CLIENT_TYPES) -> Envelope:
    """One frame: its message, envelope and signed bytes.

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
    mac = data.pop("mac", None)
    unsigned = dict(data)
    kind = data.pop("type", None)
    if not isinstance(kind, str) or kind not in MODEL_OF:
        raise ProtocolError("type", kind, f"is not one of {', '.join(MODEL_OF)}")
    if kind not in allowed:
        raise ProtocolError("type", kind, f"is not expected here (only {', '.join(allowed)})")
    session = data.pop("session", None) if kind != "hello" else data.get("session")
    if session is not None and not isinstance(session, str):
        raise ProtocolError("session", session, "is not a string")
    seq = data.pop("seq", None)
    if seq is not None and (type(seq) is not int or not 0 <= seq <= SEQ_MAX):
        raise ProtocolError("seq", seq, f"is not an int in 0..{SEQ_MAX}")
    if mac is not None and not (isinstance(mac, str) and is_hex(mac, MAC_HEX)):
        raise ProtocolError("mac", mac, f"is not {MAC_HEX} lowercase hex digits")
    message = MODEL_OF[kind].model_validate(data, context={"size": size})
    return Envelope(message, session, seq, mac, canonical(unsigned))


_ENVELOPE_SCHEMA: Final[Mapping[str, Any]] = {
    "session": {
        "type": "string",
        "maxLength": MAX_TEXT,
        "description": "MQTT only: the session id of the player's hello (player frames, "
        "challenge, refused).",
    },
    "seq": {
        "type": "integer",
        "minimum": 0,
        "maximum": SEQ_MAX,
        "description": "MQTT with a token, from the challenge on: 1, 2, 3, ... per direction; "
        "a receiver takes only a seq above the last it took (0: the will's bye).",
    },
    "mac": {
        "type": "string",
        "pattern": f"^[0-9a-f]{{{MAC_HEX}}}$",
        "description": "MQTT with a token: HMAC-SHA256(key, direction + newline + the frame "
        "without mac as JSON with sorted keys, no spaces, ASCII only), hex; direction is "
        "to_server or to_player; key = HMAC-SHA256(token, 'battlesheep-mqtt-key' 0x00 || "
        "server_nonce || client_nonce || team_id || session), or for the will's bye "
        "HMAC-SHA256(token, 'battlesheep-mqtt-will' 0x00 || client_nonce || team_id || session).",
    },
}


def message_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of every frame: one definition per message type."""
    defs: dict[str, Any] = {}
    for kind, model in MODEL_OF.items():
        schema = model.model_json_schema()
        schema["properties"] = {"type": {"const": kind}, **schema["properties"]}
        schema["required"] = ["type", *schema.get("required", [])]
        if kind != "hello":
            schema["properties"].update(_ENVELOPE_SCHEMA)
        schema["x-direction"] = "player to server" if kind in CLIENT_TYPES else "server to player"
        defs[model.__name__] = schema
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "battlesheep messages",
        "description": "One msgpack map per WebSocket frame or MQTT payload; 'type' names the "
        f"message. Frames larger than {MAX_PAYLOAD} bytes are refused. Over MQTT with a token "
        "the token is never sent: hello {nonce} -> challenge -> proof, then every frame "
        "either way carries seq and mac (see the fields' descriptions).",
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in defs],
        "$defs": defs,
    }
