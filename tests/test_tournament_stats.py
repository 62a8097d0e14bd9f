from __future__ import annotations

import math
import random

import pytest

from tournament.stats import (
    Sprt,
    bradley_terry,
    elo_to_score,
    mean_interval,
    pairwise_outcomes,
    rating_intervals,
    t_quantile,
)


@pytest.mark.parametrize(("df", "want"), [(3, 3.182), (10, 2.228), (30, 2.042), (1000, 1.962)])
def test_t_quantile_matches_tables(df: int, want: float) -> None:
    assert abs(t_quantile(0.975, df) - want) < 0.01


def test_mean_interval() -> None:
    iv = mean_interval([5, 3, 2, 1] * 10)
    assert iv.mean == pytest.approx(2.75)
    assert iv.low < 2.75 < iv.high
    assert iv.high - iv.low == pytest.approx(
        2 * 2.023 * math.sqrt(2.1875 * 40 / 39) / math.sqrt(40), rel=0.01
    )
    assert mean_interval([3.0]).low == -math.inf


def test_pairwise_outcomes_with_ties_and_self_play() -> None:
    out = pairwise_outcomes(["a", "b", "a", "c"], [5, 2.5, 1, 2.5])
    assert ("a", "b", 1.0) in out and ("b", "c", 0.5) in out and ("b", "a", 1.0) in out
    assert all(x != y for x, y, _ in out)  # a vs a is left out
    assert len(out) == 5


def test_bradley_terry_recovers_known_strengths() -> None:
    rng = random.Random(1)
    true = {"a": 0.0, "b": 100.0, "c": 200.0}
    outcomes = []
    for _ in range(3000):
        x, y = rng.sample(list(true), 2)
        p = elo_to_score(true[x] - true[y])
        outcomes.append((x, y, 1.0 if rng.random() < p else 0.0))
    ratings = bradley_terry(list(true), outcomes)
    assert ratings["a"] < ratings["b"] < ratings["c"]
    assert ratings["c"] - ratings["a"] == pytest.approx(200, abs=40)
    games = [[o] for o in outcomes[:400]]
    iv = rating_intervals(list(true), games, resamples=50)
    assert iv["c"].low < iv["c"].mean < iv["c"].high
    assert iv["a"].high < iv["c"].low


def simulate_sprt(true_elo: float, rng: random.Random, cap: int = 3000) -> str | None:
    """Per game: the mean of four pairwise results, each a win with the Elo probability."""
    sprt = Sprt(0.0, 30.0)
    p = elo_to_score(true_elo)
    for _ in range(cap):
        sprt.add(sum(1.0 if rng.random() < p else 0.0 for _ in range(4)) / 4)
        verdict = sprt.verdict()
        if verdict:
            return verdict
    return None


def test_sprt_accepts_h0_for_identical_entrants_at_the_expected_rate() -> None:
    rng = random.Random(7)
    verdicts = [simulate_sprt(0.0, rng) for _ in range(200)]
    h0 = verdicts.count("H0") / len(verdicts)
    assert h0 >= 0.9  # alpha = 0.05: H1 should be accepted about 5% of the time


def test_sprt_accepts_h1_for_a_clearly_stronger_entrant() -> None:
    rng = random.Random(8)
    verdicts = [simulate_sprt(80.0, rng) for _ in range(100)]
    assert verdicts.count("H1") >= 95


def test_sprt_bounds_and_bad_input() -> None:
    sprt = Sprt(0, 5)
    assert sprt.lower == pytest.approx(-2.944, abs=1e-3)
    assert sprt.upper == pytest.approx(2.944, abs=1e-3)
    with pytest.raises(ValueError, match="elo0 < elo1"):
        Sprt(5, 0)


def test_rating_interval_stays_honest_at_a_perfect_score() -> None:
    """One entrant won every comparison of 4 games: every bootstrap sample is the same,
    yet 16 comparisons cannot pin a rating; the interval must have a width."""
    game = [("a", "b", 1.0)] * 4
    iv = rating_intervals(["a", "b"], [game] * 4, resamples=50)
    a, b = iv["a"], iv["b"]
    assert a.low < a.mean < a.high and b.low < b.mean < b.high
    assert a.high - a.low > 200  # a few hundred Elo at the least, from 16 comparisons
    assert a.mean > 0 > b.mean
    # More games of the same kind narrow it.
    wide = a.high - a.low
    iv = rating_intervals(["a", "b"], [game] * 64, resamples=50)
    assert iv["a"].high - iv["a"].low < wide
