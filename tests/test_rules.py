"""Every rule of RULES.md section 3, on hand-made positions."""

from __future__ import annotations

import pytest

from state.game import GameState, IllegalMoveError, Move
from state.geometry import Geometry
from state.observe import state_from_observation
from state.scoring import (
    flood_region_sizes,
    flood_scores,
    ranked_results,
    ranks,
    tournament_points,
)
from state.settings import SETTINGS
from tests.boards import read_vector, rows_to_map


def open_state(game: int = 1) -> GameState:
    n = SETTINGS[game].size
    return GameState(SETTINGS[game], Geometry(n, [True] * (n * n)))


def test_placement_only_on_free_border_cells() -> None:
    state = open_state()
    g = state.geometry
    with pytest.raises(IllegalMoveError, match="not a border cell"):
        state.place(g.index(5, 5))
    state.place(g.index(0, 5))
    assert state.sheep[g.index(0, 5)] == 16 and state.to_move == 2
    with pytest.raises(IllegalMoveError, match="already taken by seat 1"):
        state.place(g.index(0, 5))
    assert g.index(0, 5) not in state.initial_positions()
    for cell in (g.index(11, 0), g.index(11, 11), g.index(0, 0)):
        state.place(cell)
    assert not state.placing and state.to_move == 1
    with pytest.raises(IllegalMoveError, match="initial positions are over"):
        state.place(g.index(3, 0))


def test_game_2_places_32_sheep_on_15x15() -> None:
    state = open_state(2)
    state.place(state.geometry.index(14, 14))
    assert state.sheep[state.geometry.index(14, 14)] == 32


def test_a_slide_goes_as_far_as_it_can_and_cannot_hop() -> None:
    state = open_state()
    g = state.geometry
    for x, y in ((0, 0), (6, 0), (0, 11), (11, 11)):
        state.place(g.index(x, y))
    # Seat 1 at (0,0) sliding +x stops before seat 2's cell at (6,0): it cannot hop.
    assert state.destination(g.index(0, 0), 6) == g.index(5, 0)
    # Diagonal to the far corner is blocked by seat 4 at (11,11).
    assert state.destination(g.index(0, 0), 9) == g.index(10, 10)
    # Off the board at once: no move in that direction.
    assert state.destination(g.index(0, 0), 1) == -1
    state.apply(Move(g.index(0, 0), 3, 6))
    assert state.owner[g.index(5, 0)] == 1 and state.sheep[g.index(5, 0)] == 3
    assert state.sheep[g.index(0, 0)] == 13


def test_split_must_leave_and_move_at_least_one() -> None:
    state = open_state()
    g = state.geometry
    for x, y in ((0, 0), (6, 0), (0, 11), (11, 11)):
        state.place(g.index(x, y))
    with pytest.raises(IllegalMoveError, match="leave at least one"):
        state.apply(Move(g.index(0, 0), 16, 6))
    with pytest.raises(IllegalMoveError, match="leave at least one"):
        state.apply(Move(g.index(0, 0), 0, 6))
    with pytest.raises(IllegalMoveError, match="not a stack of seat 1"):
        state.apply(Move(g.index(6, 0), 1, 6))
    with pytest.raises(IllegalMoveError, match="cannot slide"):
        state.apply(Move(g.index(0, 0), 1, 4))
    moves = state.legal_moves()
    assert {m.split for m in moves} == set(range(1, 16))
    # (0,0) reaches along +x, +y and the diagonal: three slides, 15 splits each.
    assert len(moves) == 3 * 15


def test_stack_of_one_cannot_move_and_a_player_without_moves_passes() -> None:
    state = open_state()
    g = state.geometry
    for x, y in ((0, 0), (6, 0), (0, 11), (11, 11)):
        state.place(g.index(x, y))
    state.sheep[g.index(0, 0)] = 1  # hand-made: seat 1 keeps one sheep
    assert state.legal_moves() == [] and not state.has_moves(1)
    state.apply_pass()
    assert state.to_move == 2 and state.done[1]
    with pytest.raises(IllegalMoveError, match="may not pass"):
        state.apply_pass()


def test_terminal_scores_of_the_course_figure() -> None:
    comments, rows = read_vector("figure_terminal_scores.txt")
    expected = next(c for c in comments if c.startswith("expected:"))
    want = [int(part.split("=")[1]) for part in expected.split()[1:]]
    board = rows_to_map(rows)
    assert want == [28, 14, 20, 28]
    g = Geometry.from_map(board)
    owner = [v for col in board for v in col]
    assert flood_scores(g, owner) == want
    assert flood_region_sizes(g, owner, 1) == [14, 1]
    assert flood_region_sizes(g, owner, 2) == [6, 1, 1, 1, 1, 1]
    sheep = [[1 if v > 0 else 0 for v in col] for col in board]
    state = state_from_observation(SETTINGS[1], board, sheep)
    assert state.scores() == want
    assert state.region_sizes(3) == [7, 2, 1, 1, 1, 1, 1, 1]
    assert state.is_terminal()


def test_tournament_points_and_ties() -> None:
    assert tournament_points([28, 14, 20, 28]) == [4.0, 1.0, 2.0, 4.0]
    assert tournament_points([40, 30, 20, 10]) == [5.0, 3.0, 2.0, 1.0]
    assert tournament_points([10, 10, 10, 10]) == [2.75] * 4
    assert tournament_points([9, 30, 9, 9]) == [2.0, 5.0, 2.0, 2.0]
    assert sum(tournament_points([3, 1, 3, 2])) == 11
    # three tied at the top share (5 + 3 + 2) / 3, which is not exact in floats
    top_three = tournament_points([5, 10, 10, 10])
    assert top_three[0] == 1.0 and top_three[1:] == [pytest.approx(10 / 3)] * 3
    assert sum(top_three) == pytest.approx(11)
    assert ranks([28, 14, 20, 28]) == [1, 4, 3, 1]


def test_game_4_team_result_is_the_pair_average() -> None:
    pair = ranked_results(SETTINGS[4], [28, 14, 20, 28])
    assert pair == [24.0, 21.0, 24.0, 21.0]
    assert tournament_points(pair) == [4.0, 1.5, 4.0, 1.5]
    assert SETTINGS[4].partner(1) == 3 and SETTINGS[4].partner(4) == 2
    assert SETTINGS[1].partner(1) is None
