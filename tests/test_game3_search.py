"""Game 3 on the search side: the main strategy searches one tree over the belief's
worlds and never uses a count it was not shown."""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping
from typing import Literal

import pytest

from arena.local import play_local
from state.belief import Belief, SplitPrior, ValuedSplits, split_lean, world_sampler
from state.boardgen import random_geometry
from state.game import UNKNOWN, GameState, Move
from state.observe import IngestReport, ingest, placement_report, state_from_observation
from state.settings import SETTINGS
from strategies.base import Budget
from strategies.common import only_move
from strategies.hybrid import ADAPTIVE_SPLITS, HybridStrategy, split_prior
from strategies.kernel import fast_available, wait_warm
from strategies.mcts import Mcts, MctsParams, in_turn
from strategies.registry import make_strategy
from tests.test_belief import HALF, play_hidden_game
from tests.test_parallel import wait_ready

SETTING = SETTINGS[3]


def opening(seed: int, split_of_seat_2: int) -> GameState:
    """Placement and one round of moves; seat 2's move takes ``split_of_seat_2`` sheep.

    Two calls that differ only in that split give boards with the same owners and
    different counts in seat 2's cells.
    """
    rng = random.Random(seed)
    truth = GameState(SETTING, random_geometry(SETTING, seed))
    while truth.placing:
        truth.place(rng.choice(truth.initial_positions()))
    for seat in (1, 2, 3, 4):
        cell, direction, _dst = sorted(truth.slides())[0]
        split = split_of_seat_2 if seat == 2 else 8
        truth.apply(Move(cell, split, direction))
    return truth


def viewer_state(
    truth_after_placement: GameState, truth: GameState
) -> tuple[GameState, list[IngestReport]]:
    """Seat 1's state from boards that carry every true count (as a dishonest server
    sends them); ingest must mask them."""
    board = truth_after_placement.wire_map()
    view = state_from_observation(SETTING, board, None, 1, to_move=1)
    reports = [placement_report(view)]
    reports.append(ingest(view, truth.wire_map(), truth.wire_sheep(), 1))
    return view, reports


def after_placement(seed: int) -> GameState:
    rng = random.Random(seed)
    truth = GameState(SETTING, random_geometry(SETTING, seed))
    while truth.placing:
        truth.place(rng.choice(truth.initial_positions()))
    return truth


@pytest.mark.parametrize(
    "params",
    [
        {"hidden": "belief"},
        {"hidden": "belief", "world_trees": 4},
        {"hidden": "mean"},
        {"hidden": "mean", "hedge_model": "none"},
    ],
    ids=str,
)
def test_the_search_never_reads_a_count_it_was_not_shown(params: dict[str, object]) -> None:
    """Two games whose boards differ only in seat 2's hidden counts: the strategy's
    state, belief draws, search and move must be identical (searched over the
    worlds by the Python tree, or by compiled trees one per world, or in the world of
    the belief's mean counts with its hedge world beside it, or alone)."""
    if params != {"hidden": "belief"}:
        wait_warm(None)
    seed = 21
    results = []
    for split in (3, 12):
        truth = opening(seed, split)
        view, reports = viewer_state(after_placement(seed), truth)
        for cell in view.stacks[2] + view.stacks[3] + view.stacks[4]:
            assert view.sheep[cell] == UNKNOWN
        strategy = HybridStrategy({"seed": 5, "max_iterations": 300, **params})
        strategy.new_game(SETTING, 1)
        for report in reports:
            strategy.observe(view, report)
        assert strategy.belief is not None
        draws = [strategy.belief.sample(random.Random(k)) for k in range(20)]
        budget = Budget.seconds(30)
        move = strategy.move(view.copy(), budget)
        assert move is not None and move in truth.legal_moves()
        results.append(
            (view.canonical(), draws, move, budget.info["iterations"], budget.info["nodes"])
        )
        # The truths do differ where the viewer cannot see.
        assert any(truth.sheep[c] in (3, 12) for c in truth.stacks[2])
    assert results[0] == results[1]


