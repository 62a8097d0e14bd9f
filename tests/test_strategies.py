"""The searching strategies: legal moves under tight deadlines, alpha-beta against plain
minimax, hashes after make/unmake, tactics, parameters and the self-play runner."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace

import pytest

from state.boardgen import random_geometry
from state.game import UNKNOWN, GameState, Move
from state.geometry import Geometry
from state.observe import state_from_observation
from state.playout import random_placement
from state.scoring import tournament_points
from state.settings import SETTINGS, get_setting
from strategies.alphabeta import INF, AlphaBeta
from strategies.base import Budget, ParameterError
from strategies.common import (
    KEY_WEIGHTS,
    PRIOR_TERMS,
    EvalWeights,
    determinize,
    evaluate,
    final_results,
    paranoid_rewards,
    score_rewards,
    slide_key,
    slide_terms,
)
from strategies.hybrid import HybridStrategy
from strategies.kernel import SPLIT_RULES, PlayoutPolicy, fast_available, ready_kernel, wait_warm
from strategies.mcts import COMPILED_CHUNK, COMPILED_OFFER_CHUNKS, Mcts, MctsParams
from strategies.mcts_tree import Node, softmax
from strategies.placement import choose_placement, static_placement_scores
from strategies.registry import STRATEGIES, make_strategy
from strategies.yardsticks import flat_splits
from tests.boards import random_play

SEARCHERS = ["seedlike", "uct", "flatmc", "hybrid"]
WEIGHTS = EvalWeights(1.2, 1.0, 0.2)


def positions(game: int, count: int, seed: int) -> list[GameState]:
    """Positions from random play, from just after placement to the very end."""
    rng = random.Random(seed)
    out: list[GameState] = []
    setting = SETTINGS[game]
    while len(out) < count:
        state = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(state, rng)
        random_play(state, rng, rng.choice([0, 10, 30, 45, 200]))
        out.append(state)
    return out


def one_move_position() -> GameState:
    """Seat 1 has a stack of 2 with exactly one slide: one legal move. Seat 2 has none."""
    n = 12
    playable = [False] * (n * n)
    for x, y in ((0, 0), (1, 0), (2, 0), (5, 5), (7, 7), (9, 9)):
        playable[x * n + y] = True
    g = Geometry(n, playable)
    state = GameState(SETTINGS[1], g)
    for xy in ((0, 0), (5, 5), (7, 7), (9, 9)):
        state.place(g.index(*xy))
    # Fewer sheep than a placement gives, so that only one split is possible.
    state.sheep[g.index(0, 0)] = 2
    state.hash = state.hash_from_scratch()
    state.clear_history()
    return state


def assert_legal(state: GameState, move: Move | None) -> None:
    legal = state.legal_moves()
    if not legal:
        assert move is None
    else:
        assert move in legal


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize("game", [1, 2, 3, 4])
def test_every_strategy_returns_a_legal_move_or_none(name: str, game: int) -> None:
    strategy = make_strategy(name, {"seed": 3})
    for state in positions(game, 4, seed=game * 7):
        seat = state.to_move
        strategy.new_game(state.setting, seat)
        view = state_from_observation(
            state.setting, state.wire_map(), state.wire_sheep(seat), seat, to_move=seat
        )
        before = view.canonical()
        budget = Budget.seconds(0.05)
        move = strategy.move(view, budget)
        assert view.canonical() == before  # the position handed over is left as it was
        assert_legal(state, move)
        if move is not None:
            assert budget.best_move == move


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_one_legal_move_and_none(name: str) -> None:
    state = one_move_position()
    strategy = make_strategy(name, {"seed": 1})
    strategy.new_game(state.setting, 1)
    assert strategy.move(state, Budget.seconds(0.05)) == state.legal_moves()[0]
    state.skip_turn()  # seat 2 at (3,0) cannot move at all
    assert state.legal_moves() == []
    assert strategy.move(state, Budget.seconds(0.05)) is None


class StopOnOffer(Budget):
    """A generous budget that another thread stops when the ``n``-th move is posted;
    the poster waits until the stop has happened."""

    def __init__(self, seconds: float, n: int) -> None:
        super().__init__(time.monotonic() + seconds)
        self.offers = 0
        self.n = n

    def offer_move(self, move: Move | None) -> None:
        super().offer_move(move)
        self.offers += 1
        if self.offers == self.n:
            stopper = threading.Thread(target=self.stop)
            stopper.start()
            stopper.join()


@pytest.mark.parametrize("name", SEARCHERS)
@pytest.mark.parametrize("game", [1, 2])
def test_a_spent_budget_gets_a_legal_move_without_searching(name: str, game: int) -> None:
    """A budget already past its deadline (a machine too slow for the time limit) or
    stopped before the choice: a legal move, posted, and no search at all."""
    strategy = make_strategy(name, {"seed": 5})
    for state in positions(game, 3, seed=11 + game):
        stopped = Budget.seconds(30.0)
        stopped.stop()
        for budget in (Budget(time.monotonic() - 1.0), stopped):
            strategy.new_game(state.setting, state.to_move)
            move = strategy.move(state, budget)
            assert_legal(state, move)
            assert move == budget.best_move
            assert budget.info.get("iterations", 0) == 0  # uct, hybrid
            assert budget.info.get("leaves", 0) == 0  # seedlike


@pytest.mark.parametrize("tree", ["python", "compiled"])
def test_stop_from_another_thread_ends_the_search(tree: str) -> None:
    """The MCTS checks the budget every iteration (the compiled tree: every chunk):
    stopped from another thread when it posts its first move (the Python tree after
    32 iterations, the compiled one after its first write-back), it ends right there."""
    wait_warm(None)  # the compiled tree ready, not compiling behind the search
    compiled = tree == "compiled" and fast_available()
    state = next(s for s in positions(2, 20, seed=4) if s.slides())
    strategy = make_strategy("hybrid", {"seed": 1, "endgame_fraction": 0, "tree": tree})
    strategy.new_game(state.setting, state.to_move)
    budget = StopOnOffer(30.0, 2)  # the cheap key's move, then the search's first
    move = strategy.move(state, budget)
    assert_legal(state, move)
    first = COMPILED_CHUNK * COMPILED_OFFER_CHUNKS if compiled else 32
    assert budget.info["iterations"] == first


def test_placement_is_a_free_border_cell_and_not_the_first() -> None:
    setting = SETTINGS[1]
    state = GameState(setting, random_geometry(setting, 21))
    strategy = make_strategy("hybrid", {"seed": 2})
    chosen = []
    for _ in range(4):
        cell = strategy.place(state, Budget.seconds(0.1))
        assert cell in state.initial_positions()
        chosen.append(cell)
        state.place(cell)
    assert chosen[0] != state.geometry.border[0] or chosen[1] != state.geometry.border[1]


def test_placement_playouts_judge_the_best_static_cells() -> None:
    """With the time for it, the placement plays out from each of its ``candidates``
    best static cells (the later seats placing on their best static cells) and takes
    one of them; without time, the static best."""
    setting = SETTINGS[1]
    state = GameState(setting, random_geometry(setting, 8))
    placer = make_strategy("hybrid", {"seed": 8, "placement_time_fraction": 0.0})
    state.place(placer.place(state, Budget.seconds(1.0)))
    scores = static_placement_scores(state)
    ranked = sorted(scores, key=lambda c: -scores[c])
    budget = Budget.seconds(30.0)
    cell = choose_placement(
        state, budget, random.Random(1), 0.01, 3, ready_kernel(), PlayoutPolicy(), 0.05
    )
    assert cell in ranked[:3] and budget.info["placement_playouts"] >= 3
    assert state.placed == 1  # every playout undone
    static = choose_placement(
        state, Budget.seconds(30.0), random.Random(1), 0.0, 3, ready_kernel(), PlayoutPolicy(), 0.05
    )
    assert static == ranked[0]


# ------------------------------------------------------------------ alpha-beta


def _plain_brs(ab: AlphaBeta, state: GameState, depth: int, maxing: bool) -> float:
    if depth <= 0:
        return ab._leaf(state)
    if maxing:
        moves = ab._moves(state, False, None)
        if not moves:
            if state.is_terminal():
                return ab._terminal_value(state)
            state.skip_turn()
            v = _plain_brs(ab, state, depth - 1, False)
            state.undo()
            return v
        best = -INF
        for mv in moves:
            state.slide(mv[0], mv[2], mv[3])
            best = max(best, _plain_brs(ab, state, depth - 1, False))
            state.undo()
        return best
    best = INF
    any_move = False
    skipped = 0
    while state.to_move != ab.seat:
        if state.to_move != ab.ally:
            for mv in ab._moves(state, False, None):
                any_move = True
                state.slide(mv[0], mv[2], mv[3])
                extra = 0
                while state.to_move != ab.seat:
                    state.skip_turn()
                    extra += 1
                best = min(best, _plain_brs(ab, state, depth - 1, True))
                for _ in range(extra + 1):
                    state.undo()
        state.skip_turn()
        skipped += 1
    if not any_move:
        best = _plain_brs(ab, state, depth - 1, True)
    for _ in range(skipped):
        state.undo()
    return best


def _plain_paranoid(ab: AlphaBeta, state: GameState, depth: int, idle: int) -> float:
    if idle >= 4:
        return ab._terminal_value(state)
    if depth <= 0:
        return ab._leaf(state)
    moves = ab._moves(state, False, None)
    if not moves:
        state.skip_turn()
        v = _plain_paranoid(ab, state, depth, idle + 1)
        state.undo()
        return v
    maxing = state.to_move in (ab.seat, ab.ally)
    values = []
    for mv in moves:
        state.slide(mv[0], mv[2], mv[3])
        values.append(_plain_paranoid(ab, state, depth - 1, 0))
        state.undo()
    return max(values) if maxing else min(values)


@pytest.mark.parametrize("policy", ["brs", "paranoid"])
@pytest.mark.parametrize("game", [1, 4])
def test_alphabeta_equals_plain_minimax(policy: str, game: int) -> None:
    rng = random.Random(game)
    checked = 0
    for state in positions(game, 30, seed=100 + game):
        slides = state.slides()
        if not slides or len(slides) > 6:
            continue
        depth = 2 if len(slides) > 3 else 3
        ab = AlphaBeta(policy, WEIGHTS, splits=1)
        h = state.hash
        r = ab.search(state, Budget.seconds(60), time.monotonic() + 60, max_depth=depth)
        assert state.hash == h and state.ply == 0
        if r.solved and r.depth < depth:
            depth = r.depth
        plain = (
            _plain_brs(ab, state, depth, True)
            if policy == "brs"
            else _plain_paranoid(ab, state, depth, 0)
        )
        assert r.value == pytest.approx(plain), (policy, depth)
        checked += 1
        if checked >= 4:
            break
    assert checked >= 2, rng


def test_zobrist_hashes_agree_after_search_and_make_unmake() -> None:
    rng = random.Random(9)
    for state in positions(1, 6, seed=31):
        h = state.hash
        assert h == state.hash_from_scratch()
        # Random make/unmake sequences, including skipped turns.
        for _ in range(5):
            plies = 0
            for _ in range(rng.randrange(1, 12)):
                slides = state.slides()
                if slides:
                    cell, _d, dst = rng.choice(slides)
                    state.slide(cell, dst, rng.randint(1, state.sheep[cell] - 1))
                else:
                    state.skip_turn()
                plies += 1
                assert state.hash == state.hash_from_scratch()
            for _ in range(plies):
                state.undo()
            assert state.hash == h
        HybridStrategy({"seed": 1, "max_iterations": 30}).move(state, Budget.seconds(0.2))
        assert state.hash == h and state.ply == 0


def trap_position() -> tuple[GameState, Move]:
    """Seat 1 on (5,4) can slide up a corridor or one cell down to (5,5), the only free
    neighbour of the three opponents' stacks: the slide down traps all three."""
    n = 12
    cells = [(5, y) for y in range(0, 6)] + [(4, 5), (6, 5), (5, 6)]
    playable = [False] * (n * n)
    for x, y in cells:
        playable[x * n + y] = True
    g = Geometry(n, playable)
    state = GameState(SETTINGS[1], g)
    for xy in ((5, 4), (4, 5), (6, 5), (5, 6)):
        state.place(g.index(*xy))
    state.clear_history()
    return state, Move(g.index(5, 4), 0, 8)


