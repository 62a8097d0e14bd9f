"""Tuning by SPSA with real games: every iteration plays plus against minus.

Every iteration plays the plus set against the minus set (two seats each,
all six arrangements on one board per round) through the same runners as
``battlesheep tournament`` (``--jobs`` processes or ``--cluster``), on boards
no earlier iteration used, and the current estimate is written to the output
file after every iteration, so an interrupted run keeps what it found.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from arena.results import GameResult
from strategies.params import AgentParams, dump_toml
from tournament.entrants import builtin_entrant
from tournament.run import Tournament, candidate_score
from tournament.runner import Runner
from tournament.schedule import Schedule, pair_arrangements
from tournament.spsa import Spsa

GAMES_PER_ITERATION = len(pair_arrangements(0, 1))


@dataclass(frozen=True)
class TuneSettings:
    game: int
    seed: int
    time_limit: float
    games_per_iteration: int = GAMES_PER_ITERATION
    connect_timeout: float = 30.0
    log_dir: str = ""


@dataclass(frozen=True)
class Iteration:
    number: int
    plus: dict[str, float | int]
    minus: dict[str, float | int]
    result: float
    estimate: dict[str, float | int]


def spsa_result(results: list[GameResult]) -> float:
    """How much the plus side (entrant 0) beat the minus side (entrant 1), in [-1, 1]."""
    scores = [candidate_score(r, base=1, candidate=0) for r in results]
    valid = [s for s in scores if s is not None]
    return 2 * sum(valid) / len(valid) - 1 if valid else 0.0


def play_iteration(
    runner: Runner,
    agent: AgentParams,
    plus: dict[str, float | int],
    minus: dict[str, float | int],
    settings: TuneSettings,
    seed: int,
) -> float:
    limit = settings.time_limit
    entrants = (
        builtin_entrant("plus", agent.strategy, {**agent.params, **plus}, limit, agent.margin),
        builtin_entrant("minus", agent.strategy, {**agent.params, **minus}, limit, agent.margin),
    )
    schedule = Schedule(
        entrants,
        settings.game,
        seed,
        limit,
        "round-robin",
        settings.connect_timeout,
        settings.log_dir,
    )
    outcome = Tournament(schedule, settings.games_per_iteration).run(runner)
    if outcome.interrupted:
        raise KeyboardInterrupt
    return spsa_result(outcome.results)


def tune(
    runner: Runner,
    agent: AgentParams,
    spsa: Spsa,
    settings: TuneSettings,
    iterations: int,
    out: Path,
    source: str = "",
) -> Iterator[Iteration]:
    """Run the iterations, writing the estimate to ``out`` after each; yields each one."""
    for k in range(iterations):
        delta, plus, minus = spsa.ask()
        # Seeds never repeat across iterations: each one plays fresh boards.
        seed = settings.seed + k * settings.games_per_iteration
        result = play_iteration(runner, agent, plus, minus, settings, seed)
        spsa.tell(delta, result)
        estimate = spsa.values()
        tuned = agent.model_copy(update={"params": {**agent.params, **estimate}})
        out.write_text(dump_toml(tuned, f"tuned by battlesheep tune: {k + 1} iterations {source}"))
        yield Iteration(k + 1, plus, minus, result, estimate)
