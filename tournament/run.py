"""A tournament run: plan, play (resuming finished games), stop early on an SPRT verdict.

Results file: JSON lines. The first line is the header ``{"tournament": {...}}``
(entrants with their commands, setting, seed, time limit, format); every
other line is one game's result as ``arena/results.py`` documents it, with
``entrants`` (names by seat) and ``seats`` (entrant indices by seat) added.
A run given the same file with ``resume`` reads it back, checks that the
header describes the same tournament, and plays only the games not in it.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.results import GameResult, ResultsError, parse_result, result_line
from strategies.base import ConfigError
from tournament.runner import Runner
from tournament.schedule import Schedule
from tournament.stats import Sprt

logger = logging.getLogger(__name__)


def header_of(schedule: Schedule) -> dict[str, Any]:
    header: dict[str, Any] = {
        "tournament": {
            "entrants": [
                {"name": e.name, "command": e.command, "team": e.team} for e in schedule.entrants
            ],
            "game": schedule.game,
            "seed": schedule.seed,
            "time_limit": schedule.time_limit,
            "format": schedule.fmt,
        }
    }
    if schedule.reveal:
        # Only when set, so that the files of runs without it still resume.
        header["tournament"]["reveal"] = list(schedule.reveal)
    return header


def read_results_file(path: Path) -> tuple[dict[str, Any] | None, list[GameResult]]:
    """The header and the game results of a results file (a torn last line is dropped)."""
    header = None
    results = []
    lines = path.read_text().splitlines() if path.exists() else []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):  # the run was killed while writing it
                logger.warning("%s: line %s is incomplete; that game is played again", path, number)
                continue
            raise ConfigError(f"{path}: line {number} is not JSON") from None
        if "tournament" in item:
            header = item
        elif "index" in item:
            try:
                results.append(parse_result(item, f"{path}, line {number}"))
            except ResultsError as exc:
                raise ConfigError(str(exc)) from None
        else:
            raise ConfigError(f"{path}: line {number} is neither a header nor a game result")
    return header, results


def _comparable(header: dict[str, Any]) -> str:
    return json.dumps(header, sort_keys=True)


def prepare_results_file(path: Path, schedule: Schedule, resume: bool) -> dict[int, GameResult]:
    """Finished games by index (empty for a new run); the file is left holding the header
    and exactly those games."""
    header = header_of(schedule)
    done: dict[int, GameResult] = {}
    if path.exists() and path.stat().st_size > 0:
        if not resume:
            raise ConfigError(f"results file {path} exists: give --resume, or another file")
        old_header, results = read_results_file(path)
        if old_header is None:
            raise ConfigError(f"{path} has no tournament header: not a tournament results file")
        if _comparable(old_header) != _comparable(header):
            raise ConfigError(
                f"{path} is from a different tournament (entrants, setting, seed, time limit"
                " or format differ); resume with the same options or use another file"
            )
        for result in results:
            expected = schedule.task(result.index)
            if result.seed != expected.seed or result.entrants != list(expected.names):
                raise ConfigError(f"{path}: game {result.index} does not fit the schedule")
            done[result.index] = result
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:  # rewritten so a torn last line is gone before appending
        fh.write(json.dumps(header) + "\n")
        for index in sorted(done):
            fh.write(result_line(done[index]) + "\n")
    return done


def header_seed(path: Path) -> int | None:
    """The seed a results file's tournament used (for resuming without --seed)."""
    if not path.exists():
        return None
    header, _ = read_results_file(path)
    return None if header is None else int(header["tournament"]["seed"])


def candidate_score(result: GameResult, base: int, candidate: int) -> float | None:
    """The candidate's mean seat-against-seat score against the base in one game."""
    seats = result.seats or []
    points = result.points
    total = count = 0.0
    for i, a in enumerate(seats):
        for j, b in enumerate(seats):
            if a == candidate and b == base:
                total += 1.0 if points[i] > points[j] else 0.5 if points[i] == points[j] else 0.0
                count += 1
    return total / count if count else None


@dataclass
class RunProgress:
    """What a run reports after every game."""

    done: int
    total: int
    started: float
    results: list[GameResult]
    sprt: Sprt | None = None
    llr_history: list[tuple[int, float]] = field(default_factory=list)

    @property
    def games_per_s(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else math.nan


@dataclass
class RunOutcome:
    results: list[GameResult]
    sprt: Sprt | None
    llr_history: list[tuple[int, float]]
    verdict: str | None
    interrupted: bool
    played: int
    seconds: float


@dataclass
class Tournament:
    schedule: Schedule
    games: int
    results_path: Path | None = None
    resume: bool = False
    sprt: tuple[float, float] | None = None
    sprt_alpha: float = 0.05
    sprt_beta: float = 0.05
    sprt_min_games: int = 16

    def run(
        self, runner: Runner, on_game: Callable[[RunProgress], None] | None = None
    ) -> RunOutcome:
        self.schedule.check()
        done: dict[int, GameResult] = {}
        if self.results_path is not None:
            done = prepare_results_file(self.results_path, self.schedule, self.resume)
        sprt = None
        history: list[tuple[int, float]] = []
        if self.sprt is not None:
            if len(self.schedule.entrants) != 2:
                raise ConfigError("--sprt needs two entrants (A, the base, and B, the candidate)")
            sprt = Sprt(
                self.sprt[0], self.sprt[1], self.sprt_alpha, self.sprt_beta, self.sprt_min_games
            )
        results = [done[i] for i in sorted(done) if i < self.games]
        results_before = list(results)
        if sprt is not None:
            for result in results:
                self._feed(sprt, result, history)
        progress = RunProgress(len(results), self.games, time.monotonic(), results, sprt, history)
        verdict = sprt.verdict() if sprt is not None else None
        todo = [i for i in range(self.games) if i not in done]
        started = time.monotonic()
        interrupted = False
        if verdict is None and todo:
            stream = runner.results(self.schedule.task(i) for i in todo)
            try:
                verdict = self._consume(stream, progress, on_game)
            except KeyboardInterrupt:
                interrupted = True
                logger.warning("interrupted: finished games are kept; --resume continues")
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        return RunOutcome(
            sorted(results, key=lambda r: r.index),
            sprt,
            history,
            verdict,
            interrupted,
            progress.done - len(results_before),
            time.monotonic() - started,
        )

    def _feed(self, sprt: Sprt, result: GameResult, history: list[tuple[int, float]]) -> None:
        score = candidate_score(result, base=0, candidate=1)
        if score is not None:
            sprt.add(score)
            history.append((len(sprt.scores), sprt.llr()))

    def _consume(
        self,
        stream: Iterator[GameResult],
        progress: RunProgress,
        on_game: Callable[[RunProgress], None] | None,
    ) -> str | None:
        for result in stream:
            progress.results.append(result)
            progress.done += 1
            if self.results_path is not None:
                with self.results_path.open("a") as fh:
                    fh.write(result_line(result) + "\n")
            if progress.sprt is not None:
                self._feed(progress.sprt, result, progress.llr_history)
            if on_game is not None:
                on_game(progress)
            if progress.sprt is not None:
                verdict = progress.sprt.verdict()
                if verdict is not None:
                    return verdict
        return None