@pytest.mark.parametrize("params", [{}, {"ab_fraction": 0.2}, {"ab_fraction": 1.0}])
def test_the_slide_that_traps_three_stacks_is_found(params: dict[str, float]) -> None:
    state, trap = trap_position()
    strategy = HybridStrategy({"seed": 4, **params})
    strategy.new_game(state.setting, 1)
    move = strategy.move(state, Budget.seconds(0.3))
    assert move is not None
    assert (move.cell, move.direction) == (trap.cell, trap.direction)


@pytest.mark.parametrize("playouts", [1, 40])
def test_flatmc_finds_the_trap_and_tries_three_splits(playouts: int) -> None:
    """``flatmc`` deals the same number of playouts to every slide with the splits 1,
    half and all but one, and plays the best mean: here the trap."""
    state, trap = trap_position()
    strategy = make_strategy("flatmc", {"seed": 2, "playouts": playouts})
    strategy.new_game(state.setting, 1)
    budget = Budget.seconds(30.0)
    move = strategy.move(state, budget)
    assert move is not None
    assert (move.cell, move.direction) == (trap.cell, trap.direction)
    slides = len(state.slides())
    assert flat_splits(16) == [1, 8, 15] and flat_splits(2) == [1] and flat_splits(3) == [1, 2]
    assert budget.info["candidates"] == 3 * slides
    assert budget.info["iterations"] == 3 * slides * playouts


