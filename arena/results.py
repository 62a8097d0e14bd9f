"""Game results: the course-style lines and the results file.

Results file (``--results FILE``): one JSON object per line, one line per
game, appended as each game ends. Lists are in seat order (seat 1 first).

==================  =========================================================
key                 value
==================  =========================================================
``index``           0-based number of the game in this run
``game``            the setting, 1..4
``seed``            board seed: the same seed and setting give the same board
``teams``           team ids in seat order
``final_map``       final ``map[x][y]`` in the wire's layout (-1, 0, 1..4)
``final_sheep``     final true ``sheep[x][y]`` (all counts, also in game 3)
``scores``          rounded scores, ``round(sum(region ** 1.25))``
``exact_scores``    the unrounded sums
``results``         what is ranked: ``scores``, or in game 4 the pair averages
``points``          tournament points 5/3/2/1 by ``results``, ties share
``ranks``           1-based places by ``results`` (ties share the best place)
``illegal``         illegal moves and initial positions (each lost the turn)
``late``            replies not in within the time limit (each lost the turn)
``stale``           replies with an old ``id_package`` (discarded)
``disconnects``     connections lost during the game
``absent``          turns lost because the seat had no connection
``protocol_errors`` connections dropped for junk bytes or flooding
``moves``           moves applied, all seats
``seat_moves``      moves applied per seat
``passes``          turns per seat with no legal move (nothing was asked)
``turns``           turns after placement, passes and lost turns included
``stalled``         true if the game was ended because nobody moved any more
``time_limit``      seconds per move
``duration_s``      wall time of the game
``move_time_max_s`` slowest reply in time per seat (null if none)
``search``          in-process games only: per seat, the mean search figures per
                    move (``iterations``, ``depth``, ... as the strategy reports
                    them, ``time_used``), ``time_used_max`` and ``moves``
``entrants``        tournaments only: entrant names by seat
``seats``           tournaments only: entrant indices by seat
==================  =========================================================

Each line is a ``GameResult``: ``result_of`` makes it from a finished game,
``append_result`` writes it, ``read_results`` reads a file back.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from arena.referee import GameRecord
from state.scoring import ranked_results, ranks, tournament_points


class ResultsError(ValueError):
    """A results-file line that is not one game's result."""


class GameResult(BaseModel):
    """One game's result: a results-file line (the keys of the table above, in that order).

    A tournament also gives ``entrants`` (names by seat) and ``seats`` (entrant
    indices by seat); they are left out of the file when not given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    game: int
    seed: int
    teams: list[int]
    final_map: list[list[int]]
    final_sheep: list[list[int]]
    scores: list[int]
    exact_scores: list[float]
    results: list[float]
    points: list[float]
    ranks: list[int]
    illegal: list[int]
    late: list[int]
    stale: list[int]
    disconnects: list[int]
    absent: list[int]
    protocol_errors: list[int]
    moves: int
    seat_moves: list[int]
    passes: list[int]
    turns: int
    stalled: bool
    time_limit: float
    duration_s: float
    move_time_max_s: list[float | None]
    entrants: list[str] | None = None
    seats: list[int] | None = None
    search: list[dict[str, float]] | None = None

    def as_json(self) -> dict[str, Any]:
        """The results-file object (``entrants``, ``seats``, ``search`` only when given)."""
        optional = {k for k in OPTIONAL_KEYS if getattr(self, k) is None}
        return self.model_dump(mode="json", exclude=optional)

    def with_entrants(self, entrants: list[str], seats: list[int]) -> GameResult:
        """The same result with a tournament's entrant names and indices by seat."""
        return GameResult.model_validate(
            {**self.model_dump(), "entrants": list(entrants), "seats": list(seats)}
        )


OPTIONAL_KEYS = ("entrants", "seats", "search")
RESULT_KEYS = tuple(k for k in GameResult.model_fields if k not in OPTIONAL_KEYS)


@dataclass(kw_only=True)
class SeatTally:
    """One player's record over many games: a sample for every seat it took."""

    points: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    places: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    illegal: int = 0
    late: int = 0
    disconnects: int = 0

    def add(self, result: GameResult, index: int) -> None:
        """Count the seat of 0-based ``index`` in one game's results."""
        self.points.append(result.points[index])
        self.scores.append(result.scores[index])
        self.places[result.ranks[index] - 1] += 1
        self.illegal += result.illegal[index]
        self.late += result.late[index]
        self.disconnects += result.disconnects[index]