def seat_1_sampler(
    seed: int,
) -> tuple[GameState, GameState, Callable[[random.Random], Mapping[int, int]]]:
    """The truth after one round, seat 1's view of it, and the main strategy's world
    sampler for that view."""
    truth = opening(seed, 5)
    view, reports = viewer_state(after_placement(seed), truth)
    strategy = HybridStrategy({"seed": 1})
    strategy.new_game(SETTING, 1)
    for report in reports:
        strategy.observe(view, report)
    assert strategy.belief is not None
    return truth, view, world_sampler(view, strategy.belief)


def test_every_sampled_world_is_legal_and_own_counts_stay_true() -> None:
    truth, view, draw = seat_1_sampler(seed=4)
    rng = random.Random(0)
    for _ in range(50):
        world = draw(rng)
        for seat in (2, 3, 4):
            counts = [world[c] for c in view.stacks[seat]]
            assert min(counts) >= 1 and sum(counts) == SETTING.sheep
        assert not set(world) & set(view.stacks[1])
    # The search fills the hidden counts per iteration and puts them back.
    before = view.canonical()
    mcts = Mcts(MctsParams(playout="heuristic"), random.Random(2))
    mcts.set_root(view)
    mcts.search(view, Budget.seconds(30), float("inf"), 200, draw)
    assert view.canonical() == before and view.hash == view.hash_from_scratch()
    assert mcts.iterations == 200
    assert mcts.best() in truth.legal_moves()


@pytest.mark.skipif(not fast_available(), reason="numba is not installed")
def test_world_trees_search_each_drawn_world_on_its_own_compiled_tree() -> None:
    """``world_trees=4``: four fresh draws, each copied into one compiled tree (the
    world's counts in the hidden cells, the view's everywhere else), the view left
    as it was, the root visits summed over the trees and nothing below the root in
    Python."""
    wait_warm(None)
    truth, view, draw = seat_1_sampler(seed=4)
    drawn: list[Mapping[int, int]] = []

    def sample(rng: random.Random) -> Mapping[int, int]:
        drawn.append(draw(rng))
        return drawn[-1]

    before = view.canonical()
    hidden = [c for seat in (2, 3, 4) for c in view.stacks[seat]]
    mcts = Mcts(MctsParams(world_trees=4), random.Random(2))
    mcts.set_root(view)
    mcts.expand_root(view)
    trees = mcts.compiled_trees(view, sample)
    assert view.canonical() == before
    assert len(trees) == 4 and len(drawn) >= 4
    worlds = []
    for tree in trees:
        sheep = tree.root_sheep.tolist()
        world = {c: sheep[c] for c in hidden}
        assert world in drawn
        worlds.append(tuple(sorted(world.items())))
        assert all(sheep[c] == view.sheep[c] for c in range(len(sheep)) if c not in hidden)
    assert len(set(worlds)) > 1  # fresh draws, not one world four times
    mcts.search(view, Budget.seconds(30), float("inf"), 400, sample)
    assert view.canonical() == before and view.hash == view.hash_from_scratch()
    root = mcts.root
    assert root is not None and root.edges
    assert mcts.iterations == 400 and root.n == 400 == sum(e.n for e in root.edges)
    assert all(s.child is None for e in root.edges for s in e.splits)
    assert mcts.best() in truth.legal_moves()


@pytest.mark.skipif(not fast_available(), reason="numba is not installed")
def test_worlds_given_in_turn_go_one_to_each_compiled_tree() -> None:
    """``in_turn``: three worlds given round and round, ``world_trees=3``: each tree
    copies one of them, each world in one tree."""
    wait_warm(None)
    _truth, view, draw = seat_1_sampler(seed=4)
    rng = random.Random(3)
    worlds = [dict(draw(rng)) for _ in range(3)]
    assert len({tuple(sorted(w.items())) for w in worlds}) == 3
    hidden = list(worlds[0])
    mcts = Mcts(MctsParams(world_trees=3), random.Random(2))
    mcts.set_root(view)
    mcts.expand_root(view)
    trees = mcts.compiled_trees(view, in_turn(worlds))
    held = []
    for tree in trees:
        sheep = tree.root_sheep.tolist()
        held.append({c: sheep[c] for c in hidden})
    assert sorted(map(sorted, map(dict.items, held))) == sorted(
        map(sorted, map(dict.items, worlds))
    )
    with pytest.raises(ValueError, match="at least one world"):
        in_turn([])