# -------------------------------------------------------------------- pieces


def test_determinize_fills_hidden_counts_consistently() -> None:
    state = positions(3, 1, seed=8)[0]
    view = state_from_observation(
        state.setting, state.wire_map(), state.wire_sheep(1), 1, to_move=state.to_move
    )
    assert any(view.sheep[c] == UNKNOWN for c in view.stacks[2])
    det = determinize(view, 1)
    assert det is not view
    for p in (2, 3, 4):
        counts = [det.sheep[c] for c in det.stacks[p]]
        assert all(c >= 1 for c in counts)
        assert sum(counts) >= 16 or sum(counts) == len(counts)
    assert det.hash == det.hash_from_scratch()
    assert det.legal_moves(2) is not None
    assert determinize(state, 1) is state


def test_evaluate_prefers_the_untrapped_side() -> None:
    state, trap = trap_position()
    base = evaluate(state, WEIGHTS)
    state.apply(Move(trap.cell, 1, trap.direction))
    after = evaluate(state, WEIGHTS)
    assert after[0] > base[0]
    assert all(after[i] < base[i] for i in (1, 2, 3))


def test_tree_is_reused_between_turns() -> None:
    state = next(s for s in positions(1, 20, seed=2) if len(s.slides()) >= 4)
    # Area-guess playouts: a sharper split choice, so the most visited line is deep
    # enough for the walk below.
    strategy = HybridStrategy(
        {
            "seed": 1,
            "max_iterations": 2000,
            "ab_fraction": 0,
            "endgame_sheep": 0,
            "playout": "heuristic",
            "tree": "python",  # the compiled tree keeps nothing between turns
        }
    )
    strategy.new_game(state.setting, state.to_move)
    me = state.to_move
    assert strategy.move(state, Budget.seconds(5)) is not None
    # Everybody plays the most visited move the tree has a node after, so the next
    # position is in it.
    node = strategy.mcts.root
    while True:
        assert node is not None and node.edges is not None
        if not node.edges:
            state.skip_turn()
            node = node.pass_child
        else:
            split, edge = max(
                ((s, e) for e in node.edges for s in e.splits if s.child is not None),
                key=lambda pair: pair[0].n,
            )
            state.apply(Move(edge.cell, split.split, edge.direction))
            node = split.child
        if state.to_move == me:
            break
    assert node is not None and node.n >= 1
    expected = node.n
    strategy.move(state, Budget.seconds(5))
    assert strategy.mcts.reused == expected
    assert strategy.mcts.root is node and node.n >= 2000 + expected


