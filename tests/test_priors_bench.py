"""``bench priors``: each seat's slides replayed from real games and scored against the
tree's priors (the slide key's softmax)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from arena.local import play_local
from bench.priors import TEMPERATURES, Choices, choices_in, label
from state.game import GameState, Move
from strategies.base import Budget, ConfigError
from strategies.baselines import RandomStrategy
from strategies.common import area_split, slide_key


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
    for keys, c in zip(keymax.keys, keymax.chosen, strict=True):
        assert keys[c] == max(keys)
    assert keymax.fit() == TEMPERATURES[0]
    # Most of a choice's uncertainty gone (not all: slides tie at the top key).
    entropy = -keymax.uniform()
    assert keymax.log_likelihood(keymax.fit()) - keymax.uniform() > 0.5 * entropy
    # Random choices: the key tells little, the fit is warm and barely beats uniform.
    assert rand.fit() >= 4.0
    assert rand.log_likelihood(rand.fit()) - rand.uniform() < 0.1
    assert rand.log_likelihood(0.25) < rand.uniform()


def test_choices_score_the_chosen_slide_under_the_softmax() -> None:
    c = Choices(keys=[[0.0, 1.0], [2.0, 2.0, 2.0]], chosen=[1, 0])
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
    out = subprocess.run(
        [sys.executable, "-m", "battlesheep", "bench", "priors", "--games", "1",
         "--seats", "random,greedy,random,greedy", "--time-limit", "1"],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    figures = dict(line.split("=", 1) for line in out.splitlines())
    assert figures["games"] == "1" and figures["default_temperature"] == "2"
    for name in ("random", "greedy"):
        assert int(figures[f"{name}_moves"]) > 0
        assert float(figures[f"{name}_temperature"]) in TEMPERATURES
        for figure in ("nats_over_uniform", "nats_over_uniform_at_default", "entropy_uniform"):
            float(figures[f"{name}_{figure}"])