def worlds_searched(strategy: HybridStrategy, view: GameState, truth: GameState) -> float:
    """The main strategy's move on ``view`` (at most 400 iterations): a legal move of the
    truth, the view left as it was, all 400 iterations unless the position was solved;
    returns how many worlds it searched side by side (``worlds`` in its figures)."""
    before = view.canonical()
    budget = Budget.seconds(30)
    move = strategy.move(view, budget)
    assert view.canonical() == before and view.hash == view.hash_from_scratch()
    assert move is not None and move in truth.legal_moves()
    if "solved" not in budget.info:
        assert budget.info["iterations"] == 400
    return budget.info["worlds"]


@pytest.mark.skipif(not fast_available(), reason="numba is not installed")
def test_likely_worlds_are_searched_where_the_sources_are_in_doubt() -> None:
    """``likely_worlds=4`` with four hypotheses per seat, in games of half splits: where
    two or more explanations are about as likely, the main strategy searches their
    worlds (``worlds`` in its figures), plays a legal move of the truth and leaves the
    view as it was; where one is likelier, the mean world alone (``worlds`` 1)."""
    wait_warm(None)
    searched: dict[int, int] = {}

    def check(view: GameState, belief: Belief, truth: GameState) -> None:
        if view.placing or not view.slides() or view.to_move != belief.viewer:
            return
        strategy = HybridStrategy(
            {
                "seed": 1,
                "max_iterations": 400,
                "likely_worlds": 4,
                "belief_hypotheses": 4,
                "hedge_model": "none",
            }
        )
        strategy.new_game(SETTING, belief.viewer)
        strategy.belief = belief
        expected = len(belief.likely_worlds(view, 4, 0.5))
        if strategy._endgame(belief.mean_world(view)):
            expected = 1
        assert worlds_searched(strategy, view, truth) == expected
        searched[expected] = searched.get(expected, 0) + 1

    for seed in range(2):
        play_hidden_game(seed, 2 + seed, splits="half", prior=HALF, on_view=check, hypotheses=4)
    assert searched.get(1, 0) > 0 and sum(n for k, n in searched.items() if k > 1) > 0


def watch_random_game(
    seed: int,
    strategy: HybridStrategy,
    split: Callable[[GameState, int, int], int],
    on_report: Callable[[GameState, IngestReport], None] | None = None,
) -> None:
    """A random game 3 (slides uniformly random, each split ``split(truth, cell, dst)``)
    that seat 2's ``strategy`` watches: each board it is sent is ingested into its view
    and observed; ``on_report(view, report)`` is called before each observation."""
    rng = random.Random(seed)
    truth = GameState(SETTING, random_geometry(SETTING, seed))
    strategy.new_game(SETTING, 2)
    view: GameState | None = None
    while not truth.is_terminal():
        if truth.to_move == 2 and (truth.placing or truth.has_moves(2)):
            board, sheep = truth.wire_map(), truth.wire_sheep()
            if view is None:
                view = state_from_observation(SETTING, board, None, 2, to_move=2)
                report = placement_report(view)
            else:
                report = ingest(view, board, sheep, 2)
            if on_report is not None:
                on_report(view, report)
            strategy.observe(view, report)
        if truth.placing:
            truth.place(rng.choice(truth.initial_positions()))
        elif not truth.slides():
            truth.apply_pass()
        else:
            cell, _d, dst = rng.choice(truth.slides())
            truth.slide(cell, dst, split(truth, cell, dst))