def tree_plies(node: Node | None) -> int:
    """How many plies the tree below ``node`` holds (a pass counts as one)."""
    if node is None:
        return 0
    children = [s.child for e in node.edges or () for s in e.splits] + [node.pass_child]
    return 1 + max(tree_plies(c) for c in children) if any(children) else 0


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_the_tree_grows_no_deeper_than_tree_depth(cap: int) -> None:
    # Late positions too, where the game ends or a seat passes inside the cap.
    for state in positions(1, 6, seed=9):
        if not state.slides():
            continue
        before = state.canonical()
        mcts = Mcts(MctsParams(tree_depth=cap, kernel="python"), random.Random(cap))
        mcts.set_root(state)
        mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=300)
        assert state.canonical() == before
        assert mcts.root is not None and mcts.root.n == 300
        assert tree_plies(mcts.root) <= cap
        assert mcts.best() is not None
    # Without a cap the same search grows deeper than one ply.
    state = next(s for s in positions(1, 6, seed=9) if len(s.slides()) >= 4)
    mcts = Mcts(MctsParams(kernel="python"), random.Random(1))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=300)
    assert tree_plies(mcts.root) > 1


def played_slide_terms(state: GameState, cell: int, dst: int, split: int) -> tuple[float, ...]:
    """``slide_terms`` read off the board after the slide is really played."""
    me = state.to_move
    owner, sheep, rays = state.owner, state.sheep, state.geometry.rays
    before = state.regions.score[me]
    state.slide(cell, dst, split)
    gain = state.regions.score[me] - before

    def free(c: int) -> int:
        return sum(1 for ray in rays[c] if ray and owner[ray[0]] == 0)

    left = sheep[cell]
    stranded = (left - 1 if left > 1 and free(cell) == 0 else 0) + (
        split - 1 if split > 1 and free(dst) == 0 else 0
    )
    trapped = squeezed = foes = 0
    ally = state.setting.partner(me) or me
    for c in (ray[0] for ray in rays[dst] if ray):
        if owner[c] <= 0 or owner[c] == me or sheep[c] <= 1:
            continue
        boxed = min(sheep[c] - 1, 8) + 2 if free(c) == 0 else 0
        if owner[c] != ally:
            trapped += boxed
            foes += 1
        else:
            squeezed += 1 + boxed
    room = free(dst)
    state.undo()
    return (gain, stranded, trapped, squeezed, min(room, 4), room, foes)


