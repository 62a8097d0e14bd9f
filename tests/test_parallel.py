"""Root-parallel search: real worker processes search beside the strategy's own thread
and their root statistics are merged; positions travel to them pickled."""

from __future__ import annotations

import gc
import logging
import pickle
import random
import time
from collections.abc import Iterator

import pytest

from state.game import GameState, Move
from state.observe import state_from_observation
from strategies.base import Budget
from strategies.hybrid import HybridStrategy
from strategies.mcts import MctsParams
from strategies.parallel import SearchPool, available_cores, merged_best, worker_count
from tests.boards import random_play
from tests.test_strategies import assert_legal, positions

READY_WITHIN = 120.0
"""Seconds a worker may take to start (imports, the compiled kernel) on a loaded machine."""


def wait_ready(pool: SearchPool) -> None:
    """Until every worker has said it is ready (bounded: a worker that never starts fails)."""
    give_up = time.monotonic() + READY_WITHIN
    pool.wait_started(READY_WITHIN)
    while not all(w.check_ready() for w in pool._workers):
        assert time.monotonic() < give_up, "a search worker did not start"
        time.sleep(0.05)


def midgame(game: int, seed: int) -> GameState:
    """A position with several slides for the seat to move, too many sheep left for the
    endgame solver (which decides without the tree)."""
    for state in positions(game, 40, seed):
        movable = sum(max(0, n - 1) for n in state.sheep if n > 0)
        if len(state.slides()) >= 6 and movable > 30:
            return state
    raise AssertionError("no midgame position")


@pytest.fixture
def hybrid() -> Iterator[HybridStrategy]:
    strategy = HybridStrategy({"seed": 4, "workers": 1})
    assert strategy.pool is not None
    wait_ready(strategy.pool)
    yield strategy
    strategy.close()


# ------------------------------------------------------------------------- pickling


@pytest.mark.parametrize("game", [1, 2, 3, 4])
def test_a_pickled_state_is_the_same_position_and_plays_on(game: int) -> None:
    for state in positions(game, 6, seed=40 + game):
        slides = state.slides()
        if slides:  # one ply of undo history, which does not travel
            cell, _d, dst = slides[0]
            state.slide(cell, dst, 1)
        copy = pickle.loads(pickle.dumps(state))
        assert copy.ply == 0 and len(pickle.dumps(state)) < 8_000  # no keys, rays, history
        assert copy.canonical() == state.canonical()
        assert copy.hash == state.hash == copy.hash_from_scratch()
        assert copy.exact_scores() == state.exact_scores()
        assert copy.geometry is pickle.loads(pickle.dumps(state)).geometry  # one per board
        # Both play on alike.
        random_play(copy, random.Random(7), 12)
        random_play(state, random.Random(7), 12)
        assert copy.canonical() == state.canonical()
        assert copy.exact_scores() == state.exact_scores()
        assert copy.hash == state.hash == copy.hash_from_scratch()


# -------------------------------------------------------------------------- merging


def test_merged_best_adds_the_visits_of_every_tree() -> None:
    """Slide (5, 1) leads in neither tree but has the most visits over both."""
    one = [(5, 1, [(3, 40, 20.0), (1, 10, 4.0)]), (7, 2, [(2, 60, 33.0)])]
    two = [(5, 1, [(3, 30, 16.0)]), (9, 4, [(1, 55, 30.0)]), (7, 2, [(2, 5, 1.0)])]
    assert merged_best([one, two]) == Move(5, 3, 1)
    assert merged_best([one]) == Move(7, 2, 2)
    assert merged_best([]) is None
    assert merged_best([[(5, 1, [(3, 0, 0.0)])]]) is None
    # Equal visits: the better mean wins.
    assert merged_best([[(5, 1, [(3, 10, 2.0)]), (6, 3, [(4, 10, 7.0)])]]) == Move(6, 4, 3)


def test_worker_count_never_asks_for_more_than_the_cores() -> None:
    assert worker_count(0) == 0 and worker_count(3) == 3
    assert worker_count(-1) == available_cores() - 1


# ---------------------------------------------------------------------- the workers


