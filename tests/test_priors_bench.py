"""``bench priors``: each seat's slides replayed from real games and scored against the
tree's priors (the slide key's softmax)."""

from __future__ import annotations

import math

import pytest

from arena.local import play_local
from bench.priors import TEMPERATURES, Choices, choices_in, label
from state.game import GameState, Move
from strategies.base import Budget, ConfigError
from strategies.baselines import RandomStrategy
from strategies.common import KEY_WEIGHTS, PRIOR_TERMS, area_split, slide_key, slide_terms
from strategies.mcts import MctsParams
from tests.cli_support import battlesheep


class KeyMax(RandomStrategy):
    """Places at random and plays the slide of the highest key at its area split: the
    priors' limit."""

    name = "keymax"

    def move(self, state: GameState, budget: Budget) -> Move | None:
        slides = state.slides()
        if not slides:
            return None

        def key(s: tuple[int, int, int]) -> float:
            return slide_key(state, s[0], s[2], area_split(state, s[0], s[2]))

        cell, direction, dst = max(slides, key=key)
        move = Move.from_search((cell, direction, dst, area_split(state, cell, dst)))
        budget.offer_move(move)
        return move


def test_a_seat_that_plays_the_top_key_fits_the_coldest_and_a_random_one_the_warmest() -> None:
    found: dict[str, Choices] = {}
    for seed in (3, 4):
        seats = [KeyMax({"seed": seed}), RandomStrategy({"seed": seed + 10})] * 2
        record = play_local(1, seed, seats, 1.0).record
        choices_in(record, {1: "keymax", 2: "random", 3: "keymax", 4: "random"}, found)
    keymax, rand = found["keymax"], found["random"]
    assert len(keymax.chosen) >= 20 and len(rand.chosen) >= 20
    # Every choice of keymax is a slide of the highest key (a tie shares it).
    for keys, c in zip(keymax.keys(), keymax.chosen, strict=True):
        assert keys[c] == max(keys)
    assert keymax.fit() == TEMPERATURES[0]
    # Most of a choice's uncertainty gone (not all: slides tie at the top key).
    entropy = -keymax.uniform()
    assert keymax.log_likelihood(keymax.fit()) - keymax.uniform() > 0.5 * entropy
    # Random choices: the key tells little, the fit is warm and barely beats uniform.
    assert rand.fit() >= 4.0
    assert rand.log_likelihood(rand.fit()) - rand.uniform() < 0.1
    assert rand.log_likelihood(0.25) < rand.uniform()


TRUE = (0.8, -1.0, 0.5, 0.0, 0.3, 0.5, 0.9)
"""The weights ``SoftmaxKey`` draws its slides by."""


class SoftmaxKey(RandomStrategy):
    """Places at random and draws each slide (at its area split) from the softmax of
    its key by ``TRUE`` at temperature 1: a seat whose weights a fit should find."""

    name = "softmax"

    def move(self, state: GameState, budget: Budget) -> Move | None:
        slides = state.slides()
        if not slides:
            return None
        keys = []
        for cell, _d, dst in slides:
            terms = slide_terms(state, cell, dst, area_split(state, cell, dst))
            keys.append(sum(w * t for w, t in zip(TRUE, terms, strict=True)))
        top = max(keys)
        odds = [math.exp(k - top) for k in keys]
        cell, direction, dst = self.rng.choices(slides, weights=odds)[0]
        move = Move.from_search((cell, direction, dst, area_split(state, cell, dst)))
        budget.offer_move(move)
        return move