@pytest.mark.parametrize("game", [1, 2, 4])
def test_slide_terms_read_the_board_as_the_played_slide_leaves_it(game: int) -> None:
    """The prior key's terms, computed without playing the slide, against the same
    terms counted on the board after the slide is played, for every slide and a few
    splits in positions from placement to the end; the key is their sum by the
    weights given (the hand-set ones by default); the state is left as it was."""
    learned = (0.5, -2.0, 0.4, -0.7, 0.0, 0.6, 0.5)
    checked = foes = 0
    for state in positions(game, 12, seed=game):
        before = state.canonical()
        for cell, _direction, dst in state.slides():
            count = state.sheep[cell]
            for split in sorted({1, count // 2, count - 1}):
                want = played_slide_terms(state, cell, dst, split)
                assert slide_terms(state, cell, dst, split) == pytest.approx(want)
                for weights in (KEY_WEIGHTS, learned):
                    key = sum(w * t for w, t in zip(weights, want, strict=True))
                    assert slide_key(state, cell, dst, split, weights) == pytest.approx(key)
                assert slide_key(state, cell, dst, split) == pytest.approx(
                    slide_key(state, cell, dst, split, KEY_WEIGHTS)
                )
                checked += 1
                foes += want[PRIOR_TERMS.index("foes")] > 0
        assert state.canonical() == before
    assert checked > 30
    assert foes > 0  # the positions have slides next to the other seats' live stacks


@pytest.mark.parametrize("k", [1, 3])
def test_a_leaf_is_valued_by_the_mean_of_leaf_playouts_playouts(k: int) -> None:
    """``leaf_playouts`` playouts from one leaf, each the kernel's from the same stream
    of draws, rewards averaged; the state is left as it was."""
    state = next(s for s in positions(1, 6, seed=9) if len(s.slides()) >= 4)
    params = MctsParams(leaf_playouts=k, kernel="python")
    before = state.canonical()
    got = Mcts(params, random.Random(7))._playouts(state)
    assert state.canonical() == before
    rng = random.Random(7)
    kernel, policy = params.playout_kernel(), params.playout_policy()
    each = [score_rewards(state.setting, kernel.scores(state, policy, rng), 0.05) for _ in range(k)]
    assert got == pytest.approx([sum(col) / k for col in zip(*each, strict=True)])
    # Several playouts of one position do not all end alike.
    if k > 1:
        assert len({tuple(r) for r in each}) > 1
    # The search still backs up one visit per iteration.
    mcts = Mcts(params, random.Random(8))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=40)
    assert mcts.root is not None and mcts.root.n == 40 and state.canonical() == before


@pytest.mark.parametrize("on", [True, False])
def test_learned_split_rules_reach_the_playouts_with_playout_splits(on: bool) -> None:
    """The seats' rules (``Mcts.split_rules``) go into the playout policy with
    ``playout_splits`` (the kernel tests check that playouts obey it), else not."""
    state = next(s for s in positions(1, 6, seed=9) if len(s.slides()) >= 4)
    mcts = Mcts(MctsParams(playout_splits=on, kernel="python"), random.Random(2))
    mcts.split_rules = {2: "half", 4: "one"}
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=50)
    assert mcts.policy.seat_splits == ((0, 0, 1, 0, 2) if on else (0, 0, 0, 0, 0))
    assert mcts.root is not None and mcts.root.n == 50


