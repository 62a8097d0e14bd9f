"""The client's clock: the server's limit per reply and the margin kept back from it.

``TimeLimits.for_limit`` is the one rule that derives a margin from a limit;
``play``, tournament entrants and the build's check game all use it.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TIME_LIMIT = 3.0
DEFAULT_MARGIN = 0.25
"""Seconds kept back from the time limit for the reply to reach the server.

Measured with ``battlesheep bench client --deadline-turns 150`` (a search that
computes until its budget expires, margin 0): on the 2-core development
machine shared with other jobs, replies reached the server 0.7 ms after the
deadline at the median and 12 ms at p99 (20 ms max); with two such benches at
once (load average 4 on 2 cores) 2-3 ms median, 31-35 ms p99, 52 ms max. The
margin doubles that worst case (the course server measures on a loaded machine
too), adds a Windows timer tick (15.6 ms) and rounds up: 0.25 s, 8 % of 3 s.
"""


@dataclass(frozen=True, slots=True)
class TimeLimits:
    """The server's limit per reply and the part of it the client keeps back."""

    time_limit: float = DEFAULT_TIME_LIMIT
    margin: float = DEFAULT_MARGIN

    def __post_init__(self) -> None:
        if self.time_limit <= 0:
            raise ValueError(f"the time limit must be positive, not {self.time_limit}")
        if not 0 <= self.margin < self.time_limit:
            raise ValueError(
                f"the margin must be at least 0 and below the time limit {self.time_limit},"
                f" not {self.margin}"
            )

    @classmethod
    def for_limit(
        cls, time_limit: float, margin: float | None = None, *, wanted: float | None = None
    ) -> TimeLimits:
        """The limits for ``time_limit``: the one rule that derives a margin from a limit.

        An explicit ``margin`` (``play --margin``) is taken as given. Without one, the
        margin is ``wanted`` (a parameter file's ``margin``; by default ``DEFAULT_MARGIN``)
        capped at a quarter of the limit, so short test limits keep most of their time.
        ``play``, tournament entrants and the build's check game all derive it here.
        """
        if margin is None:
            margin = min(DEFAULT_MARGIN if wanted is None else wanted, time_limit / 4)
        return cls(time_limit, margin)

    def deadline(self, received_at: float) -> float:
        """When the reply to a frame whose last byte arrived at ``received_at`` must go."""
        return received_at + self.time_limit - self.margin
