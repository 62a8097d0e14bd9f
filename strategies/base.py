"""The strategy interface: anytime choices under a deadline.

A strategy reads and searches a ``GameState`` it is given (the caller's copy:
it may apply and undo on it freely) and posts its best choice so far to the
``Budget`` as it goes, so the caller can send that choice at the deadline even
if the search has not returned. It never sleeps, never touches a socket, and
its only contact with time is the budget.
"""

from __future__ import annotations

import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from state.game import GameState, Move
from state.observe import IngestReport
from state.settings import GameSetting


class StrategyParams(BaseModel):
    """Base of every strategy's parameters: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int | None = None


def listed(value: object) -> object:
    """A list-valued parameter as ``--param key=a,b,c`` gives it (one string): the
    comma-separated items, stripped, empty ones dropped; any other value as it is (a
    parameter file's list). For the parameter's own before-validator."""
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return value


class ConfigError(ValueError):
    """Bad user configuration (a parameter file, an input file, an option, a seat or entrant
    spec); the message names where it comes from and the key at fault. Every command ends
    on one with one line ``battlesheep: error: ...`` and exit 2 (``client.errors``)."""


class ParameterError(ConfigError):
    """A parameter name or value a strategy does not accept."""


class Budget:
    """The time a choice may take, and the place to post the best choice so far.

    ``expired()`` is cheap enough to call every few hundred nodes. ``stop()``
    (from another thread) makes it expire at once.
    """

    __slots__ = ("_stop", "best_move", "best_placement", "deadline", "info", "started")

    def __init__(self, deadline: float) -> None:
        self.started = time.monotonic()
        self.deadline = deadline
        self._stop = threading.Event()
        self.best_move: Move | None = None
        self.best_placement: int | None = None
        # Search figures of this choice (iterations, nodes, depth...), for logs.
        self.info: dict[str, float] = {}

    @classmethod
    def seconds(cls, seconds: float) -> Budget:
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return self._stop.is_set() or time.monotonic() >= self.deadline

    def stop(self) -> None:
        self._stop.set()

    def offer_move(self, move: Move | None) -> None:
        self.best_move = move

    def offer_placement(self, cell: int) -> None:
        self.best_placement = cell


class Strategy(ABC):
    """Base of all strategies. ``name`` is what ``--strategy`` and match seats use."""

    name: ClassVar[str]
    Params: ClassVar[type[StrategyParams]] = StrategyParams

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        self.params = self.validated(params)
        self.rng = random.Random(self.params.seed)
        self.setting: GameSetting | None = None
        self.seat = 0

    @classmethod
    def validated(cls, params: Mapping[str, Any] | None = None) -> StrategyParams:
        """``params`` as this strategy's Params, or ParameterError naming what is wrong."""
        try:
            return cls.Params(**(params or {}))
        except ValidationError as exc:
            raise ParameterError(f"strategy {cls.name!r}: {cls._problems(exc)}") from None

    @classmethod
    def _problems(cls, exc: ValidationError) -> str:
        """What was wrong with the parameters, one clause per key."""
        known = ", ".join(sorted(cls.Params.model_fields))
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "params"
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown parameter {key!r} (known: {known})")
            else:
                problems.append(f"{key}: {err['msg']}")
        return "; ".join(problems)

    def new_game(self, setting: GameSetting, seat: int) -> None:
        """Forget everything learned in an earlier game."""
        self.setting = setting
        self.seat = seat

    def observe(self, state: GameState, report: IngestReport) -> None:
        """A board was ingested into ``state``; ``report`` holds the actions that explain it.

        Called before each choice, with the caller's own state (read it, do not keep
        or change it). Strategies that reason about hidden counts (game 3) learn here;
        ``report.resynced`` says the history was lost and the state rebuilt.
        """
        return None  # most strategies see everything they need in the state

    def close(self) -> None:
        """Release what the strategy holds beyond memory (worker processes); the client
        calls it when the session ends."""
        return None

    @abstractmethod
    def place(self, state: GameState, budget: Budget) -> int:
        """The border cell to put all sheep on (``state.to_move`` is this seat)."""

    @abstractmethod
    def move(self, state: GameState, budget: Budget) -> Move | None:
        """The move to play, or None when there is no legal move."""