@pytest.mark.parametrize("game", [1, 4])
def test_paranoid_rewards_move_the_others_towards_our_loss(game: int) -> None:
    setting = get_setting(game)
    r = score_rewards(setting, [30.0, 22.0, 25.0, 18.0], 0.05)
    partner = setting.partner(1)
    assert paranoid_rewards(setting, r, 1, 0.0) == r
    full = paranoid_rewards(setting, r, 1, 1.0)
    half = paranoid_rewards(setting, r, 1, 0.5)
    for seat in (1, 2, 3, 4):
        i = seat - 1
        if seat in (1, partner):
            assert full[i] == half[i] == r[i]
        else:
            assert full[i] == pytest.approx(1.0 - r[0])
            assert half[i] == pytest.approx((r[i] + 1.0 - r[0]) / 2)


def test_with_paranoia_the_others_nodes_back_up_our_loss() -> None:
    """``paranoia=1``: below each of our splits, the other seat's edges gather one minus
    what we gathered there, all but the two visits that chose no edge there (the one
    that made the node and the one that expanded it)."""
    state = next(s for s in positions(1, 8, seed=4) if len(s.slides()) >= 4)
    me = state.to_move
    mcts = Mcts(MctsParams(paranoia=1.0, kernel="python"), random.Random(5))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=400)
    checked = 0
    assert mcts.root is not None and mcts.root.edges
    for edge in mcts.root.edges:
        for split in edge.splits:
            node = split.child
            if node is None or not node.edges or node.to_move == me:
                continue
            assert sum(e.n for e in node.edges) == split.n - 2
            lost = sum(e.n - e.w for e in node.edges)
            # What we gathered on the two visits without an edge: two rewards in [0, 1]
            # (give or take the small score-margin term).
            assert -0.1 <= split.w - lost <= 2.1, (lost, split.w, split.n)
            checked += split.n >= 10
    assert checked >= 3


@pytest.mark.parametrize("split", ["half", "one", "all-but-one"])
@pytest.mark.parametrize("playout", ["heuristic", "heuristic-random", "heuristic-safe", "random"])
def test_playout_split_rule_is_every_seats_split(playout: str, split: str) -> None:
    """``playout_split_rule`` sets every seat's playout split for every playout setting
    (the kernel tests check that playouts obey ``seat_splits``); a learned rule with
    ``playout_splits`` replaces it for its seat only; the search runs on it."""
    code = SPLIT_RULES.index(split)
    params = MctsParams(playout=playout, playout_split_rule=split, kernel="python")
    policy = params.playout_policy()
    assert policy.seat_splits == (0, code, code, code, code)
    plain = MctsParams(playout=playout).playout_policy()
    assert plain.seat_splits == (0, 0, 0, 0, 0)
    assert policy == replace(plain, seat_splits=(0, code, code, code, code))
    state = next(s for s in positions(1, 6, seed=9) if len(s.slides()) >= 4)
    mcts = Mcts(params.model_copy(update={"playout_splits": True}), random.Random(3))
    mcts.split_rules = {3: "one"}
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=40)
    assert mcts.policy.seat_splits == (0, code, code, SPLIT_RULES.index("one"), code)
    move = mcts.best()
    assert move is not None and move in state.legal_moves()
    with pytest.raises(ValueError, match="playout_split_rule"):
        MctsParams(playout_split_rule="thirds")


@pytest.mark.parametrize("tree", ["python", "compiled"])
@pytest.mark.parametrize(("game", "mover", "team"), [(1, 2, {2}), (4, 1, {1, 3}), (4, 4, {2, 4})])
def test_epsilon_other_is_the_random_share_of_the_seats_outside_our_team(
    game: int, mover: int, team: set[int], tree: str
) -> None:
    """``epsilon_other`` gives the seats outside the searching seat's team (its
    partner's in game 4 keeps ``epsilon``) their own share in the search's playouts;
    unset, every seat plays at ``epsilon``; the search runs on it to a legal move."""
    setting, rng = SETTINGS[game], random.Random(9)
    state = GameState(setting, random_geometry(setting, 9))
    random_placement(state, rng)
    random_play(state, rng, 8 + mover - 1)
    assert state.to_move == mover and len(state.slides()) >= 4
    params = MctsParams(epsilon_other=0.05, tree=tree)
    shares = params.playout_policy(state).epsilons
    assert [shares[p] for p in (1, 2, 3, 4)] == [0.3 if p in team else 0.05 for p in (1, 2, 3, 4)]
    assert MctsParams().playout_policy(state) == MctsParams().playout_policy()
    assert (
        MctsParams(playout="random", epsilon_other=0.05).playout_policy(state).epsilons
        == (1.0,) * 5
    ), "uniformly random playouts have no greedy moves to share out"
    wait_warm(None)
    mcts = Mcts(params, random.Random(3))
    assert mcts.compiled() == (tree == "compiled" and fast_available())
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=300)
    assert mcts.policy.epsilons == shares
    move = mcts.best()
    assert move is not None and move in state.legal_moves()
    with pytest.raises(ValueError, match="epsilon_other"):
        MctsParams(epsilon_other=1.5)