def result_of(
    record: GameRecord, index: int = 0, search: list[dict[str, float]] | None = None
) -> GameResult:
    state = record.state
    scores = state.scores()
    ranked = ranked_results(record.setting, scores)
    stats = record.stats
    return GameResult(
        index=index,
        game=record.setting.game,
        seed=record.seed,
        teams=list(record.teams),
        final_map=state.wire_map(),
        final_sheep=state.wire_sheep(),
        scores=scores,
        exact_scores=state.exact_scores(),
        results=ranked,
        points=tournament_points(ranked),
        ranks=ranks(ranked),
        illegal=[s.illegal for s in stats],
        late=[s.late for s in stats],
        stale=[s.stale for s in stats],
        disconnects=[s.disconnects for s in stats],
        absent=[s.absent for s in stats],
        protocol_errors=[s.protocol_errors for s in stats],
        moves=sum(1 for e in record.events if e.kind == "move"),
        seat_moves=_count_per_seat(record, "move"),
        passes=_count_per_seat(record, "pass"),
        turns=sum(1 for e in record.events if e.kind != "place"),
        stalled=record.stalled,
        time_limit=record.time_limit,
        duration_s=round(record.duration, 4),
        move_time_max_s=[round(max(s.move_times), 4) if s.move_times else None for s in stats],
        search=search,
    )


def _count_per_seat(record: GameRecord, kind: str) -> list[int]:
    counts = [0] * len(record.teams)
    for event in record.events:
        if event.kind == kind:
            counts[event.seat - 1] += 1
    return counts


SEARCH_KEYS = (
    "iterations",
    "worker_iterations",
    "nodes",
    "depth",
    "ab_depth",
    "ab_nodes",
    "worlds",
    "solve_trusted",
    "time_used",
)
"""The search figures a result keeps per seat (means over the moves that report them:
``solve_trusted`` over game 3's moves where the endgame solver could start)."""


def search_figures(moves: list[dict[str, float]]) -> dict[str, float]:
    """One seat's search figures over a game: means per move, the slowest move and the
    median one, the count."""
    out: dict[str, float] = {"moves": float(len(moves))}
    for key in SEARCH_KEYS:
        values = [m[key] for m in moves if key in m]
        if values:
            out[key] = sum(values) / len(values)
    if moves:
        out["time_used_max"] = max(m["time_used"] for m in moves)
        out["time_used_median"] = statistics.median(m["time_used"] for m in moves)
    return out


def _value(v: float) -> str:
    return f"{v:g}"


def course_lines(result: GameResult) -> list[str]:
    """``player {seat}=team {team} : {result}`` per seat, then the winner line."""
    teams, values = result.teams, result.results
    lines = [
        f"player {seat}=team {team} : {_value(value)}"
        for seat, (team, value) in enumerate(zip(teams, values, strict=True), start=1)
    ]
    best = max(values)
    winners = [seat for seat, value in enumerate(values, start=1) if value == best]
    if result.game == 4 and len(winners) == 2 and winners[1] - winners[0] == 2:
        a, b = winners
        lines.append(
            f"winner: players {a} & {b}=teams {teams[a - 1]} & {teams[b - 1]} : {_value(best)}"
        )
    elif len(winners) == 1:
        (w,) = winners
        lines.append(f"winner: player {w}=team {teams[w - 1]} : {_value(best)}")
    else:
        tied = ", ".join(f"player {w}=team {teams[w - 1]}" for w in winners)
        lines.append(f"winners (tie): {tied} : {_value(best)}")
    return lines


def result_line(result: GameResult) -> str:
    """One results-file line, without the newline."""
    return json.dumps(result.as_json(), separators=(",", ":"))


def append_result(path: str | Path, result: GameResult) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as f:
        f.write(result_line(result) + "\n")


def parse_result(item: str | dict[str, Any], where: str) -> GameResult:
    """A results-file line (text or its decoded object); ResultsError names ``where``."""
    try:
        if isinstance(item, str):
            return GameResult.model_validate_json(item)
        return GameResult.model_validate(item)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(part) for part in err["loc"])
        if err["type"] == "json_invalid":
            raise ResultsError(f"{where}: not JSON ({err['msg']})") from None
        raise ResultsError(f"{where}: not a game result: {loc or 'line'}: {err['msg']}") from None


def read_results(path: str | Path) -> list[GameResult]:
    """Every game of a results file; ResultsError names the first bad line."""
    with Path(path).open(encoding="utf-8") as f:
        return [
            parse_result(line, f"{path}, line {number}")
            for number, line in enumerate(f, start=1)
            if line.strip()
        ]
