"""Each rule lives once in ``state/``: these tests pin the one function per rule and check
that every former copy (client, arena, strategies) now agrees with it."""

from __future__ import annotations

import random

import pytest

from bench.arena import random_reply
from client.fallback import fallback_placement
from protocol import PositionReply
from state.belief import guess_counts, uniform_guess
from state.boardgen import random_geometry
from state.game import UNKNOWN, GameState, Move
from state.geometry import FREE
from state.observe import ObservationError, mask_counts, read_observation, state_from_observation
from state.playout import random_placement
from state.scoring import ranked_results, tournament_points
from state.settings import MAX_SHEEP, PLAYERS, SETTINGS
from strategies.common import determinize, final_results, relative_value
from tests.boards import random_play

BOARDS = 12


def played(game: int, seed: int, plies: int) -> GameState:
    """A position after random placement and ``plies`` random slides (or skips)."""
    rng = random.Random(seed)
    setting = SETTINGS[game]
    state = GameState(setting, random_geometry(setting, seed))
    random_placement(state, rng)
    random_play(state, rng, plies)
    return state


# ----------------------------------------------------------------------- partners


def test_partner_table() -> None:
    assert {seat: SETTINGS[4].partner(seat) for seat in PLAYERS} == {1: 3, 2: 4, 3: 1, 4: 2}
    for game in (1, 2, 3):
        assert all(SETTINGS[game].partner(seat) is None for seat in PLAYERS)


def test_pair_value_follows_the_partner_rule() -> None:
    values = [10.0, 4.0, 2.0, 7.0]
    for seat in PLAYERS:
        partner = SETTINGS[4].partner(seat)
        assert partner is not None
        opponents = [q for q in PLAYERS if q not in (seat, partner)]
        pair = (values[seat - 1] + values[partner - 1]) / 2
        theirs = sum(values[q - 1] for q in opponents) / 2
        assert relative_value(values, seat, SETTINGS[4]) == pytest.approx(pair - theirs)
    # Without teams: own value against the best and the mean of the others.
    assert relative_value(values, 1, SETTINGS[1]) == pytest.approx(10 - 0.75 * 7 - 0.25 * 13 / 3)


# ------------------------------------------------------------------ game-4 ranking


def test_ranked_results_pair_averages_in_game_4_only() -> None:
    scores = [28, 14, 20, 28]
    assert ranked_results(SETTINGS[4], scores) == [24.0, 21.0, 24.0, 21.0]
    assert tournament_points(ranked_results(SETTINGS[4], scores)) == [4.0, 1.5, 4.0, 1.5]
    for game in (1, 2, 3):
        assert ranked_results(SETTINGS[game], scores) == [28.0, 14.0, 20.0, 28.0]


@pytest.mark.parametrize("game", [1, 4])
def test_strategies_rank_as_state_does(game: int) -> None:
    for seed in range(4):
        state = played(game, seed, 200)
        assert final_results(state) == ranked_results(state.setting, state.scores())


# -------------------------------------------------------------------- game-3 masks


@pytest.mark.parametrize("game", [1, 3, 4])
def test_every_mask_of_the_counts_agrees(game: int) -> None:
    """wire_sheep, the client's masking and read_observation hide the same counts."""
    setting = SETTINGS[game]
    for seed in range(BOARDS):
        state = played(game, seed, seed * 3)
        board = state.wire_map()
        full = state.wire_sheep()
        for viewer in PLAYERS:
            wire = state.wire_sheep(viewer)
            wire_board = tuple(map(tuple, board))
            client = mask_counts(setting, wire_board, tuple(map(tuple, full)), viewer)
            assert [list(col) for col in client] == wire
            assert [list(col) for col in mask_counts(setting, board, full, viewer)] == wire
            _owner, counts = read_observation(setting, board, full, viewer)
            n = setting.size
            for cell, owner in enumerate(state.owner):
                x, y = divmod(cell, n)
                shown = setting.shows_count(owner, viewer)
                assert shown == (not setting.hidden_counts or owner == viewer)
                assert wire[x][y] == (max(state.sheep[cell], 0) if shown else 0)
                if owner > FREE:
                    assert (counts[cell] == UNKNOWN) == (not shown)
                    if shown:
                        assert counts[cell] == state.sheep[cell]