LEARNED = (0.7, -2.1, 0.4, -1.0, 0.0, 0.6, 0.5)
"""Prior weights unlike the hand-set ones: uncapped room and the foes count in."""


@pytest.mark.parametrize(
    ("other", "weights", "other_weights"),
    [
        (0.0, KEY_WEIGHTS, ()),
        (0.5, LEARNED, ()),
        (8.0, LEARNED, KEY_WEIGHTS),
        (0.0, KEY_WEIGHTS, LEARNED),
    ],
)
def test_the_other_seats_nodes_take_their_own_prior_temperature(
    other: float, weights: tuple[float, ...], other_weights: tuple[float, ...]
) -> None:
    """The Python tree's priors: a softmax of the slide keys (by ``prior_weights``) at
    ``prior_temperature`` at the searching seat's nodes, at ``prior_temperature_other``
    (0: the same) by ``prior_weights_other`` (empty: the same) at the other seats'."""
    params = MctsParams(
        tree="python",
        kernel="python",
        prior_temperature_other=other,
        prior_weights=weights,
        prior_weights_other=other_weights,
    )
    assert params.other_prior_weights == (other_weights or weights)
    assert params.other_prior_temperature == (other or params.prior_temperature)
    state = positions(1, 2, seed=9)[1]  # every seat has slides: the tree reaches ours again
    me = state.to_move
    mcts = Mcts(params, random.Random(3))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(60), time.monotonic() + 60, max_iterations=2000)
    checked = {True: 0, False: 0}

    def check(node: Node) -> None:
        if not node.edges or len(node.edges) < 2:
            return
        mine = node.to_move == me
        w = weights if mine else (other_weights or weights)
        keys = [slide_key(state, e.cell, e.dst, e.area, w) for e in node.edges]
        t = params.prior_temperature if mine else params.other_prior_temperature
        want = softmax(keys, t)
        assert [e.prior for e in node.edges] == pytest.approx(want, rel=1e-9, abs=1e-12)
        checked[mine] += 1
        for e in node.edges:
            for sp in e.splits:
                if sp.child is not None:
                    state.slide(e.cell, e.dst, sp.split)
                    check(sp.child)
                    state.undo()

    assert mcts.root is not None
    check(mcts.root)
    assert checked[True] >= 2 and checked[False] >= 3


def test_prior_weights_come_as_a_list_or_as_text_one_for_each_term() -> None:
    """``prior_weights`` from a parameter file (a list) or the command line (text); a
    wrong count or a word is refused with the terms named."""
    assert MctsParams().prior_weights == KEY_WEIGHTS
    assert MctsParams(prior_weights=list(LEARNED)).prior_weights == LEARNED
    text = ",".join(str(w) for w in LEARNED)
    assert HybridStrategy({"prior_weights": text}).params.prior_weights == LEARNED
    with pytest.raises(ParameterError, match="7 weights, one for each of gain, stranded"):
        HybridStrategy({"prior_weights": "1,2,3"})
    with pytest.raises(ParameterError, match="prior_weights"):
        HybridStrategy({"prior_weights": "1,2,3,4,5,6,many"})
    # The other seats' weights: empty (ours there too) or one a term.
    assert MctsParams(prior_weights_other="").other_prior_weights == KEY_WEIGHTS
    assert MctsParams(prior_weights_other=text).prior_weights_at(False) == LEARNED
    assert MctsParams(prior_weights_other=text).prior_weights_at(True) == KEY_WEIGHTS
    with pytest.raises(ParameterError, match="or none: prior_weights there too"):
        HybridStrategy({"prior_weights_other": "1,2"})
    with pytest.raises(ParameterError, match="got 0"):
        HybridStrategy({"prior_weights": ""})


@pytest.mark.parametrize("playout", ["heuristic", "heuristic-random", "heuristic-safe", "random"])
def test_every_playout_policy_scores_a_finished_game_and_leaves_the_state(playout: str) -> None:
    rng = random.Random(4)
    params = MctsParams(playout=playout, kernel="python")
    for state in positions(1, 6, seed=5):
        before = state.canonical()
        scores = params.playout_kernel().scores(state, params.playout_policy(), rng)
        assert state.canonical() == before and state.hash == state.hash_from_scratch()
        # Every seat ends with at least what it holds now (cells are never lost).
        assert all(s >= state.exact_score(p) for s, p in zip(scores, (1, 2, 3, 4), strict=True))
    with pytest.raises(ValueError, match="playout"):
        MctsParams(playout="smart")
    with pytest.raises(ParameterError, match="playout"):
        HybridStrategy({"playout": "smart"})