@pytest.mark.parametrize("game", [1, 3, 4])
def test_workers_search_beside_the_main_thread(game: int) -> None:
    """Every move is legal and merges the worker's tree, whose visits are its own
    iterations (game 3: from what the seat sees, hidden counts and all). Both
    searches stop by their count of iterations, long before a deadline that leaves the
    worker's report all the time it needs, however busy the machine."""
    hybrid = HybridStrategy({"seed": 4, "workers": 1, "max_iterations": 300})
    assert hybrid.pool is not None
    wait_ready(hybrid.pool)
    state = midgame(game, seed=60 + game)
    seat = state.to_move
    view = state_from_observation(
        state.setting, state.wire_map(), state.wire_sheep(seat), seat, to_move=seat
    )
    hybrid.new_game(state.setting, seat)
    try:
        for _ in range(2):
            before = view.canonical()
            budget = Budget.seconds(60)
            move = hybrid.move(view, budget)
            assert view.canonical() == before
            assert_legal(state, move)
            assert move == budget.best_move
            assert budget.info["workers"] == 1
            assert budget.info["worker_iterations"] == 300
    finally:
        hybrid.close()


def test_a_late_report_is_dropped_and_a_busy_worker_skipped() -> None:
    pool = SearchPool(1)
    try:
        wait_ready(pool)
        pool.new_game(MctsParams(), seed=3)
        state = midgame(1, seed=70)
        assert pool.start(state, time.monotonic() + 60.0) == 1
        # Still searching the first position: the next turn cannot use it ...
        assert pool.start(state, time.monotonic() + 60.0) == 0
        # ... and once stopped, its report (of the first request) is not this turn's.
        pool.cancel()
        assert pool.collect(time.monotonic() + 30.0) == []
        worker = pool._workers[0]
        give_up = time.monotonic() + 30.0
        while worker.busy is not None and time.monotonic() < give_up:
            pool._drain(worker, 0.1)
        assert worker.busy is None
        assert pool.start(state, time.monotonic() + 0.2, max_iterations=50) == 1
        (report,) = pool.collect(time.monotonic() + 30.0)
        assert report.iterations == 50 and report.stats
    finally:
        pool.close()
    assert pool.size == 0


def test_several_positions_are_shared_out_one_to_each_worker() -> None:
    """Given two positions (game 3's worlds side by side), each of two workers searches
    one of them: each report's root is the slides of one position, and both are there."""
    first, second = midgame(1, seed=90), midgame(2, seed=91)
    slides = [{(c, d) for c, d, _ in s.slides()} for s in (first, second)]
    assert slides[0] != slides[1]
    pool = SearchPool(2)
    try:
        wait_ready(pool)
        pool.new_game(MctsParams(), seed=5)
        with pytest.raises(ValueError, match="at least one position"):
            pool.start([], time.monotonic() + 60.0)
        assert pool.start([first, second], time.monotonic() + 60.0, max_iterations=300) == 2
        reports = pool.collect(time.monotonic() + 60.0)
        assert len(reports) == 2
        roots = [{(c, d) for c, d, _ in r.stats} for r in reports]
        assert all(r.iterations == 300 for r in reports)
        assert sorted(slides.index(root) for root in roots) == [0, 1]
    finally:
        pool.close()


def test_a_dead_worker_is_left_out_and_the_strategy_plays_on(
    hybrid: HybridStrategy, caplog: pytest.LogCaptureFixture
) -> None:
    assert hybrid.pool is not None
    process = hybrid.pool._workers[0].process
    process.kill()
    process.join(30)
    state = midgame(1, seed=80)
    hybrid.new_game(state.setting, state.to_move)
    with caplog.at_level(logging.WARNING, logger="strategies.parallel"):
        for _ in range(2):
            budget = Budget.seconds(0.2)
            move = hybrid.move(state, budget)
            assert_legal(state, move)
            assert "workers" not in budget.info
    assert sum("search worker" in r.getMessage() for r in caplog.records) == 1


def test_close_ends_the_worker_processes() -> None:
    strategy = HybridStrategy({"workers": 2})
    assert strategy.pool is not None
    wait_ready(strategy.pool)
    processes = [w.process for w in strategy.pool._workers]
    assert len(processes) == 2
    strategy.close()
    assert strategy.pool is None
    assert all(not p.is_alive() for p in processes)


@pytest.mark.parametrize(("fast", "ready"), [(True, True), (False, False), (True, False)])
def test_a_pool_dropped_without_close_ends_its_workers_cleanly(fast: bool, ready: bool) -> None:
    """Dropped after its worker said ready, or while it still starts (as a strategy
    made and thrown away is): the worker still finds the pool's stop event, sees the
    pool gone and ends with code 0, not with a traceback."""
    pool = SearchPool(1, fast=fast)
    if ready:
        wait_ready(pool)
    else:
        pool.wait_started(READY_WITHIN)
    process = pool._workers[0].process
    del pool  # no cycles: reference counting frees it at once
    gc.collect()
    process.join(READY_WITHIN)
    assert process.exitcode == 0
