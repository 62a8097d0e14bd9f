"""Game 4 on the search side: team rewards, team-aware search and placement on hand-made
positions where the partner's interest decides the right move."""

from __future__ import annotations

import pytest

from state.game import GameState, Move
from state.geometry import Geometry
from state.settings import SETTINGS
from strategies.alphabeta import AlphaBeta
from strategies.base import Budget
from strategies.common import EvalWeights, relative_value, rewards, slide_key
from strategies.hybrid import HybridStrategy
from strategies.placement import static_placement_scores

N = 12


def corridor(game: int, partner_left: bool = True) -> tuple[GameState, Move, Move]:
    """A corridor along y = 0: seat 3 (the partner in game 4) at x = 0, seat 1 (to
    move) at x = 5, seat 2 at x = 10 (or the two swapped); seat 4 stuck on a cell of
    its own. Seat 1 slides left or right, shutting in whoever is at that end; the two
    are mirror images, so only who is shut in tells them apart. Returns the state,
    the slide next to the partner and the slide next to the opponent."""
    playable = [False] * (N * N)
    cells = [(x, 0) for x in range(11)] + [(0, 6)]
    for x, y in cells:
        playable[x * N + y] = True
    g = Geometry(N, playable)
    state = GameState(SETTINGS[game], g)
    seat2, seat3 = ((10, 0), (0, 0)) if partner_left else ((0, 0), (10, 0))
    for xy in ((5, 0), seat2, seat3, (0, 6)):
        state.place(g.index(*xy))
    state.clear_history()
    left = Move(g.index(5, 0), 8, 4)
    right = Move(g.index(5, 0), 8, 6)
    assert state.destination(left.cell, 4) == g.index(1, 0)
    assert state.destination(right.cell, 6) == g.index(9, 0)
    return (state, left, right) if partner_left else (state, right, left)


def test_team_rewards_and_values_are_the_pairs() -> None:
    state, _squeeze, block = corridor(4)
    state.apply(block)
    while not state.is_terminal():
        moves = state.legal_moves()
        state.apply(moves[0]) if moves else state.apply_pass()
    r = rewards(state, 0.05)
    assert r[0] == r[2] and r[1] == r[3]
    assert r[0] > r[1]
    values = [10.0, 4.0, 2.0, 4.0]
    # Own 10 and partner 2 against 4 and 4: even for the pair, whoever looks.
    assert relative_value(values, 1, SETTINGS[4]) == relative_value(values, 3, SETTINGS[4]) == 2.0
    assert relative_value(values, 2, SETTINGS[4]) == -2.0


@pytest.mark.parametrize("partner_left", [True, False])
def test_shutting_in_the_partner_is_avoided_and_the_opponent_is_shut_in(
    partner_left: bool,
) -> None:
    for seed in (1, 2):
        state, _squeeze, block = corridor(4, partner_left)
        strategy = HybridStrategy({"seed": seed, "max_iterations": 600})
        strategy.new_game(state.setting, 1)
        move = strategy.move(state.copy(), Budget.seconds(30))
        assert move is not None and (move.cell, move.direction) == (block.cell, block.direction)
    # Minimax: the partner maximises with us (paranoid), so the same answer.
    state, _squeeze, block = corridor(4, partner_left)
    result = AlphaBeta("paranoid", EvalWeights(1.2, 1.0, 0.2)).search(
        state, Budget.seconds(30), float("inf"), max_depth=6
    )
    assert result.best is not None
    assert (result.best.cell, result.best.direction) == (block.cell, block.direction)


def test_in_game_1_both_sides_are_the_same_to_the_cheap_key() -> None:
    """The prior is what breaks ties: without a partner the mirror moves score alike;
    with one, the slide next to the partner scores lower."""

    def key(state: GameState, move: Move) -> float:
        return slide_key(state, move.cell, state.destination(move.cell, move.direction), 8)

    state1, a, b = corridor(1)
    assert key(state1, a) == key(state1, b)
    for partner_left in (True, False):
        state4, squeeze, block = corridor(4, partner_left)
        assert key(state4, block) > key(state4, squeeze)


def mirror_board(game: int) -> tuple[GameState, int, int]:
    """A 9x9 square playing field; seat 1 (an opponent of seat 4) in the corner
    (0, 0), seat 2 (seat 4's partner) in the mirror corner (8, 8), seat 3 in the
    middle of the top edge. Seat 4 is to place; (0, 4) and (8, 4) are mirror cells,
    the first near the opponent, the second near the partner."""
    playable = [x < 9 and y < 9 for x in range(N) for y in range(N)]
    g = Geometry(N, playable)
    state = GameState(SETTINGS[game], g)
    for xy in ((0, 0), (8, 8), (4, 0)):
        state.place(g.index(*xy))
    return state, g.index(0, 4), g.index(8, 4)


def test_placement_keeps_away_from_the_partner() -> None:
    state, near_opponent, near_partner = mirror_board(4)
    scores = static_placement_scores(state)
    assert scores[near_opponent] > scores[near_partner]
    strategy = HybridStrategy({"seed": 1, "placement_time_fraction": 0.0})
    strategy.new_game(state.setting, 4)
    cell = strategy.place(state, Budget.seconds(5))
    x, y = state.geometry.xy(cell)
    assert max(abs(x - 8), abs(y - 8)) > 2  # not next to the partner's corner
    # In game 1 the two seats are both opponents: the mirror cells are alike.
    state1, a, b = mirror_board(1)
    scores1 = static_placement_scores(state1)
    assert scores1[a] == scores1[b]


def test_game_4_weighs_the_pair_lead_more_than_other_games() -> None:
    """The search and the placement of game 4 use ``team_margin``; others ``margin``."""
    strategy = HybridStrategy({"margin": 0.05, "team_margin": 0.3})
    strategy.new_game(SETTINGS[1], 1)
    assert strategy.reward_margin == 0.05 and strategy.mcts.params.margin == 0.05
    strategy.new_game(SETTINGS[4], 1)
    assert strategy.reward_margin == 0.3 and strategy.mcts.params.margin == 0.3
    strategy.new_game(SETTINGS[3], 2)
    assert strategy.mcts.params.margin == 0.05