@pytest.mark.parametrize("playout", ["heuristic", "heuristic-random", "heuristic-safe", "random"])
def test_playout_cutoff_stops_every_playout_policy_and_the_search_uses_it(playout: str) -> None:
    """``playout_cutoff`` goes into the kernel's policy for every playout setting; a
    leaf is then valued by the evaluation after that many turns (the kernel tests
    check the evaluation), and the search runs on it to a legal move."""
    params = MctsParams(playout=playout, playout_cutoff=6, kernel="python")
    policy = params.playout_policy()
    assert policy.cutoff == 6
    assert policy == replace(MctsParams(playout=playout).playout_policy(), cutoff=6)
    state = next(s for s in positions(1, 6, seed=9) if len(s.slides()) >= 4)
    before = state.canonical()
    trace = params.playout_kernel().play_stream(state, policy, [0.5] * 10_000)
    assert len(trace.turns) == 6 and not trace.finished
    mcts = Mcts(params, random.Random(8))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(30), time.monotonic() + 30, max_iterations=60)
    assert mcts.root is not None and mcts.root.n == 60 and state.canonical() == before
    move = mcts.best()
    assert move is not None and move in state.legal_moves()
    with pytest.raises(ValueError, match="playout_cutoff"):
        MctsParams(playout_cutoff=-1)


@pytest.mark.parametrize("game", [1, 4])
def test_proves_first_is_first_place_alone_or_the_pairs(game: int) -> None:
    rng = random.Random(70 + game)
    setting = SETTINGS[game]
    seen = {True: 0, False: 0}
    for _ in range(12):
        state = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(state, rng)
        random_play(state, rng, 400)
        assert state.is_terminal()
        points = tournament_points(final_results(state))
        for seat in range(1, 5):
            ab = AlphaBeta("paranoid", WEIGHTS)
            ab.seat, ab.setting, ab.ally = seat, setting, setting.partner(seat) or 0
            # First alone: 5 points; the pair that won game 4: 4 each (a tie shares more).
            first = points[seat - 1] == (4.0 if game == 4 else 5.0)
            assert ab.proves_first(ab._terminal_value(state)) == first, (points, seat)
            seen[first] += 1
    assert seen[True] and seen[False]


def test_endgame_play_first_leaves_a_solved_lower_place_to_the_tree() -> None:
    """With ``endgame_play=first`` a solved endgame that does not prove first place
    goes on to the tree; one that proves it is played, as with ``solved``."""
    found: dict[bool, GameState] = {}
    rng = random.Random(5)
    setting = SETTINGS[1]
    while len(found) < 2:
        state = GameState(setting, random_geometry(setting, rng.getrandbits(32)))
        random_placement(state, rng)
        random_play(state, rng, 40)
        if state.is_terminal() or not state.slides():
            continue
        solver = AlphaBeta("paranoid", WEIGHTS, splits=4)
        r = solver.search(state, Budget.seconds(20), time.monotonic() + 20)
        if r.solved:
            found.setdefault(solver.proves_first(r.value), state)
    for first, state in found.items():
        for play in ("solved", "first"):
            budget = Budget.seconds(60)
            strategy = HybridStrategy(
                {"seed": 1, "max_iterations": 50, "endgame_sheep": 200, "endgame_play": play}
            )
            assert_legal(state, strategy.move(state, budget))
            decided = play == "solved" or first
            assert budget.info.get("solved") == (1.0 if decided else None), (first, play)
            assert ("solved_not_first" in budget.info) == (not decided)


def test_spare_sheep_count_walled_in_stacks_or_leave_them_out() -> None:
    state, trap = trap_position()
    # Every stack of 16 has a free neighbour: both counts are 4 times 15.
    assert state.spare_sheep() == state.spare_sheep(walled_in=False) == 60
    state.apply(Move(trap.cell, 1, trap.direction))
    # The three others are walled in; seat 1 keeps 15 on (5,4), free above it.
    assert state.spare_sheep(walled_in=False) == 14
    assert state.spare_sheep() == 3 * 15 + 14
    state.undo()
    assert state.spare_sheep(walled_in=False) == 60
