"""MQTT's proof of the arena's token without sending it, and the MACs of every later frame.

Everyone on the broker reads every payload, so the token never travels:

1. player: ``hello`` {team_id, session, nonce: client nonce}
2. arena: ``challenge`` {session, nonce: server nonce}, sealed under the session key
3. player: ``proof`` {session, nonce: the server nonce, proof}, where
   ``proof = HMAC-SHA256(token, server_nonce || client_nonce || team || session)``
4. arena: the seat (or a sealed ``refused`` / ``game_over``), then the game.

Nonces are 16 random bytes, sent as 32 lowercase hex digits; ``||`` joins the
raw nonce bytes, the team id as 4 big-endian signed bytes and the session id
in UTF-8. The session key is ``HMAC-SHA256(token, "battlesheep-mqtt-key" 0x00
|| the same bytes)``. From the challenge on, every frame either way carries
``seq`` (1, 2, 3, ... per direction and key; the receiver accepts only a
``seq`` above the last it accepted) and ``mac = HMAC-SHA256(key, direction
0x0a || canonical JSON of the frame without "mac")``, hex; ``direction`` is
``to_server`` or ``to_player``, the canonical JSON has sorted keys, no spaces,
ASCII only. The broker publishes the player's will when it vanishes: that
``bye`` is prepared before the challenge, so it is sealed with ``seq`` 0
under ``HMAC-SHA256(token, "battlesheep-mqtt-will" 0x00 || client_nonce ||
team || session)``, valid for the one connection that said that nonce.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import struct
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "MAC_HEX",
    "NONCE_HEX",
    "TO_PLAYER",
    "TO_SERVER",
    "WILL_SEQ",
    "Challenges",
    "MacChannel",
    "Pending",
    "canonical",
    "is_hex",
    "new_nonce",
    "proof_of",
    "session_channel",
    "will_channel",
]

NONCE_HEX: Final = 32
MAC_HEX: Final = 64
WILL_SEQ: Final = 0
TO_SERVER: Final = b"to_server"
TO_PLAYER: Final = b"to_player"
_KEY_LABEL: Final = b"battlesheep-mqtt-key\x00"
_WILL_LABEL: Final = b"battlesheep-mqtt-will\x00"


def new_nonce() -> str:
    return secrets.token_hex(NONCE_HEX // 2)


def is_hex(text: str, length: int) -> bool:
    return len(text) == length and all(c in "0123456789abcdef" for c in text)


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def _binding(server_nonce: str, client_nonce: str, team: int, session: str) -> bytes:
    return (
        bytes.fromhex(server_nonce)
        + bytes.fromhex(client_nonce)
        + struct.pack(">i", team)
        + session.encode()
    )


def proof_of(token: str, server_nonce: str, client_nonce: str, team: int, session: str) -> str:
    """What the player sends to prove it knows ``token`` (hex)."""
    return _hmac(token.encode(), _binding(server_nonce, client_nonce, team, session)).hex()


def canonical(data: Mapping[str, Any]) -> bytes:
    """The bytes a MAC covers: ``data`` as JSON with sorted keys, no spaces, ASCII only."""
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


class MacChannel:
    """One key's frames: seals ours with a rising ``seq``, checks theirs (``seq`` must rise)."""

    def __init__(self, key: bytes, sends: bytes, first_seq: int = 1) -> None:
        self._key = key
        self.sends = sends
        self.receives = TO_PLAYER if sends == TO_SERVER else TO_SERVER
        self._next = first_seq
        self.received = 0
        """The highest ``seq`` accepted so far."""

    def _mac(self, direction: bytes, signed: bytes) -> str:
        return _hmac(self._key, direction + b"\n" + signed).hex()

    def seal(self, data: dict[str, Any]) -> None:
        """Add ``seq`` and ``mac`` to an outgoing frame's map."""
        data["seq"] = self._next
        self._next += 1
        data["mac"] = self._mac(self.sends, canonical(data))

    def check(self, signed: bytes, seq: int | None, mac: str | None, *, will: bool = False) -> str:
        """'' if an incoming frame is genuine and new (its ``seq`` is then remembered), else why
        not; ``signed`` is its canonical bytes without ``mac``."""
        if seq is None or mac is None:
            return "no mac"
        if not hmac.compare_digest(mac.encode(), self._mac(self.receives, signed).encode()):
            return "a wrong mac"
        if will:
            return "" if seq == WILL_SEQ else "a wrong seq"
        if seq <= self.received:
            return f"seq {seq} replayed (last {self.received})"
        self.received = seq
        return ""


def session_channel(
    token: str, server_nonce: str, client_nonce: str, team: int, session: str, sends: bytes
) -> MacChannel:
    key = _hmac(token.encode(), _KEY_LABEL + _binding(server_nonce, client_nonce, team, session))
    return MacChannel(key, sends)


def will_channel(
    token: str, client_nonce: str, team: int, session: str, sends: bytes
) -> MacChannel:
    """The key of the ``bye`` the broker publishes as the player's will (``seq`` 0)."""
    binding = bytes.fromhex(client_nonce) + struct.pack(">i", team) + session.encode()
    return MacChannel(_hmac(token.encode(), _WILL_LABEL + binding), sends, first_seq=WILL_SEQ)


@dataclass(frozen=True, slots=True)
class Pending:
    """A challenge the arena sent and the player has not answered yet."""

    team: int
    session: str
    client_nonce: str
    server_nonce: str
    channel: MacChannel
    """The arena's end of the session key."""


class Challenges:
    """The arena's open challenges, at most ``per_team`` per team (the oldest go first)."""

    def __init__(self, token: str, per_team: int = 16) -> None:
        self._token = token
        self._per_team = per_team
        self._open: dict[int, OrderedDict[str, Pending]] = {}

    def issue(self, team: int, session: str, client_nonce: str) -> Pending:
        server_nonce = new_nonce()
        channel = session_channel(self._token, server_nonce, client_nonce, team, session, TO_PLAYER)
        pending = Pending(team, session, client_nonce, server_nonce, channel)
        open_ = self._open.setdefault(team, OrderedDict())
        open_[server_nonce] = pending
        while len(open_) > self._per_team:
            open_.popitem(last=False)
        return pending

    def answer(self, team: int, session: str, server_nonce: str, proof: str) -> Pending | str:
        """The challenge ``proof`` answers (closed now), or why it answers none."""
        pending = self._open.get(team, OrderedDict()).get(server_nonce)
        if pending is None or pending.session != session:
            return "answers no open challenge"
        del self._open[team][server_nonce]  # one try per challenge
        expected = proof_of(self._token, server_nonce, pending.client_nonce, team, session)
        if not hmac.compare_digest(proof.encode(), expected.encode()):
            return "a wrong token"
        return pending

    def will_of(self, team: int, session: str, client_nonce: str) -> MacChannel:
        return will_channel(self._token, client_nonce, team, session, TO_PLAYER)
