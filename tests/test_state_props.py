"""Property tests on random boards and random play."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.boardgen import random_geometry
from state.game import UNKNOWN, GameState
from state.geometry import DIRECTIONS, FREE
from state.observe import ingest, state_from_observation
from state.playout import random_placement
from state.scoring import flood_region_sizes
from state.settings import PLAYERS, SETTINGS

games = st.sampled_from([1, 2, 3, 4])
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def new_game(game: int, seed: int) -> tuple[GameState, random.Random]:
    setting = SETTINGS[game]
    return GameState(setting, random_geometry(setting, seed)), random.Random(seed)


def play_one(state: GameState, rng: random.Random, lose_turns: float = 0.0) -> bool:
    """One random ply (placement, move, pass, or a lost turn); False at the end."""
    if state.placing:
        state.place(rng.choice(state.initial_positions()))
        return True
    if state.is_terminal():
        return False
    moves = state.legal_moves()
    if not moves:
        state.apply_pass()
    elif rng.random() < lose_turns:
        state.skip_turn()
    else:
        state.apply(rng.choice(moves))
    return True


def snapshot(state: GameState) -> tuple[object, ...]:
    return (
        state.canonical(),
        tuple(tuple(s) for s in state.stacks),
        tuple(state.done),
        state.hash,
        tuple(state.regions.parent),
        tuple(state.regions.size),
        tuple(state.regions.score),
    )


@settings(max_examples=40, deadline=None)
@given(games, seeds)
def test_undo_restores_every_step_exactly(game: int, seed: int) -> None:
    setting = SETTINGS[game]
    state = GameState(SETTINGS[1 if setting.size == 12 else 2], random_geometry(setting, seed))
    rng = random.Random(seed)
    before = [snapshot(state)]
    while play_one(state, rng):
        assert state.hash == state.hash_from_scratch()
        before.append(snapshot(state))
    assert state.ply == len(before) - 1
    while state.ply:
        before.pop()
        state.undo()
        assert snapshot(state) == before[-1]


@settings(max_examples=40, deadline=None)
@given(games, seeds)
def test_with_counts_is_a_copy_with_those_counts_and_its_own_hash(game: int, seed: int) -> None:
    """A world of other counts: the counts put in, the hash made again (it changes with
    the counts), the rest of the position kept, and the original untouched as the
    world plays on."""
    state, rng = new_game(game, seed)
    for _ in range(rng.randrange(8, 30)):
        if not play_one(state, rng):
            break
    stacks = [c for c, n in enumerate(state.sheep) if n >= 2]
    counts = {c: state.sheep[c] - 1 for c in stacks}
    before = snapshot(state)
    world = state.with_counts(counts)
    assert snapshot(state) == before
    assert all(world.sheep[c] == n for c, n in counts.items())
    assert world.hash == world.hash_from_scratch()
    assert (world.hash == state.hash) == (not counts)
    assert world.owner == state.owner and world.to_move == state.to_move
    while play_one(world, rng):
        pass
    assert snapshot(state) == before


@settings(max_examples=40, deadline=None)
@given(games, seeds)
def test_incremental_scores_equal_flood_fill_after_every_move(game: int, seed: int) -> None:
    state, rng = new_game(1 if game != 2 else 2, seed)
    while play_one(state, rng):
        for p in PLAYERS:
            sizes = flood_region_sizes(state.geometry, state.owner, p)
            assert state.region_sizes(p) == sizes
            assert abs(state.exact_score(p) - sum(s**1.25 for s in sizes)) < 1e-9
            assert state.score(p) == round(sum(s**1.25 for s in sizes))


@settings(max_examples=40, deadline=None)
@given(games, seeds)
def test_region_gain_is_what_taking_the_cell_adds(game: int, seed: int) -> None:
    """``Regions.gain`` (a query) for every free destination equals the score change
    of playing a slide there, after every ply of a random game."""
    state, rng = new_game(game, seed)
    while play_one(state, rng):
        if state.placing or state.is_terminal():
            continue
        me = state.to_move
        for cell, _direction, dst in state.slides():
            expected_base = state.regions.score[me]
            gain = state.regions.gain(dst, me, state.owner)
            state.slide(cell, dst, 1)
            assert gain == pytest.approx(state.regions.score[me] - expected_base)
            state.undo()


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_legal_moves_stay_on_the_field_and_never_jump(seed: int) -> None:
    state, rng = new_game(2, seed)
    g = state.geometry
    while play_one(state, rng):
        if state.placing:
            continue
        for cell, direction, dst in state.slides():
            dx, dy = DIRECTIONS[direction]
            x, y = g.xy(cell)
            path = []
            while True:
                x, y = x + dx, y + dy
                i = g.index_or_none(x, y)
                if i is None or state.owner[i] != FREE:
                    break
                path.append(i)
            assert path and path[-1] == dst
            assert all(g.playable[c] for c in path)
        for move in state.legal_moves():
            assert state.owner[move.cell] == state.to_move
            assert 1 <= move.split < state.sheep[move.cell]


@settings(max_examples=40, deadline=None)
@given(games, seeds, st.integers(min_value=1, max_value=4), st.sampled_from([0.0, 0.2]))
def test_ingest_turn_by_turn_equals_rebuild_from_final_observation(
    game: int, seed: int, viewer: int, lose_turns: float
) -> None:
    truth, rng = new_game(game, seed)
    setting = truth.setting
    mine: GameState | None = None
    last = None
    while True:
        if truth.to_move == viewer and (truth.placing or truth.has_moves(viewer)):
            board, sheep = truth.wire_map(), truth.wire_sheep()
            if mine is None:
                mine = state_from_observation(setting, board, None, viewer, to_move=viewer)
                assert mine.placing
            else:
                report = ingest(mine, board, sheep, viewer)
                assert not report.resynced, report.reason
            rebuilt = state_from_observation(setting, board, sheep, viewer, to_move=viewer)
            assert mine.canonical() == rebuilt.canonical()
            assert mine.hash == rebuilt.hash
            if not setting.hidden_counts:
                assert mine.canonical() == truth.canonical()
            else:
                for cell in truth.geometry.cells:
                    seen = mine.sheep[cell]
                    owner = truth.owner[cell]
                    assert seen == (
                        truth.sheep[cell] if owner == viewer else UNKNOWN if owner > 0 else 0
                    )
            last = (board, sheep)
        if not play_one(truth, rng, lose_turns):
            break
    assert last is not None


def test_ingest_resyncs_on_an_impossible_change() -> None:
    truth, rng = new_game(1, 5)
    random_placement(truth, rng)
    mine = state_from_observation(truth.setting, truth.wire_map(), truth.wire_sheep(), 1, to_move=1)
    # A board where one of seat 2's cells now belongs to seat 3: no move does that.
    board = truth.wire_map()
    x, y = truth.geometry.xy(truth.stacks[2][0])
    board[x][y] = 3
    sheep = truth.wire_sheep()
    report = ingest(mine, board, sheep, 1)
    assert report.resynced and "changed owner" in report.reason
    assert mine.owner[truth.stacks[2][0]] == 3