def test_the_referee_sees_every_count() -> None:
    state = played(3, 1, 20)
    assert all(SETTINGS[3].shows_count(o, None) for o in PLAYERS)
    assert state.wire_sheep(None) == state.wire_sheep()
    assert any(c > 0 for col in state.wire_sheep() for c in col)


def test_max_sheep_bounds_the_observed_counts() -> None:
    setting = SETTINGS[1]
    n = setting.size
    board = [[1] + [0] * (n - 1)] + [[0] * n for _ in range(n - 1)]
    sheep = [[MAX_SHEEP] + [0] * (n - 1)] + [[0] * n for _ in range(n - 1)]
    _owner, counts = read_observation(setting, board, sheep, 1)
    assert counts[0] == MAX_SHEEP
    sheep[0][0] = MAX_SHEEP + 1
    with pytest.raises(ObservationError, match=f"0..{MAX_SHEEP}"):
        read_observation(setting, board, sheep, 1)


# -------------------------------------------------------------------- count guess


def test_count_guess_spreads_the_total_over_hidden_stacks() -> None:
    for seed in range(BOARDS):
        state = played(3, seed, 8 + seed * 4)
        view = state_from_observation(
            state.setting, state.wire_map(), state.wire_sheep(1), 1, to_move=state.to_move
        )
        assert guess_counts(view, 1) == {}  # nothing of one's own is hidden
        det = determinize(view, 1)
        for seat in (2, 3, 4):
            guess = guess_counts(view, seat)
            assert sorted(guess) == sorted(view.stacks[seat])
            assert sum(guess.values()) == view.setting.sheep
            assert min(guess.values()) == uniform_guess(view, seat)
            assert uniform_guess(view, seat) == view.setting.sheep // len(view.stacks[seat])
            assert all(det.sheep[c] == count for c, count in guess.items())


# ---------------------------------------------------------------------- placement


def test_most_room_is_the_placement_of_every_simple_player() -> None:
    for seed in range(BOARDS):
        setting = SETTINGS[1 + seed % 4]
        state = GameState(setting, random_geometry(setting, seed))
        rng = random.Random(seed)
        while state.placing:
            cells = state.initial_positions()
            room = {
                c: sum(state.owner[nb] == FREE for nb in state.geometry.neighbours[c])
                for c in cells
            }
            assert all(state.room(c) == room[c] for c in cells)
            best = state.most_room(cells)
            assert best == [c for c in cells if room[c] == max(room.values())]
            assert fallback_placement(state, cells) == max(cells, key=room.__getitem__)
            state.place(rng.choice(cells))


# ------------------------------------------------------------------- move encoding


@pytest.mark.parametrize("game", [1, 2, 4])
def test_search_move_round_trip(game: int) -> None:
    for seed in range(BOARDS):
        state = played(game, seed, seed * 5)
        for cell, direction, dst in state.slides():
            for split in range(1, state.sheep[cell]):
                search = (cell, direction, dst, split)
                move = Move.from_search(search)
                assert move == Move(cell, split, direction)
                assert state.search_move(move) == search
        for move in state.legal_moves():
            assert Move.from_search(state.search_move(move)) == move


# ------------------------------------------------------------ arena bench players


@pytest.mark.parametrize("game", [1, 2, 3, 4])
def test_bench_players_reply_legally_by_state_rules(game: int) -> None:
    """The random bench player picks among state's free border cells and slides."""
    setting = SETTINGS[game]
    for seed in range(4):
        truth = GameState(setting, random_geometry(setting, seed))
        rng = random.Random(seed)
        while not truth.is_terminal():
            seat = truth.to_move
            sheep = None if truth.placing else truth.wire_sheep(seat)
            view = state_from_observation(setting, truth.wire_map(), sheep, seat, to_move=seat)
            reply = random_reply(rng, view, seat, 7)
            if reply is None:
                assert not truth.has_moves(seat)
                truth.apply_pass()
                continue
            assert reply.id_package == 7
            cell = truth.geometry.index(reply.x, reply.y)
            if isinstance(reply, PositionReply):
                assert cell in truth.initial_positions()
                truth.place(cell)
            else:
                move = Move(cell, reply.split, reply.direction)
                assert move in truth.legal_moves()
                truth.apply(move)
