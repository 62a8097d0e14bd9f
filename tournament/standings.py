"""Standings of a tournament from its game results: points, scores, places, Elo, pairs.

Each seat an entrant takes is one sample of its points and score (an entrant
with two seats in a game contributes two). Ratings are Bradley-Terry Elo over
the pairwise comparisons of seats of different entrants (``tournament.stats``),
with bootstrap intervals over whole games.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from rich.table import Table

from arena.results import GameResult, SeatTally
from tournament.stats import Interval, mean_interval, pairwise_outcomes, rating_intervals


@dataclass(kw_only=True)
class Standing(SeatTally):
    name: str
    elo: Interval = field(default_factory=lambda: Interval(0.0, -math.inf, math.inf, 0))

    @property
    def seats(self) -> int:
        return len(self.points)

    @property
    def points_interval(self) -> Interval:
        return mean_interval(self.points)

    @property
    def mean_score(self) -> float:
        return fmean(self.scores) if self.scores else math.nan

    def as_dict(self) -> dict[str, Any]:
        pts = self.points_interval
        return {
            "name": self.name,
            "seats": self.seats,
            "points_per_game": pts.mean,
            "points_low": pts.low,
            "points_high": pts.high,
            "mean_score": self.mean_score,
            "places": self.places,
            "elo": self.elo.mean,
            "elo_low": self.elo.low,
            "elo_high": self.elo.high,
            "illegal": self.illegal,
            "late": self.late,
            "disconnects": self.disconnects,
        }


def game_outcomes(result: GameResult) -> list[tuple[str, str, float]]:
    return pairwise_outcomes(result.entrants or [], result.points)


def standings(
    names: Sequence[str], results: Sequence[GameResult], resamples: int = 200
) -> list[Standing]:
    """One standing per entrant (in ``names`` order); results in any order."""
    ordered = sorted(results, key=lambda r: r.index)  # the bootstrap must not see timing
    table = {n: Standing(name=n) for n in names}
    for result in ordered:
        for index, name in enumerate(result.entrants or []):
            table[name].add(result, index)
    if ordered:
        elo = rating_intervals(
            list(names), [game_outcomes(r) for r in ordered], resamples=resamples
        )
        for name in names:
            table[name].elo = elo[name]
    return [table[n] for n in names]


@dataclass
class PairRecord:
    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def count(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + self.draws / 2) / self.count if self.count else math.nan


def pairwise(
    names: Sequence[str], results: Sequence[GameResult]
) -> dict[tuple[str, str], PairRecord]:
    """Row entrant against column entrant: seat-against-seat wins, draws and losses."""
    table = {(a, b): PairRecord() for a in names for b in names if a != b}
    for result in results:
        for a, b, s in game_outcomes(result):
            forward, backward = table[(a, b)], table[(b, a)]
            if s == 1.0:
                forward.wins += 1
                backward.losses += 1
            elif s == 0.0:
                forward.losses += 1
                backward.wins += 1
            else:
                forward.draws += 1
                backward.draws += 1
    return table


def _num(x: float, digits: int = 3) -> str:
    return "-" if math.isnan(x) or math.isinf(x) else f"{x:.{digits}f}"


def standings_table(rows: Sequence[Standing], title: str) -> Table:
    table = Table(title=title)
    columns = ("entrant", "seats", "points/game", "95% interval", "score", "Elo", "95% interval")
    for column in columns:
        table.add_column(column, justify="left" if column == "entrant" else "right")
    for place in ("1st", "2nd", "3rd", "4th", "illegal", "late"):
        table.add_column(place, justify="right")
    for s in sorted(rows, key=lambda r: (-r.elo.mean, r.name)):
        pts = s.points_interval
        table.add_row(
            s.name,
            str(s.seats),
            _num(pts.mean),
            f"{_num(pts.low)} .. {_num(pts.high)}",
            _num(s.mean_score, 2),
            _num(s.elo.mean, 0) if s.seats else "-",
            f"{_num(s.elo.low, 0)} .. {_num(s.elo.high, 0)}" if s.seats else "-",
            *(str(c) for c in s.places),
            str(s.illegal),
            str(s.late),
        )
    return table


def pairwise_table(names: Sequence[str], pairs: dict[tuple[str, str], PairRecord]) -> Table:
    table = Table(
        title="pairwise: row's score against column (wins-draws-losses, seat against seat)"
    )
    table.add_column("")
    for name in names:
        table.add_column(name, justify="right")
    for a in names:
        cells = []
        for b in names:
            rec = pairs.get((a, b))
            if rec is None or not rec.count:
                cells.append("-")
            else:
                cells.append(f"{rec.score:.3f} ({rec.wins}-{rec.draws}-{rec.losses})")
        table.add_row(a, *cells)
    return table
