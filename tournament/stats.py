"""Statistics that turn game results into answers: intervals, ratings, SPRT.

Four-player games are scored for ratings as the six pairwise comparisons of
the seats in each game (the better place wins, equal places draw), which is
how multi-player results are usually fed to Elo/Bradley-Terry models.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev

_NORMAL = NormalDist()


def t_quantile(p: float, df: int) -> float:
    """Student-t quantile by the Cornish-Fisher expansion (good to ~1e-3 for df >= 3)."""
    z = _NORMAL.inv_cdf(p)
    if df <= 0:
        return math.inf
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


def mean_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Mean with a two-sided t interval (the whole range is unknown for n < 2)."""
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    m = fmean(values)
    if n < 2:
        return Interval(m, -math.inf, math.inf, n)
    half = t_quantile(0.5 + level / 2, n - 1) * stdev(values) / math.sqrt(n)
    return Interval(m, m - half, m + half, n)


def pairwise_outcomes(
    entrants: Sequence[str], points: Sequence[float]
) -> list[tuple[str, str, float]]:
    """(a, b, score of a against b) for every pair of seats of one game."""
    out = []
    for i in range(len(entrants)):
        for j in range(i + 1, len(entrants)):
            if entrants[i] == entrants[j]:
                continue  # an entrant against itself says nothing about ratings
            s = 1.0 if points[i] > points[j] else 0.5 if points[i] == points[j] else 0.0
            out.append((entrants[i], entrants[j], s))
    return out


def _comparisons(
    names: Sequence[str], outcomes: Sequence[tuple[str, str, float]]
) -> tuple[list[float], list[list[float]]]:
    """Wins per entrant (the prior's half win included) and comparisons per pair."""
    index = {n: i for i, n in enumerate(names)}
    k = len(names)
    wins = [PRIOR_GAMES / 2] * k
    games = [[0.0] * k for _ in range(k)]
    for a, b, s in outcomes:
        i, j = index[a], index[b]
        wins[i] += s
        wins[j] += 1 - s
        games[i][j] += 1
        games[j][i] += 1
    return wins, games


PRIOR_GAMES = 1.0
"""The prior: one draw of every entrant against a virtual average player (strength 1)."""

ELO_PER_NATURAL = 400 / math.log(10)


def bradley_terry(
    names: Sequence[str], outcomes: Sequence[tuple[str, str, float]], iterations: int = 200
) -> dict[str, float]:
    """Elo-scale ratings (mean 0) by the MM algorithm; draws count half a win each way.

    A small prior (one draw against a virtual average player) keeps the
    ratings finite when an entrant won or lost everything.
    """
    return {n: ELO_PER_NATURAL * math.log(s) for n, s in _strengths(names, outcomes, iterations)}


def _strengths(
    names: Sequence[str], outcomes: Sequence[tuple[str, str, float]], iterations: int
) -> list[tuple[str, float]]:
    wins, games = _comparisons(names, outcomes)
    k = len(names)
    strength = [1.0] * k
    for _ in range(iterations):
        new = []
        for i in range(k):
            denom = PRIOR_GAMES / (strength[i] + 1.0)  # the virtual opponent of strength 1
            denom += sum(games[i][j] / (strength[i] + strength[j]) for j in range(k) if j != i)
            new.append(wins[i] / denom)
        geo = math.exp(fmean(math.log(s) for s in new))
        strength = [s / geo for s in new]
    return list(zip(names, strength, strict=True))


def _curvature_halfwidths(
    names: Sequence[str], outcomes: Sequence[tuple[str, str, float]], level: float
) -> dict[str, float]:
    """Half-widths (Elo) from the curvature of the prior-regularised likelihood at its
    mode: the Fisher information of each rating, comparisons and the prior's virtual
    draw included. Unlike a bootstrap, it stays wide when the data are all one way."""
    strengths = dict(_strengths(names, outcomes, 200))
    _, games = _comparisons(names, outcomes)
    z = _NORMAL.inv_cdf(0.5 + level / 2)
    out = {}
    for i, name in enumerate(names):
        si = strengths[name]
        info = PRIOR_GAMES * si / (si + 1.0) ** 2
        for j, other in enumerate(names):
            sj = strengths[other]
            if j != i and games[i][j]:
                info += games[i][j] * si * sj / (si + sj) ** 2
        out[name] = z * ELO_PER_NATURAL / math.sqrt(info)
    return out


def rating_intervals(
    names: Sequence[str],
    games: Sequence[Sequence[tuple[str, str, float]]],
    level: float = 0.95,
    resamples: int = 200,
    seed: int = 0,
) -> dict[str, Interval]:
    """Bradley-Terry Elo with intervals that cover both the percentile bootstrap (whole
    games resampled, so the six comparisons of a game stay together) and the likelihood's
    curvature (honest when an entrant won or lost every comparison, where every
    bootstrap sample is the same and the bootstrap interval has no width)."""
    flat = [o for g in games for o in g]
    point = bradley_terry(names, flat)
    halves = _curvature_halfwidths(names, flat, level)
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(resamples if len(games) > 1 else 0):
        sample = [o for _ in games for o in games[rng.randrange(len(games))]]
        for name, r in bradley_terry(names, sample, iterations=60).items():
            draws[name].append(r)
    out = {}
    for name in names:
        values = sorted(draws[name])
        if not values:
            out[name] = Interval(point[name], -math.inf, math.inf, len(games))
            continue
        lo = values[int((1 - level) / 2 * (len(values) - 1))]
        hi = values[int((1 + level) / 2 * (len(values) - 1))]
        lo = min(lo, point[name] - halves[name])
        hi = max(hi, point[name] + halves[name])
        out[name] = Interval(point[name], lo, hi, len(games))
    return out


def elo_to_score(elo: float) -> float:
    return 1.0 / (1.0 + 10 ** (-elo / 400))


@dataclass
class Sprt:
    """Sequential probability ratio test of H0: elo = elo0 against H1: elo = elo1.

    Each game gives one score in [0, 1] for the candidate against the base
    (its mean pairwise result against the base's seats). The log-likelihood
    ratio is the normal (GSPRT) approximation fishtest uses: with the sample
    mean m and variance v of the game scores, LLR = n (s1 - s0)(2m - s0 - s1) / (2v).
    """

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    # The variance estimate of a handful of games is too rough to stop on.
    min_games: int = 16

    def __post_init__(self) -> None:
        if self.elo1 <= self.elo0:
            raise ValueError(f"SPRT needs elo0 < elo1, got {self.elo0}, {self.elo1}")
        if not (0 < self.alpha < 0.5 and 0 < self.beta < 0.5):
            raise ValueError(f"alpha and beta must be in (0, 0.5), got {self.alpha}, {self.beta}")
        self.scores: list[float] = []

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    def add(self, score: float) -> None:
        self.scores.append(score)

    def llr(self) -> float:
        n = len(self.scores)
        if n < 2:
            return 0.0
        m = fmean(self.scores)
        var = sum((x - m) ** 2 for x in self.scores) / n
        if var <= 0:
            var = 1e-3  # all games alike so far: a floor keeps the ratio finite
        s0, s1 = elo_to_score(self.elo0), elo_to_score(self.elo1)
        return n * (s1 - s0) * (2 * m - s0 - s1) / (2 * var)

    def verdict(self) -> str | None:
        """'H1' (candidate is better by elo1), 'H0' (not better than elo0) or None."""
        if len(self.scores) < self.min_games:
            return None
        llr = self.llr()
        if llr >= self.upper:
            return "H1"
        if llr <= self.lower:
            return "H0"
        return None
