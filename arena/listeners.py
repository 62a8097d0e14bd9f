"""The arena's ways in besides the course's TCP socket, built from ``--listen`` URLs.

``ws://`` URLs become ``arena.ws_listener.WsListener``s, ``mqtt://`` URLs
``arena.mqtt_listener.MqttListener``s; both seat players in the same ``Lobby``
as TCP, so one game can mix transports. ``tcp://`` is the lobby's own socket
(``arena.tcp_listener``).
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.lobby import Listener
from arena.mqtt_listener import MqttListener
from arena.ws_listener import WsListener
from protocol.endpoints import parse_endpoint

__all__ = ["make_listeners"]


def make_listeners(urls: Sequence[str], token: str | None = None) -> list[Listener]:
    """Listeners for the ``ws://`` and ``mqtt://`` URLs (``tcp://`` ones are skipped)."""
    listeners: list[Listener] = []
    for url in urls:
        endpoint = parse_endpoint(url)
        if endpoint.scheme == "ws":
            listeners.append(WsListener(endpoint, token))
        elif endpoint.scheme == "mqtt":
            listeners.append(MqttListener(endpoint, token))
    return listeners