def test_the_fit_finds_the_weights_a_seat_draws_its_slides_by() -> None:
    """Weights learned from a seat that draws its slides from a softmax of known
    weights: as likely as those (the fit's optimum, less its small L2), near them on
    the terms that often vary, and on games not fitted they predict the seat about as
    well as the true weights, clearly better than the hand-set key at its best
    temperature does."""
    found: dict[str, Choices] = {}
    for g, seed in enumerate(range(20, 32)):
        seats = [SoftmaxKey({"seed": seed + k}) for k in range(4)]
        record = play_local(1, seed, seats, 1.0).record
        choices_in(record, dict.fromkeys((1, 2, 3, 4), "softmax"), found, g)
    seat = found["softmax"]
    assert len(seat.chosen) >= 400 and set(seat.games) == set(range(12))
    learned = seat.fit_weights()
    assert seat.log_likelihood(1.0, learned) >= seat.log_likelihood(1.0, TRUE) - 0.005
    for term in ("gain", "room", "foes"):  # (a stranded stack is too rare to weigh)
        i = PRIOR_TERMS.index(term)
        assert learned[i] > 0 and learned[i] == pytest.approx(TRUE[i], abs=0.4), term
    assert learned[PRIOR_TERMS.index("squeezed")] == 0.0  # no partner in game 1
    train, test = seat.part(lambda g: g < 9), seat.part(lambda g: g >= 9)
    held = train.fit_weights()
    truth = test.log_likelihood(1.0, TRUE)
    assert test.log_likelihood(1.0, held) > truth - 0.05
    hand = test.log_likelihood(test.fit(), KEY_WEIGHTS)
    assert truth - hand > 0.08


def test_the_fit_stays_finite_for_a_seat_the_key_explains_wholly() -> None:
    """A seat that always plays the top key's slide: the weights grow only as far as
    the L2 lets them and put most of the probability on its choices."""
    found: dict[str, Choices] = {}
    for seed in (3, 4):
        seats = [KeyMax({"seed": seed + k}) for k in range(4)]
        choices_in(play_local(1, seed, seats, 1.0).record, dict.fromkeys((1, 2, 3, 4), "k"), found)
    keymax = found["k"]
    learned = keymax.fit_weights()
    assert all(math.isfinite(w) and abs(w) < 100 for w in learned)
    assert keymax.log_likelihood(1.0, learned) > -0.5 * -keymax.uniform()


def gained(*gains: float) -> list[tuple[float, ...]]:
    """Slides' terms that differ only in what they gain (the key's first term)."""
    return [(g, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0) for g in gains]


def test_choices_score_the_chosen_slide_under_the_softmax() -> None:
    c = Choices(terms=[gained(0.0, 1.0), gained(2.0, 2.0, 2.0)], chosen=[1, 0], games=[0, 1])
    want = (math.log(math.e / (1 + math.e)) + math.log(1 / 3)) / 2
    assert c.log_likelihood(1.0) == pytest.approx(want)
    assert c.uniform() == pytest.approx(-(math.log(2) + math.log(3)) / 2)


def test_the_bench_prints_each_strategys_figures_and_refuses_game_3() -> None:
    from bench.priors import bench_priors

    with pytest.raises(ConfigError, match="game 3"):
        bench_priors(3, ["random"] * 4, 1, 1.0, 1)
    with pytest.raises(ConfigError, match="four seat specs"):
        bench_priors(1, ["random"] * 3, 1, 1.0, 1)
    assert label("uct:c_puct=2") == "uct_c_puct_2"
    out = battlesheep(
        "bench", "priors", "--games", "2", "--seats", "random,greedy,random,greedy",
        "--time-limit", "1", "--fit", timeout=300, check=True,
    ).stdout  # fmt: skip
    figures = dict(line.split("=", 1) for line in out.splitlines())
    assert figures["games"] == "2" and figures["default_temperature"] == "2"
    defaults = MctsParams().prior_weights
    assert tuple(float(w) for w in figures["default_weights"].split(",")) == defaults
    for name in ("random", "greedy"):
        assert int(figures[f"{name}_moves"]) > int(figures[f"{name}_held_out_moves"]) > 0
        assert float(figures[f"{name}_temperature"]) in TEMPERATURES
        for figure in (
            "nats_over_uniform", "nats_over_uniform_at_default", "entropy_uniform",
            "nats_over_uniform_fitted", "nats_over_uniform_held_out_fitted",
            "nats_over_uniform_held_out_at_default",
        ):  # fmt: skip
            float(figures[f"{name}_{figure}"])
        # The weights, one a term, go straight into prior_weights.
        weights = figures[f"{name}_fitted_weights"]
        assert len(MctsParams(prior_weights=weights).prior_weights) == len(PRIOR_TERMS)
    # Fitted to the games it is scored on, the key explains the greedy seat at least as
    # well as the default weights at their best temperature (less the fit's L2).
    fitted = float(figures["greedy_nats_over_uniform_fitted"])
    assert fitted > 0.1 and fitted >= float(figures["greedy_nats_over_uniform"]) - 0.01
