"""Transport URLs and MQTT topics, shared by the client and the arena (no sockets).

- ``tcp://host:port``: the course's binary protocol.
- ``ws://host:port/<path>``: WebSocket, one msgpack message per binary frame.
- ``mqtt://[user[:password]@]host:port[/<match>]``: a broker; the user and
  password are the broker's credentials, ``<match>`` names the match (default
  ``local``) so several matches can share a broker. Topics:
  ``battlesheep/<match>/<team>/to_server`` (player -> arena) and
  ``battlesheep/<match>/<team>/to_player`` (arena -> player), QoS 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import unquote, urlsplit

__all__ = [
    "DEFAULT_MATCH",
    "DEFAULT_PORTS",
    "TOPIC_ROOT",
    "Endpoint",
    "parse_endpoint",
    "team_of_topic",
    "to_player_topic",
    "to_server_topic",
    "to_server_wildcard",
]

Scheme = Literal["tcp", "ws", "mqtt"]
DEFAULT_PORTS: Final[dict[str, int]] = {"tcp": 8887, "ws": 8765, "mqtt": 1883}
DEFAULT_MATCH: Final = "local"
TOPIC_ROOT: Final = "battlesheep"
_MATCH_RE: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed transport URL."""

    scheme: Scheme
    host: str
    port: int
    path: str = "/"
    """WebSocket: the request path; MQTT: ``/<match>``."""
    username: str | None = None
    password: str | None = None

    @property
    def match(self) -> str:
        """MQTT: the match id of the topics."""
        return self.path.strip("/") or DEFAULT_MATCH

    @property
    def url(self) -> str:
        """The URL without credentials, for logs."""
        return f"{self.scheme}://{self.host}:{self.port}{self.path if self.scheme != 'tcp' else ''}"


def parse_endpoint(url: str) -> Endpoint:
    """Parse a ``tcp://``, ``ws://`` or ``mqtt://`` URL; ValueError saying what is wrong."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"{url!r}: the scheme must be tcp://, ws:// or mqtt://")
    if not parts.hostname:
        raise ValueError(f"{url!r}: no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{url!r}: the port is not a number in 0..65535") from None
    path = parts.path or "/"
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: a query or fragment is not allowed")
    if scheme == "tcp" and path != "/":
        raise ValueError(f"{url!r}: a tcp:// URL has no path")
    if scheme == "mqtt":
        match = path.strip("/") or DEFAULT_MATCH
        if not _MATCH_RE.fullmatch(match):
            raise ValueError(
                f"{url!r}: the match id {match!r} must be 1-64 letters, digits, '_', '.' or '-'"
            )
        path = "/" + match
    if (parts.username or parts.password) and scheme != "mqtt":
        raise ValueError(f"{url!r}: credentials belong to mqtt:// URLs (the broker's) only")
    return Endpoint(
        scheme=scheme,  # type: ignore[arg-type]
        host=parts.hostname,
        port=DEFAULT_PORTS[scheme] if port is None else port,
        path=path,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def to_server_topic(match: str, team: int) -> str:
    return f"{TOPIC_ROOT}/{match}/{team}/to_server"


def to_player_topic(match: str, team: int) -> str:
    return f"{TOPIC_ROOT}/{match}/{team}/to_player"


def to_server_wildcard(match: str) -> str:
    return f"{TOPIC_ROOT}/{match}/+/to_server"


def team_of_topic(topic: str, match: str) -> int | None:
    """The team of a ``.../<team>/to_server`` topic of this match, None if it is not one."""
    parts = topic.split("/")
    if len(parts) != 4 or parts[:2] != [TOPIC_ROOT, match] or parts[3] != "to_server":
        return None
    text = parts[2]
    if not re.fullmatch(r"-?[0-9]{1,10}", text):
        return None
    return int(text)
