"""The client's clock: the server's limit per reply and the margin kept back from it.

``TimeLimits.for_limit`` is the one rule that derives a margin from a limit;
``play``, tournament entrants and the build's check game all use it.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TIME_LIMIT = 3.0
DEFAULT_MARGIN = 0.06
"""Seconds kept back from the time limit for the reply to reach the server.

Measured with ``battlesheep bench client --deadline-turns 150 --deadline-budget 0.3
--deadline-strategy hybrid`` (the main strategy searching until its deadline,
margin 0) on the 2-core development machine, with the collector's full
collections kept out of the search (``client.runner``): with a two-process
benchmark running beside it, replies reached the server at most 5.9 ms after the
deadline (p99 5.0 ms); with four CPU hogs as well (load about 7 on 2 cores), at
most 15.8 ms (p99 13.1 ms). The margin doubles that worst case, adds a Windows
timer tick (15.6 ms) and rounds up: 0.06 s, 2 % of 3 s. (It was 0.25 s while
automatic full collections could stop the client for up to 0.2 s mid-search.)
A seat whose replies still leave late widens its own margin (``ReplyClock``).
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


class ReplyClock:
    """One seat's deadlines: the limits' margin, widened when replies leave late.

    ``sent`` is told when each reply left against the deadline it was given; a reply
    that left ``d`` seconds past its deadline (a loaded machine, a slow event loop)
    widens every later deadline by ``2 * d``, up to a quarter of the limit in all.
    The margin never narrows again in a game: a machine that was slow once may be
    slow again.
    """

    def __init__(self, limits: TimeLimits) -> None:
        self.limits = limits
        self.widened = 0.0
        """Seconds taken off every deadline on top of ``limits.margin``."""

    @property
    def margin(self) -> float:
        return self.limits.margin + self.widened

    def deadline(self, received_at: float) -> float:
        """When the reply to a frame whose last byte arrived at ``received_at`` must go."""
        return self.limits.deadline(received_at) - self.widened

    def sent(self, deadline: float, sent_at: float) -> bool:
        """Note a reply that left at ``sent_at``; True if the margin was widened."""
        overrun = sent_at - deadline
        cap = max(0.0, self.limits.time_limit / 4 - self.limits.margin)
        widened = min(cap, max(self.widened, 2 * overrun))
        if widened <= self.widened:
            return False
        self.widened = widened
        return True
