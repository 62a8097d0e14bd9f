from __future__ import annotations

import random

import pytest

from state.boardgen import random_geometry
from state.game import GameState, Move
from state.geometry import Geometry
from state.playout import random_placement
from state.settings import SETTINGS
from strategies.base import Budget, ParameterError
from strategies.registry import make_strategy, parse_params, parse_seat
from tests.boards import random_play


def random_positions(game: int, count: int, seed: int = 0) -> list[GameState]:
    rng = random.Random(seed)
    out: list[GameState] = []
    while len(out) < count:
        setting = SETTINGS[game]
        state = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(state, rng)
        random_play(state, rng, rng.randrange(0, 80))
        out.append(state)
    return out


# The searching strategies are covered with tiny budgets in test_strategies.py.
@pytest.mark.parametrize("name", ["random", "greedy"])
@pytest.mark.parametrize("game", [1, 2, 4])
def test_baselines_return_legal_moves_or_none(name: str, game: int) -> None:
    strategy = make_strategy(name, {"seed": 1})
    for state in random_positions(game, 30, seed=game):
        strategy.new_game(state.setting, state.to_move)
        budget = Budget.seconds(1.0)
        move = strategy.move(state, budget)
        legal = state.legal_moves()
        if not legal:
            assert move is None
        else:
            assert move in legal and budget.best_move == move
        assert state.ply == 0


@pytest.mark.parametrize("name", ["random", "greedy"])
def test_baselines_place_on_a_free_border_cell(name: str) -> None:
    setting = SETTINGS[1]
    state = GameState(setting, random_geometry(setting, 4))
    strategy = make_strategy(name, {"seed": 2})
    for _ in range(4):
        cell = strategy.place(state, Budget.seconds(1.0))
        assert cell in state.initial_positions()
        state.place(cell)


def test_greedy_takes_the_best_immediate_gain() -> None:
    n = 12
    playable = [False] * (n * n)
    for x in range(6):
        playable[x * n + 0] = True
        playable[x * n + 1] = True
    g = Geometry(n, playable)
    state = GameState(SETTINGS[1], g)
    for x, y in ((0, 0), (5, 1), (5, 0), (3, 1)):
        state.place(g.index(x, y))
    # Seat 1 at (0,0): +x stops at (4,0) (isolated), +y stops at (0,1) (joins own cell),
    # the diagonal reaches (1,1)..(2,1) and stops at (2,1) (isolated).
    move = make_strategy("greedy").move(state, Budget.seconds(1.0))
    assert move == Move(g.index(0, 0), 8, 8)


def test_parameters_are_validated_with_names() -> None:
    with pytest.raises(ParameterError, match="foo"):
        make_strategy("random", {"foo": "1"})
    with pytest.raises(ParameterError, match="seed"):
        make_strategy("random", {"seed": "x"})
    with pytest.raises(ParameterError, match="unknown strategy 'nope'"):
        make_strategy("nope")
    with pytest.raises(ParameterError, match="key=value"):
        parse_params(["seed"])
    assert parse_seat("greedy:seed=3") == ("greedy", {"seed": "3"})
    assert parse_seat("random") == ("random", {})


def test_budget_stop_expires_at_once() -> None:
    budget = Budget.seconds(60)
    assert not budget.expired() and budget.remaining() > 59
    budget.stop()
    assert budget.expired()