@pytest.mark.skipif(not fast_available(), reason="numba is not installed")
def test_the_source_of_a_move_in_doubt_is_weighed_by_a_search_from_the_movers_seat() -> None:
    """``source_search``: in random games of half splits seen by seat 2, ingest keeps
    the position before each move of another seat (the mover to move, the new cell
    still free, every other seat's count hidden), some of them moves whose source is in
    doubt, and the main strategy's belief takes odds for those from a search there: its
    trees' ``choice`` is no longer 1, and its mean world still gives each seat its
    total on stacks of one sheep at least."""
    wait_warm(None)
    doubted = 0
    for seed in range(3):
        strategy = HybridStrategy({"seed": 1, "source_search": 200, "belief_hypotheses": 2})

        def check(
            view: GameState, report: IngestReport, strategy: HybridStrategy = strategy
        ) -> None:
            nonlocal doubted
            for index, before in report.positions.items():
                action = report.actions[index]
                assert action.kind == "move"
                doubted += len(action.cells) > 1
                assert before.to_move == action.seat and before.owner[action.dst] == 0
                assert all(before.sheep[c] == UNKNOWN for p in (1, 3, 4) for c in before.stacks[p])
            if strategy.belief is not None:  # the belief before this report, as it was
                world = strategy.belief.mean_world(view)
                for p in (1, 3, 4):
                    if view.stacks[p]:
                        counts = [world.sheep[c] for c in view.stacks[p]]
                        assert sum(counts) == 16 and min(counts) >= 1

        watch_random_game(seed, strategy, lambda truth, cell, _: truth.sheep[cell] // 2, check)
        assert strategy.belief is not None
        if seed == 2:
            choices = [t.choice for s in strategy.belief.seats.values() for t in s.trees]
            assert doubted > 0 and any(c < 1.0 for c in choices)


@pytest.mark.skipif(not fast_available(), reason="numba is not installed")
def test_split_sizes_are_judged_by_playouts_from_the_movers_seat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``split_search``: seat 2 watches games whose other seats choose among 1, half and
    all but one sheep by random playouts of their own, as ``flatmc`` does. The main
    strategy's belief then takes, for each such move off a stack of four or more in its
    mean world, the three sizes' shares (a distribution), its adaptive prior's three-size
    model reads them, and they give the size chosen more than the third that shares
    knowing nothing would."""
    import strategies.hybrid as hybrid
    from strategies.common import score_rewards
    from strategies.kernel import PlayoutPolicy, ready_kernel

    wait_warm(None)
    monkeypatch.setattr(hybrid, "SPLIT_TIME", 60.0)  # the playouts asked, not the clock's
    kernel, policy, rng = ready_kernel(), PlayoutPolicy.uniform(), random.Random(7)
    hits = judged = 0
    told: list[float] = []  # the share each judged move gave the size chosen
    for seed in range(6):
        strategy = HybridStrategy({"seed": 1, "split_search": 60})
        chosen: dict[int, int] = {}  # new cell -> 0, 1, 2: the size (1, half, n - 1) taken

        def by_value(truth: GameState, cell: int, dst: int, chosen: dict[int, int] = chosen) -> int:
            n, mover = truth.sheep[cell], truth.to_move
            sizes = (1, n // 2, n - 1)
            value = [0.0, 0.0, 0.0]
            for i, m in enumerate(sizes):
                for _ in range(60 if mover != 2 and n >= 4 else 0):
                    truth.slide(cell, dst, m)
                    scores = kernel.scores(truth, policy, rng)
                    truth.undo()
                    value[i] += score_rewards(SETTING, scores, 0.05)[mover - 1]
            best = max(range(3), key=lambda i: value[i])
            chosen[dst] = best
            return sizes[best]

        watch_random_game(seed, strategy, by_value)
        assert strategy.belief is not None
        for p in (1, 3, 4):
            tree = strategy.belief.seats[p].best
            models = {name: model for name, _, model in tree.mixture.components}
            assert isinstance(models["three"], ValuedSplits)
            for node in tree.nodes:
                shares = node.shares
                if shares is not None:
                    assert sum(shares) == pytest.approx(1.0) and min(shares) > 0
                    judged += 1
                    told.append(shares[chosen[node.cell]])
                    hits += max(range(3), key=lambda i: shares[i]) == chosen[node.cell]
    # Shares that knew nothing would give the chosen size a third on average.
    assert judged > 40 and statistics.fmean(told) > 0.4 and hits > judged / 3


def test_hidden_splits_in_the_tree_come_from_the_split_sampler_when_asked() -> None:
    """``hidden_split="belief"``: every slide another seat makes in the tree takes its
    split from the sampler (once per traversal, for that seat and its stack's count in
    the iteration's world), and the size drawn is the one played; ``"area"`` never
    asks it."""
    truth, view, draw = seat_1_sampler(seed=4)
    before = view.canonical()

    def run(mode: str, size: Callable[[int], int]) -> tuple[Mcts, list[tuple[int, int]]]:
        asked: list[tuple[int, int]] = []

        def sampler(seat: int, count: int, rng: random.Random) -> int:
            asked.append((seat, count))
            assert view.sheep[view.stacks[seat][0]] != UNKNOWN  # inside a world
            return size(count)

        mcts = Mcts(MctsParams(playout="heuristic", hidden_split=mode), random.Random(2))
        mcts.set_root(view)
        mcts.search(view, Budget.seconds(30), float("inf"), 300, draw, 16, sampler)
        assert view.canonical() == before
        assert mcts.best() in truth.legal_moves()
        return mcts, asked

    _, asked = run("area", lambda n: 1)
    assert asked == []
    one_off, asked = run("belief", lambda n: 1)
    assert asked and {seat for seat, _ in asked} <= {2, 3, 4}
    assert all(count >= 2 for _, count in asked)
    traversals = 0
    stack = [one_off.root]
    while stack:
        node = stack.pop()
        assert node is not None
        for e in node.edges or ():
            traversals += e.n if node.to_move != 1 else 0
            stack.extend(s.child for s in e.splits if s.child is not None)
        if node.pass_child is not None:
            stack.append(node.pass_child)
    assert traversals == len(asked)
    # The same search with all but one sheep moved instead searches other positions.
    all_but_one, _ = run("belief", lambda n: n - 1)

    def visits(mcts: Mcts) -> list[int]:
        assert mcts.root is not None and mcts.root.edges is not None
        return [e.n for e in mcts.root.edges]

    assert visits(one_off) != visits(all_but_one)


def test_a_world_pool_draws_each_world_once() -> None:
    """``worlds=8``: eight exact draws serve 300 iterations; ``worlds=0``: 16 draws
    to find the stacks that never move, then a fresh draw for every iteration."""
    truth, view, draw = seat_1_sampler(seed=4)
    before = view.canonical()
    for worlds, draws in ((8, 8), (64, 64), (0, 16 + 300 - 16)):
        calls = 0

        def counting(rng: random.Random) -> Mapping[int, int]:
            nonlocal calls
            calls += 1
            return draw(rng)

        mcts = Mcts(MctsParams(playout="heuristic"), random.Random(2))
        mcts.set_root(view)
        mcts.search(view, Budget.seconds(30), float("inf"), 300, counting, worlds)
        assert mcts.iterations == 300 and mcts.best() in truth.legal_moves()
        assert calls == draws, worlds
        assert view.canonical() == before


def test_a_slide_that_exists_in_no_world_is_never_searched() -> None:
    """Seat 2's second stack holds one sheep in every world: no tree edge moves it;
    its first stack holds the rest and does move."""
    seed = 9
    truth = opening(seed, 5)
    view, _ = viewer_state(after_placement(seed), truth)
    first, second = view.stacks[2]
    rest = SETTING.sheep

    def draw(rng: random.Random) -> dict[int, int]:
        out = {c: rest // max(1, len(view.stacks[p])) for p in (3, 4) for c in view.stacks[p]}
        out.update({first: rest - 1, second: 1})
        return out

    mcts = Mcts(MctsParams(playout="heuristic"), random.Random(3))
    mcts.set_root(view)
    mcts.search(view, Budget.seconds(30), float("inf"), 400, draw)
    moved: set[int] = set()
    stack = [mcts.root]
    while stack:
        node = stack.pop()
        assert node is not None
        for e in node.edges or ():
            if node.to_move == 2 and e.n:
                moved.add(e.cell)
            stack.extend(s.child for s in e.splits if s.child is not None)
        if node.pass_child is not None:
            stack.append(node.pass_child)
    assert first in moved
    assert second not in moved


def test_belief_prior_and_reset_after_a_resync() -> None:
    half, uniform = split_prior("half", 16), split_prior("uniform", 16)
    assert isinstance(half, SplitPrior) and isinstance(uniform, SplitPrior)
    assert half.table[16][8] > 3 * uniform.table[16][8]
    seed = 4
    truth = opening(seed, 5)
    view, reports = viewer_state(after_placement(seed), truth)
    strategy = HybridStrategy({"seed": 1, "max_iterations": 50})
    strategy.new_game(SETTING, 1)
    for report in reports:
        strategy.observe(view, report)
    # A resync loses the split history: the belief starts again, the search still
    # covers every hidden stack (the reference's guess for the ones it never saw made).
    strategy.observe(view, IngestReport(resynced=True, reason="test"))
    assert strategy.belief is not None
    world = world_sampler(view, strategy.belief)(random.Random(1))
    assert all(world[c] == SETTING.sheep // 2 for c in view.stacks[2])
    assert strategy.move(view.copy(), Budget.seconds(30)) in truth.legal_moves()


def observed_opening(
    prior: str,
) -> tuple[GameState, GameState, list[IngestReport], HybridStrategy]:
    """Seat 1's main strategy with ``split_prior=prior`` after observing the placement
    and one round of moves of ``opening(4, 5)``: (truth, view, reports, strategy)."""
    truth = opening(4, 5)
    view, reports = viewer_state(after_placement(4), truth)
    strategy = HybridStrategy({"seed": 1, "max_iterations": 50, "split_prior": prior})
    strategy.new_game(SETTING, 1)
    for report in reports:
        strategy.observe(view, report)
    return truth, view, reports, strategy


def test_the_adaptive_split_prior_weighs_models_per_seat_and_searches() -> None:
    truth, view, _reports, strategy = observed_opening("adaptive")
    assert strategy.belief is not None
    for seat in strategy.belief.seats.values():
        weights = seat.model_weights()
        assert set(weights) == {name for name, _ in ADAPTIVE_SPLITS}
        assert abs(sum(weights.values()) - 1.0) < 1e-9
    assert strategy.move(view.copy(), Budget.seconds(30)) in truth.legal_moves()


def test_the_leaning_split_prior_reads_each_seen_move_off_the_board_and_searches() -> None:
    """With ``split_prior=leaning`` the strategy hands the ingested board to the belief:
    each stack a move made carries that move's ``split_lean`` on it."""
    truth, view, reports, strategy = observed_opening("leaning")
    assert strategy.belief is not None
    moves = [a for r in reports for a in r.actions if a.kind == "move" and a.seat != 1]
    assert len(moves) == 3  # seats 2, 3 and 4 each moved once
    leans = []
    for action in moves:
        seat = strategy.belief.seats[action.seat]
        child = seat.node_of[action.dst]
        (source,) = [n.cell for n in seat.best.nodes if child in n.events]
        leans.append(seat.best.nodes[child].lean)
        assert leans[-1] == split_lean(view, source, action.dst)
    assert leans == [1, 1, 1]  # without the board every move would have lean 0
    assert strategy.move(view.copy(), Budget.seconds(30)) in truth.legal_moves()


@pytest.mark.parametrize("hidden", ["belief", "mean"])
def test_a_stopped_budget_still_gets_a_legal_move_from_the_game_3_search(hidden: str) -> None:
    """The search over worlds (or in the mean world) checks the budget before every
    iteration: stopped before the choice, it plays the cheap key's move."""
    truth = opening(4, 5)
    view, reports = viewer_state(after_placement(4), truth)
    strategy = HybridStrategy({"seed": 1, "hidden": hidden})
    strategy.new_game(SETTING, 1)
    for report in reports:
        strategy.observe(view, report)
    budget = Budget.seconds(30)
    budget.stop()
    move = strategy.move(view.copy(), budget)
    assert move in truth.legal_moves() and move == budget.best_move
    assert budget.info["iterations"] == 0


class ForcedMoves(HybridStrategy):
    """The hybrid strategy, noting for each move whether it had a single move to play
    (one stack of 2 with one slide): that move is played at once, without a search."""

    def __init__(self, params: dict[str, object]) -> None:
        super().__init__(params)
        self.forced: list[bool] = []

    def move(self, state: GameState, budget: Budget) -> Move | None:
        self.forced.append(only_move(state, state.slides()))
        return super().move(state, budget)


def test_a_game_3_selfplay_game_has_no_illegal_moves_and_searches_every_move() -> None:
    """Each search stops at its iteration count, long before a clock that no load on a
    shared host reaches: every move of the measured seat after the placement that had a
    choice reports the iterations it ran, whatever else the machine is doing. (The
    deadline itself is tested with stopped budgets, which cannot depend on the load.)"""
    count: dict[str, object] = {"max_iterations": 60, "placement_time_fraction": 0.0}
    measured = ForcedMoves({"seed": 1} | count)
    players = [
        measured,
        make_strategy("uct", {"seed": 2, "max_iterations": 60}),
        make_strategy("hybrid", {"hidden": "uniform", "seed": 3} | count),
        make_strategy("hybrid", {"hidden": "belief", "seed": 4} | count),
    ]
    game = play_local(3, 77, players, 60.0)
    assert [s.illegal for s in game.record.stats] == [0, 0, 0, 0]
    moves = game.figures[0]
    assert len(moves) == len(measured.forced) >= 5
    for figures, forced in zip(moves, measured.forced, strict=True):
        assert ("iterations" in figures) != forced, moves
    searched = [f["iterations"] for f in moves if "iterations" in f and "solve_depth" not in f]
    assert searched and all(0 < n <= 60 for n in searched), moves


@pytest.mark.parametrize(("splits", "trust"), [("half", 0.5), ("one", 0.5), ("one", 0.0)])
def test_endgame_trust_starts_the_solver_against_half_splitters_only(
    splits: Literal["half", "one"], trust: float
) -> None:
    """``endgame_trust=0.5`` with the adaptive prior: where the solver could start, it
    does against seats that split in half (the belief's half model holds them), and
    against seats that split off one sheep only where none of them can move again (their
    counts then decide nothing); elsewhere the tree plays, a legal move of the truth.
    With 0 it always starts."""
    prior = split_prior("adaptive", 16)
    seen: list[tuple[float, bool]] = []  # (trusted, another seat can still move)

    def check(view: GameState, belief: Belief, truth: GameState) -> None:
        if view.placing or not view.slides() or view.to_move != belief.viewer:
            return
        # The movable sheep start the solver: random games leave many walled in.
        params: dict[str, object] = {"seed": 1, "max_iterations": 100, "endgame_trust": trust}
        strategy = HybridStrategy(params | {"endgame_count": "movable"})
        strategy.new_game(SETTING, belief.viewer)
        strategy.belief = belief
        world = belief.mean_world(view)
        slides = world.slides()
        if not strategy._endgame(world) or only_move(world, slides):
            return  # not the solver's position, or a forced move played at once
        others = any(world.slides(seat) for seat in belief.seats)
        budget = Budget.seconds(30)
        move = strategy.move(view, budget)
        assert move is not None and move in truth.legal_moves()
        seen.append((budget.info["solve_trusted"], others))
        # The solver ran exactly where the counts were trusted.
        assert ("solve_depth" in budget.info) == (budget.info["solve_trusted"] == 1.0)

    for seed in range(6):
        play_hidden_game(seed, 1 + seed % 4, splits=splits, prior=prior, on_view=check)
    assert sum(others for _, others in seen) >= 2
    if trust == 0 or splits == "half":
        assert all(trusted for trusted, _ in seen)
    else:
        assert all(trusted == (not others) for trusted, others in seen)


@pytest.mark.skipif(not fast_available(), reason="numba is not installed")
@pytest.mark.parametrize("models", ["three", "three,uniform"])
def test_the_hedge_worlds_are_searched_beside_the_mean_world(models: str) -> None:
    """``hedge_model=three`` (the default), in games of seats that split 1, half or all
    but one by the room: where the three-size world differs from the mean world the main
    strategy searches both (``worlds`` 2 in its figures), else the mean world alone (1).
    With a second model (``three,uniform``) its world is searched too where it differs
    from both (3). It plays a legal move of the truth and leaves the view as it was."""
    wait_warm(None)
    searched: dict[int, int] = {}
    adaptive = split_prior("adaptive", 16)

    def check(view: GameState, belief: Belief, truth: GameState) -> None:
        if view.placing or not view.slides() or view.to_move != belief.viewer:
            return
        strategy = HybridStrategy({"seed": 1, "max_iterations": 400, "hedge_model": models})
        strategy.new_game(SETTING, belief.viewer)
        strategy.belief = belief
        distinct = [belief.mean_counts(view)]
        for model in models.split(","):
            counts = belief.hedge_counts(view, model, 0.1)
            if counts not in distinct:
                distinct.append(counts)
        endgame = strategy._endgame(belief.mean_world(view))
        expected = 1 if endgame else len(distinct)
        assert worlds_searched(strategy, view, truth) == expected
        searched[expected] = searched.get(expected, 0) + 1

    for seed in range(2):
        play_hidden_game(seed, 2 + seed, splits="leaning", prior=adaptive, on_view=check)
    assert searched.get(1, 0) > 0 and searched.get(2, 0) > 0
    if "," in models:
        assert searched.get(3, 0) > 0


@pytest.mark.skipif(not fast_available(), reason="numba is not installed")
def test_with_a_worker_the_hedge_world_is_the_workers_and_the_mean_world_the_mains() -> None:
    """``workers=1``: where the hedge world differs from the mean world, the worker
    searches it and the main strategy the mean world alone (``worlds`` 2 in all,
    ``worker_worlds`` 1), each its own 400 iterations, the root statistics merged into a
    legal move of the truth; where they are the same, the worker searches the mean world
    beside the main strategy as in any game."""
    wait_warm(None)
    strategy = HybridStrategy(
        {"seed": 1, "max_iterations": 400, "hedge_model": "three", "workers": 1}
    )
    assert strategy.pool is not None
    wait_ready(strategy.pool)
    searched: dict[int, int] = {}

    def check(view: GameState, belief: Belief, truth: GameState) -> None:
        if view.placing or not view.slides() or view.to_move != belief.viewer:
            return
        strategy.new_game(SETTING, belief.viewer)
        strategy.belief = belief
        differ = belief.hedge_counts(view, "three", 0.1) != belief.mean_counts(view)
        expected = 2 if differ and not strategy._endgame(belief.mean_world(view)) else 1
        budget = Budget.seconds(60)
        move = strategy.move(view, budget)
        assert move is not None and move in truth.legal_moves()
        if "solved" in budget.info:
            return
        assert budget.info["worlds"] == expected
        assert budget.info["workers"] == 1 and budget.info["worker_iterations"] == 400
        assert budget.info["iterations"] == 400
        assert budget.info.get("worker_worlds", 0) == (1 if expected == 2 else 0)
        searched[expected] = searched.get(expected, 0) + 1

    try:
        play_hidden_game(0, 2, splits="leaning", prior=split_prior("adaptive", 16), on_view=check)
    finally:
        strategy.close()
    assert searched.get(1, 0) > 0 and searched.get(2, 0) > 0
