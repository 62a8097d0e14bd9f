"""The agent client: glues protocol, state and strategy; owns the connection and the clock.

- ``GameSession`` (``client.session``): one seat's game, transport-free. Decoded
  messages in (with the time their last byte arrived), reply messages out; the
  ``GameState`` is updated in place by ``state.observe.ingest``; game 3 counts of
  other seats are masked before anything sees them.
- ``SearchRunner`` (``client.runner``): the strategy in a worker thread under a
  hard deadline, with a legal fallback ready before the search starts.
- ``play_tcp`` (``client.tcp``): the course's TCP transport with connect retry,
  reconnect and resynchronisation.
- ``battlesheep play`` / ``battlesheep sample`` (``client.cli``), and
  ``battlesheep bench client`` (``bench.client``).
"""

from client.clock import TimeLimits
from client.errors import ClientError, ConnectionFailed, ExitCode, ServerDataError
from client.runner import Outcome, SearchRunner
from client.session import GameSession, GameSummary
from client.tcp import ConnectOptions, play_tcp

__all__ = [
    "ClientError",
    "ConnectOptions",
    "ConnectionFailed",
    "ExitCode",
    "GameSession",
    "GameSummary",
    "Outcome",
    "SearchRunner",
    "ServerDataError",
    "TimeLimits",
    "play_tcp",
]
