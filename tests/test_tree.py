"""The compiled tree (``strategies.kernel.tree``) held to the Python tree's rules.

Every node of a compiled search is walked with a ``GameState`` played along: its
edges must be the position's slides with the Python expansion's priors and area
guesses, its splits ``split_candidates`` in order (or the seat's learned rule), and
its visits must add up as the Python backup adds them. The rewards and the split
order are compared with the Python functions directly.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.game import GameState
from state.geometry import DIRECTION_KEYS
from state.scoring import PLACE_POINTS
from state.settings import SETTINGS
from strategies.base import Budget
from strategies.common import KEY_WEIGHTS, paranoid_rewards, score_rewards, split_candidates
from strategies.hybrid import HybridParams
from strategies.kernel import PASS, fast_available, wait_warm
from strategies.mcts import Mcts
from strategies.mcts_tree import Edge, Node, Split, choose_split, expand, select_edge
from strategies.opponents import RULES
from tests.test_kernel import position

pytestmark = pytest.mark.skipif(
    not fast_available(), reason="numba is not installed (pip install 'battlesheep[fast]')"
)

if fast_available():
    import numpy as np

    from strategies.kernel.tree import (
        E_AREA,
        E_CELL,
        E_COUNT,
        E_DIR,
        E_DST,
        E_FIXED,
        E_HEAD,
        E_OPEN,
        E_TAIL,
        E_TOP,
        EDGE_COLS,
        N_EDGES,
        N_FIRST,
        N_MOVER,
        N_PASS,
        N_TERMINAL,
        S_CHILD,
        S_N,
        S_NEXT,
        S_SIZE,
        CompiledTree,
        _candidate,
        _choose_split,
        _paranoid,
        _rewards,
        _select_edge,
        sync_roots,
    )


def searched(
    state: GameState,
    params: HybridParams,
    iterations: int,
    rules: dict[int, str] | None = None,
    edges: int = 0,
) -> CompiledTree:
    """A compiled tree after ``iterations`` iterations from ``state`` (grown as needed)."""
    root = Node(state.to_move, state.hash)
    rule = (rules or {}).get(state.to_move)
    expand(root, state, params.prior_temperature, RULES[rule] if rule else None)
    tree = CompiledTree(
        state, root, params, params.playout_policy(), rules or {}, seed=7, edges=edges
    )
    done = 0
    while done < iterations:
        got = tree.run(iterations - done)
        done += got
        if done < iterations:
            assert tree.grow()
    tree.sync_root()
    return tree


def chain(tree: CompiledTree, j: int) -> list[int]:
    """Edge ``j``'s splits, in the order opened."""
    out = []
    s = int(tree.edge_i[j, E_HEAD])
    while s >= 0:
        out.append(s)
        s = int(tree.split_i[s, S_NEXT])
    return out


def walk(tree: CompiledTree, state: GameState, params: HybridParams, rules: dict[int, str]) -> int:
    """Check every node below the root against ``state`` played along; the nodes."""
    nodes = 0
    me = state.to_move

    def visit(k: int) -> None:
        nonlocal nodes
        nodes += 1
        assert tree.node_i[k, N_MOVER] == state.to_move
        n_edges = int(tree.node_i[k, N_EDGES])
        visits = int(tree.node_n[k])
        if n_edges < 0:
            assert visits <= 1  # created by the iteration that reached it, not expanded
            return
        rule = rules.get(state.to_move)
        py = Node(state.to_move, state.hash)
        mine = state.to_move == me
        temperature = params.prior_temperature_at(mine)
        weights = params.prior_weights_at(mine)
        expand(py, state, temperature, RULES[rule] if rule else None, weights)
        assert bool(tree.node_i[k, N_TERMINAL]) == py.terminal
        assert py.edges is not None
        start = int(tree.node_i[k, N_FIRST])
        compiled = {}
        for j in range(start, start + n_edges):
            key = (int(tree.edge_i[j, E_CELL]), DIRECTION_KEYS[tree.edge_i[j, E_DIR]])
            compiled[key] = j
        theirs = {(e.cell, e.direction): e for e in py.edges}
        assert compiled.keys() == theirs.keys()
        for key, j in compiled.items():
            e = theirs[key]
            assert tree.edge_i[j, E_DST] == e.dst
            assert tree.edge_i[j, E_COUNT] == e.count
            assert tree.edge_i[j, E_AREA] == e.area
            if k != 0:
                assert math.isclose(tree.edge_f[j, 0], e.prior, rel_tol=1e-9, abs_tol=1e-12)
        # One visit created the node, the next expanded it, the others went on below
        # (the root's: every one).
        below = visits if k == 0 else visits - 2
        if n_edges == 0:
            child = int(tree.node_i[k, N_PASS])
            if py.terminal or child < 0:
                assert py.terminal or below <= 0
                return
            assert tree.node_n[child] == below
            state.skip_turn()
            visit(child)
            state.undo()
            return
        assert int(tree.edge_n[start : start + n_edges].sum()) == below
        for j in range(start, start + n_edges):
            splits = chain(tree, j)
            sizes = [int(tree.split_i[s, S_SIZE]) for s in splits]
            count, area = int(tree.edge_i[j, E_COUNT]), int(tree.edge_i[j, E_AREA])
            if rule is not None:
                assert tree.edge_i[j, E_FIXED] and sizes == [RULES[rule](count)]
            else:
                assert sizes == split_candidates(count, area)[: len(sizes)]
                assert tree.edge_i[j, E_OPEN] == len(sizes)
            assert sum(int(tree.split_i[s, S_N]) for s in splits) == tree.edge_n[j]
            top = int(tree.edge_i[j, E_TOP])  # the most visited split, for split_value
            assert top in splits
            assert tree.split_i[top, S_N] == max(int(tree.split_i[s, S_N]) for s in splits)
            assert math.isclose(
                sum(float(tree.split_w[s]) for s in splits), tree.edge_f[j, 1], abs_tol=1e-9
            )
            cell, dst = int(tree.edge_i[j, E_CELL]), int(tree.edge_i[j, E_DST])
            for s in splits:
                child = int(tree.split_i[s, S_CHILD])
                if child < 0:
                    continue
                assert tree.node_n[child] == tree.split_i[s, S_N]
                state.slide(cell, dst, int(tree.split_i[s, S_SIZE]))
                visit(child)
                state.undo()

    visit(0)
    return nodes


@settings(max_examples=12, deadline=None)
@given(
    game=st.sampled_from([1, 2, 4]),
    seed=st.integers(0, 2**31 - 1),
    plies=st.sampled_from([0, 8, 30, 60]),
    split_value=st.sampled_from([0.0, 1.0]),
    other_temperature=st.sampled_from([0.0, 6.0]),
    weights=st.sampled_from([KEY_WEIGHTS, (0.7, -2.1, 0.4, -1.0, 0.0, 0.6, 0.5)]),
    other_weights=st.sampled_from([(), (0.2, -1.0, 2.0, 0.5, 1.0, -0.3, 0.0)]),
)
def test_every_node_is_the_python_trees(
    game: int,
    seed: int,
    plies: int,
    split_value: float,
    other_temperature: float,
    weights: tuple[float, ...],
    other_weights: tuple[float, ...],
) -> None:
    """Node for node the Python tree's, the priors at each node's temperature (the
    other seats' their own with ``prior_temperature_other``) and by the key's
    weights (``prior_weights``; the other seats' their own with
    ``prior_weights_other``)."""
    wait_warm(None)
    state = position(game, seed, plies)
    if not state.slides():
        return
    params = HybridParams(
        split_value=split_value,
        prior_temperature_other=other_temperature,
        prior_weights=weights,
        prior_weights_other=other_weights,
    )
    before = (list(state.owner), list(state.sheep), state.hash)
    tree = searched(state, params, 600)
    assert (list(state.owner), list(state.sheep), state.hash) == before
    assert tree.node_n[0] == 600
    assert walk(tree, state, params, {}) == tree.counts[0]
    assert tree.expanded >= 1


def test_learned_split_rules_and_a_depth_cap_hold_in_the_tree() -> None:
    wait_warm(None)
    state = position(1, 11, 6)
    params = HybridParams(tree_depth=3, paranoia=0.5)
    rules = {s: "half" for s in (1, 2, 3, 4) if s != state.to_move}
    rules[state.to_move % 4 + 1] = "all-but-one"
    tree = searched(state, params, 800, rules)
    assert tree.depth <= 3
    walk(tree, state, params, rules)


def test_a_tree_that_outgrows_its_arrays_grows_and_stays_whole() -> None:
    wait_warm(None)
    state = position(2, 5, 4)
    params = HybridParams()
    small = searched(state, params, 1, edges=300).edge_i.shape[0]
    tree = searched(state, params, 1500, edges=300)
    assert tree.counts[1] > small
    assert tree.edge_i.shape[0] >= 2 * small
    assert walk(tree, state, params, {}) == tree.counts[0]


def test_split_candidates_in_the_python_order() -> None:
    for count in range(2, 40):
        for area in range(1, count):
            want = split_candidates(count, area)
            got = [_candidate(count, area, i) for i in range(count)]
            assert got == [*want, -1]


@settings(max_examples=200, deadline=None)
@given(
    stats=st.lists(
        st.tuples(st.floats(0.001, 1.0), st.integers(0, 50), st.floats(0, 1), st.floats(0, 1)),
        min_size=1,
        max_size=30,
    ),
    c_puct=st.sampled_from([0.5, 1.0, 2.0]),
    fpu=st.sampled_from([0.0, 0.1]),
    split_value=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_slides_are_selected_as_the_python_tree_selects(
    stats: list[tuple[float, int, float, float]], c_puct: float, fpu: float, split_value: float
) -> None:
    """Each slide has two splits, the second taking about two thirds of the visits at
    the mean given last; ``split_value`` weighs that most visited split's mean into the
    slide's value in both trees alike."""
    node = Node(1, 0)
    node.edges = []
    split_i = np.zeros((2 * len(stats), 4), np.int32)
    split_w = np.zeros(2 * len(stats))
    edge_i = np.zeros((len(stats), EDGE_COLS), np.int32)
    for cell, (prior, n, mean, top_mean) in enumerate(stats):
        e = Edge(cell, DIRECTION_KEYS[0], cell + 1, 3, 1)
        e.prior, e.n, e.w = prior, n, mean * n
        first, second = Split(1), Split(2)
        second.n = (2 * n + 2) // 3
        first.n = n - second.n
        second.w = top_mean * second.n
        first.w = e.w - second.w
        e.splits = [first, second]
        e.top = second if second.n >= first.n else first
        node.edges.append(e)
        for s, sp in enumerate(e.splits):
            split_i[2 * cell + s, S_N] = sp.n
            split_w[2 * cell + s] = sp.w
        edge_i[cell, E_TOP] = 2 * cell + (1 if e.top is second else 0)
    node.n = sum(e.n for e in node.edges) + 1
    node_i = np.zeros((1, 5), np.int32)
    node_i[0, N_FIRST], node_i[0, N_EDGES] = 0, len(stats)
    edge_f = np.array([(e.prior, e.w) for e in node.edges], np.float64)
    edge_n = np.array([e.n for e in node.edges], np.int64)
    none = np.zeros((0, 0))
    want = select_edge(node, node.edges, c_puct, fpu, False, split_value)
    for mast_visits in (0.0, 2.0):  # no MAST tables: the MAST visits change nothing
        got = _select_edge(
            0, node_i, np.array([node.n]), edge_f, edge_n, c_puct, fpu, edge_i, none,
            none.astype(np.int64), mast_visits, split_i, split_w, split_value,
        )  # fmt: skip
        assert node.edges[got] is want


@settings(max_examples=200, deadline=None)
@given(
    stats=st.lists(
        st.tuples(st.integers(0, 20), st.floats(0, 1), st.integers(0, 30), st.floats(0, 1)),
        min_size=2,
        max_size=20,
    ),
    mast_visits=st.sampled_from([0.5, 2.0, 8.0]),
)
def test_mast_visits_start_each_slide_from_its_cells_learned_value(
    stats: list[tuple[int, float, int, float]], mast_visits: float
) -> None:
    """With MAST visits the tree policy's value of a slide is its reward sum plus the
    mover's learned value of its destination worth that many visits, over its visits
    plus as many: an unvisited slide is worth its cell's value, not the parent's
    mean less first-play urgency. Compared with PUCT computed here."""
    from strategies.kernel.fast import MAST_PRIOR

    cells, mover = 8, 3
    node_i = np.zeros((1, 5), np.int32)
    node_i[0, N_MOVER], node_i[0, N_FIRST], node_i[0, N_EDGES] = mover, 0, len(stats)
    edge_i = np.zeros((len(stats), EDGE_COLS), np.int32)
    edge_f = np.zeros((len(stats), 2))
    edge_n = np.zeros(len(stats), np.int64)
    mast_w = np.zeros((5, cells))
    mast_n = np.zeros((5, cells), np.int64)
    for j, (seen, value, n, mean) in enumerate(stats):
        dst = j % cells
        edge_i[j, E_DST] = dst
        edge_f[j] = (1.0 / len(stats), mean * n)
        edge_n[j] = n
        mast_n[mover, dst] = seen
        mast_w[mover, dst] = value * seen
    visits = int(edge_n.sum()) + 1
    c_puct = 1.0
    none = np.zeros((0, 0))
    got = _select_edge(
        0, node_i, np.array([visits]), edge_f, edge_n, c_puct, 0.1, edge_i, mast_w, mast_n,
        mast_visits, none.astype(np.int32), np.zeros(0), 0.0,
    )  # fmt: skip

    def u(j: int) -> float:
        dst = int(edge_i[j, E_DST])
        m = (mast_w[mover, dst] + MAST_PRIOR) / (mast_n[mover, dst] + 1)
        q = (edge_f[j, 1] + mast_visits * m) / (edge_n[j] + mast_visits)
        return float(q + c_puct * edge_f[j, 0] * math.sqrt(visits + 1) / (1 + edge_n[j]))

    best = max(u(j) for j in range(len(stats)))
    assert u(got) == pytest.approx(best, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    count=st.integers(2, 33),
    pw_base=st.sampled_from([1, 2, 4]),
    pw_alpha=st.sampled_from([0.25, 0.4, 0.7]),
)
def test_splits_are_widened_and_chosen_as_the_python_tree_does(
    data: st.DataObject, count: int, pw_base: int, pw_alpha: float
) -> None:
    area = data.draw(st.integers(1, count - 1))
    order = split_candidates(count, area)
    opened = data.draw(st.integers(1, len(order)))
    visits = data.draw(st.lists(st.integers(0, 40), min_size=opened, max_size=opened))
    means = data.draw(st.lists(st.floats(0, 1), min_size=opened, max_size=opened))
    e = Edge(0, DIRECTION_KEYS[0], 1, count, area)
    e.splits = []
    for size, n, mean in zip(order[:opened], visits, means, strict=True):
        sp = Split(size)
        sp.n, sp.w = n, mean * n
        e.splits.append(sp)
    e.n = sum(visits)
    e.cands = None if opened == 1 else order[opened:]
    edge_i = np.zeros((1, 9), np.int32)
    edge_i[0, E_COUNT], edge_i[0, E_AREA], edge_i[0, E_OPEN] = count, area, opened
    split_i = np.full((count + 1, 4), -1, np.int32)
    split_w = np.zeros(count + 1, np.float64)
    for s, sp in enumerate(e.splits):
        split_i[s, S_SIZE], split_i[s, S_N] = sp.split, sp.n
        split_i[s, S_NEXT] = s + 1 if s + 1 < opened else -1
        split_w[s] = sp.w
    edge_i[0, E_HEAD], edge_i[0, E_TAIL] = 0, opened - 1
    counts = np.array([0, 0, opened, 0, 0], np.int64)
    got = _choose_split(
        0, edge_i, np.array([e.n]), split_i, split_w, counts, 0.5, pw_base, 1.0, pw_alpha
    )
    want = choose_split(e, 0.5, pw_base, 1.0, pw_alpha)
    assert split_i[got, S_SIZE] == want.split
    assert [int(split_i[s, S_SIZE]) for s in range(int(counts[2]))] == [sp.split for sp in e.splits]


@settings(max_examples=200, deadline=None)
@given(
    game=st.sampled_from([1, 2, 4]),
    scores=st.lists(
        st.one_of(st.integers(0, 40).map(float), st.floats(0, 60, allow_nan=False)),
        min_size=4,
        max_size=4,
    ),
    margin=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
    me=st.integers(1, 4),
    weight=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_rewards_are_score_rewards(
    game: int, scores: list[float], margin: float, me: int, weight: float
) -> None:
    setting = SETTINGS[game]
    partner = np.array([0] + [setting.partner(s) or 0 for s in (1, 2, 3, 4)], np.int64)
    got = _rewards(np.array(scores), partner, margin, setting.cells, np.array(PLACE_POINTS))
    want = score_rewards(setting, scores, margin)
    assert got.tolist() == pytest.approx(want, abs=1e-12)
    _paranoid(got, partner, me, weight)
    assert got.tolist() == pytest.approx(paranoid_rewards(setting, want, me, weight), abs=1e-12)


@pytest.mark.parametrize("game", [1, 2, 4])
def test_mcts_with_the_compiled_tree_plays_legal_moves(game: int) -> None:
    wait_warm(None)
    state = position(game, 3 + game, 10)
    mcts = Mcts(HybridParams(tree="compiled"), random.Random(1))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(60), float("inf"), max_iterations=300)
    assert mcts.iterations == 300
    assert mcts.root is not None and mcts.root.n == 300
    assert sum(e.n for e in mcts.root.edges or ()) == 300
    move = mcts.best()
    assert move is not None and move in state.legal_moves()
    assert not python_children(mcts)  # the tree below the root was the compiled one
    # The next search starts from a new root: nothing is kept below it.
    mcts.set_root(state)
    assert mcts.root.n == 0 and mcts.reused == 0


def test_the_root_statistics_of_several_trees_are_summed() -> None:
    """Game 3's world trees: ``sync_roots`` gives the root each slide's visits and
    value, and each split size's, summed over the trees (as each alone gives them)."""
    state = position(1, 12, 6)
    params = HybridParams(pw_base=1)
    root = Node(state.to_move, state.hash)
    expand(root, state, params.prior_temperature)
    assert root.edges
    trees = []
    for seed, iterations in ((3, 300), (4, 500)):
        tree = CompiledTree(state, root, params, params.playout_policy(), {}, seed, 1 << 14)
        assert tree.run(iterations) == iterations
        trees.append(tree)
    alone = []
    for tree in trees:
        sync_roots(root, [tree])
        alone.append(
            (root.n, [(e.n, e.w, {s.split: (s.n, s.w) for s in e.splits}) for e in root.edges])
        )
    sync_roots(root, trees)
    assert root.n == alone[0][0] + alone[1][0] == 800
    widened = 0
    for j, e in enumerate(root.edges):
        (n1, w1, s1), (n2, w2, s2) = alone[0][1][j], alone[1][1][j]
        assert e.n == n1 + n2 and e.w == pytest.approx(w1 + w2)
        sizes = {s.split: (s.n, s.w) for s in e.splits}
        assert list(sizes)[: len(s1)] == list(s1)  # the first tree's order first
        assert set(sizes) == set(s1) | set(s2)
        widened += len(sizes) > 1
        for size, (n, w) in sizes.items():
            assert n == s1.get(size, (0, 0.0))[0] + s2.get(size, (0, 0.0))[0]
            assert w == pytest.approx(s1.get(size, (0, 0.0))[1] + s2.get(size, (0, 0.0))[1])
    assert widened  # some slide opened more than its first split


def python_children(mcts: Mcts) -> int:
    """The Python nodes below the root (the compiled tree leaves none)."""
    assert mcts.root is not None
    return sum(s.child is not None for e in mcts.root.edges or () for s in e.splits)


def test_several_playouts_per_leaf_search_on_the_python_tree() -> None:
    wait_warm(None)
    state = position(1, 9, 10)
    mcts = Mcts(HybridParams(tree="compiled", leaf_playouts=2), random.Random(1))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(60), float("inf"), max_iterations=100)
    assert mcts.iterations == 100 and python_children(mcts) > 0
    assert not mcts.compiled()  # several playouts a leaf: the Python tree


def test_game_3_searches_on_the_python_tree() -> None:
    """Hidden counts need the information-set search: ``tree="compiled"`` leaves it
    to the Python tree (a world sampler is given)."""
    wait_warm(None)
    state = position(1, 21, 6)
    mcts = Mcts(HybridParams(tree="compiled"), random.Random(2))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(60), float("inf"), max_iterations=200, sample=lambda rng: {})
    assert mcts.iterations == 200 and python_children(mcts) > 0
    assert mcts.best() in state.legal_moves()


def first_turn(
    state: GameState, mast_w: Any, mast_n: Any, seed: int, prev: int, mine: int = -1,
    own: bool = False,
) -> Any:  # fmt: skip
    """The first turn (cell, destination, split) of a playout from ``state`` with no
    random moves and 256 draws per greedy move, by the given MAST tables; ``prev``: the
    last slide's cell before it, ``mine``: the mover's own last slide's (``own``: the
    pairs' context is that one)."""
    from strategies.kernel.fast import _scores, tables_of

    cells = len(state.owner)
    turns = np.empty((4 * (cells + 2), 3), np.int64)
    last = np.full(5, -1, np.int64)
    last[0] = prev
    last[state.to_move] = mine
    _scores(
        np.array(state.owner, np.int64), np.array(state.sheep, np.int64),
        state.to_move, np.array(state.done, np.bool_), *tables_of(state.geometry),
        np.zeros(5), 256, False, np.zeros(5, np.int64), 0, seed, np.empty(0), turns,
        mast_w, mast_n, last, own,
    )  # fmt: skip
    return turns[0]


def test_mast_greedy_moves_take_the_cell_with_the_best_learned_value() -> None:
    """``fast._mast_slide`` through a playout: with no random moves and 256 draws, the
    first turn lands on the cell in reach that the table values most, whichever it is."""
    wait_warm(None)
    state = position(1, 21, 4)
    seat = state.to_move
    dsts = sorted({dst for _, _, dst in state.slides()})
    assert len(dsts) >= 3
    cells = len(state.owner)
    for favoured in (dsts[0], dsts[-1]):
        mast_w = np.zeros((5, cells))
        mast_n = np.zeros((5, cells), np.int64)
        mast_n[seat, dsts] = 10
        mast_w[seat, favoured] = 10.0  # value 1 against 0 for every other cell in reach
        for seed in range(5):
            turn = first_turn(state, mast_w, mast_n, seed + 1, -1)
            assert turn[0] != PASS and turn[1] == favoured


def test_nst_greedy_moves_follow_a_pairs_value_once_it_has_enough_visits() -> None:
    """``fast._nst_value`` through a playout: every cell in reach has the same learned
    value; a pair (the move before took ``prev``, then this cell) valued 1 draws the
    first turn to its cell once it has ``NST_VISITS`` visits, not before, and not after
    another cell or with no pairs' columns."""
    from strategies.kernel.fast import NST_VISITS

    wait_warm(None)
    state = position(1, 21, 4)
    seat = state.to_move
    dsts = sorted({dst for _, _, dst in state.slides()})
    assert len(dsts) >= 3
    cells = len(state.owner)
    prev = next(c for c, o in enumerate(state.owner) if o != 0)

    def first_cells(
        favoured: int, visits: int, after: int, pairs: bool, mine: int = -1, own: bool = False
    ) -> set[int]:
        width = cells + cells * cells if pairs else cells
        mast_w = np.zeros((5, width))
        mast_n = np.zeros((5, width), np.int64)
        mast_n[seat, dsts] = 10
        mast_w[seat, dsts] = 5.0  # every cell in reach 0.5 (0.5 with the prior's visit)
        if pairs:
            k = cells + prev * cells + favoured
            mast_n[seat, k] = visits
            mast_w[seat, k] = float(visits)  # the pair's value 1
        out = set()
        for seed in range(8):
            turn = first_turn(state, mast_w, mast_n, seed + 1, after, mine, own)
            assert turn[0] != PASS
            out.add(int(turn[1]))
        return out

    for favoured in (dsts[0], dsts[-1]):
        assert first_cells(favoured, NST_VISITS, prev, True) == {favoured}
        assert len(first_cells(favoured, NST_VISITS - 1, prev, True)) > 1  # too few visits
        assert len(first_cells(favoured, NST_VISITS, -1, True)) > 1  # no move before
        other = next(c for c in range(cells) if c != prev)
        assert len(first_cells(favoured, NST_VISITS, other, True)) > 1  # another move before
        assert len(first_cells(favoured, NST_VISITS, prev, False)) > 1  # nst off
        # ``nst_context="own"``: the mover's own last slide is the context, not the last.
        assert first_cells(favoured, NST_VISITS, other, True, prev, True) == {favoured}
        assert len(first_cells(favoured, NST_VISITS, prev, True, other, True)) > 1
        assert len(first_cells(favoured, NST_VISITS, prev, True, -1, True)) > 1


@pytest.mark.parametrize("game", [1, 2])
def test_nst_learns_each_pair_of_consecutive_moves_beside_the_cells(game: int) -> None:
    """With ``nst`` the tables hold every cell's counts as without it, and after them one
    count per pair of consecutive slides: a flat tree's iterations each add as many
    pairs as slides but one; a pair's mean is a reward."""
    wait_warm(None)
    state = position(game, 40 + game, 10)
    params = HybridParams(mast=True, nst=True, tree_depth=1)
    tree = searched(state, params, 300)
    cells = len(state.owner)
    n, w = tree.mast_n, tree.mast_w
    assert n.shape == (5, cells + cells * cells)
    singles, pairs = n[:, :cells], n[:, cells:]
    assert singles.sum() > 0 and pairs.sum() > 0
    # Each iteration's slides form one chain (passes are skipped) whose first slide,
    # the root's, has none before it: one pair fewer than slides per iteration.
    assert pairs.sum() == singles.sum() - 300
    # A pair (a, b) is counted for b's mover: b is a cell that seat took.
    seats, ks = np.nonzero(pairs)
    for seat, k in zip(seats.tolist(), ks.tolist(), strict=True):
        assert singles[seat, k % cells] > 0
        assert state.owner[k % cells] == 0 and (k // cells) != (k % cells)
    seen = pairs > 0
    means = w[:, cells:][seen] / pairs[seen]
    assert means.min() >= -params.margin and means.max() <= 1 + params.margin
    assert searched(state, HybridParams(mast=True), 50).mast_n.shape == (5, cells)


@pytest.mark.parametrize("game", [1, 2])
def test_nst_with_own_context_pairs_each_slide_with_the_movers_own_last(game: int) -> None:
    """``nst_context="own"``: a pair (a, b) counted for a seat follows a cell ``a`` that
    same seat took before (so the seat's cell counts have it); each iteration's first
    slide of each seat has none, so between one and four pairs fewer than slides."""
    wait_warm(None)
    state = position(game, 40 + game, 10)
    params = HybridParams(mast=True, nst=True, nst_context="own", tree_depth=1)
    tree = searched(state, params, 300)
    cells = len(state.owner)
    singles, pairs = tree.mast_n[:, :cells], tree.mast_n[:, cells:]
    assert singles.sum() - 4 * 300 <= pairs.sum() <= singles.sum() - 300
    seats, ks = np.nonzero(pairs)
    assert len(ks) > 0
    for seat, k in zip(seats.tolist(), ks.tolist(), strict=True):
        assert singles[seat, k // cells] > 0 and singles[seat, k % cells] > 0
    # The last slide's context pairs cells of different seats (every seat but the
    # mover's, in a flat tree with the seats in turn): some pair's first cell is not one
    # the seat took in any iteration.
    last = searched(state, HybridParams(mast=True, nst=True, tree_depth=1), 300)
    singles, pairs = last.mast_n[:, :cells], last.mast_n[:, cells:]
    seats, ks = np.nonzero(pairs)
    assert any(
        singles[s, k // cells] == 0 for s, k in zip(seats.tolist(), ks.tolist(), strict=True)
    )


@pytest.mark.parametrize("mast_visits", [0.0, 2.0])
@pytest.mark.parametrize("game", [1, 2, 4])
def test_mast_learns_each_seats_cells_from_its_own_rewards(game: int, mast_visits: float) -> None:
    wait_warm(None)
    state = position(game, 30 + game, 12)
    params = HybridParams(mast=True, tree_depth=1, mast_visits=mast_visits)
    tree = searched(state, params, 400)
    assert walk(tree, state, params, {}) == tree.counts[0]  # the tree is as without it
    n, w = tree.mast_n, tree.mast_w
    taken = [c for c, o in enumerate(state.owner) if o != 0]
    assert n[0].sum() == 0 and n[:, taken].sum() == 0  # seats 1-4, free cells only
    assert w[n == 0].sum() == 0
    # A reward is at most 1 plus the score-lead term, at least that term below 0.
    lead = params.margin
    seen = n > 0
    means = w[seen] / n[seen]
    assert means.min() >= -lead and means.max() <= 1 + lead
    # Flat (tree_depth=1): each iteration takes one root slide's cell for the mover,
    # which is counted at least as often as the root slides to it were visited.
    me = state.to_move
    by_dst: dict[int, int] = {}
    for j in range(int(tree.node_i[0, N_EDGES])):
        d = int(tree.edge_i[j, E_DST])
        by_dst[d] = by_dst.get(d, 0) + int(tree.edge_n[j])
    for d, visits in by_dst.items():
        assert n[me, d] >= visits
    assert sum(by_dst.values()) == 400
    # The other seats took cells in the playouts too.
    assert all(n[seat].sum() > 0 for seat in (1, 2, 3, 4) if seat != me and state.slides(seat))


def test_mast_is_on_by_default_and_off_when_asked_or_with_uniform_playouts() -> None:
    wait_warm(None)
    state = position(1, 5, 6)
    assert HybridParams().mast
    assert searched(state, HybridParams(), 50).mast_n.sum() > 0
    for params in (HybridParams(mast=False), HybridParams(playout="random")):
        tree = searched(state, params, 50)
        assert tree.mast_n.size == 0 and tree.turns.shape[0] == 0


def test_mast_carried_keeps_each_cells_value_with_its_visits_capped() -> None:
    """``CompiledTree.carry_mast``: a new search of the same board starts from the
    learned means, each cell's visits cut to the cap; another board's tables are
    ignored."""
    wait_warm(None)
    state = position(1, 5, 6)
    params = HybridParams(mast_carry=20)
    before = searched(state, params, 400)
    w, n = before.mast_w, before.mast_n
    assert n.max() > 20  # some cells were taken more often than the cap
    root = Node(state.to_move, state.hash)
    expand(root, state, params.prior_temperature)
    tree = CompiledTree(state, root, params, params.playout_policy(), {}, seed=3)
    tree.carry_mast(w, n, 20)
    assert (tree.mast_n == np.minimum(n, 20)).all()
    seen = n > 0
    assert tree.mast_w[seen] / tree.mast_n[seen] == pytest.approx(w[seen] / n[seen])
    assert tree.mast_w[~seen].sum() == 0
    other = position(2, 5, 6)  # another board: another number of cells
    later = searched(other, params, 10)
    later_n = later.mast_n.copy()
    later.carry_mast(w, n, 20)
    assert (later.mast_n == later_n).all()


@pytest.mark.parametrize("carry", [0, 30])
def test_an_mcts_carries_mast_into_its_next_search_only_when_asked(carry: int) -> None:
    wait_warm(None)
    state = position(1, 7, 8)
    mcts = Mcts(HybridParams(mast_carry=carry), random.Random(2))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(60), float("inf"), max_iterations=200)
    assert mcts.iterations == 200 and not python_children(mcts)  # the compiled tree searched
    assert (mcts.mast is not None) == bool(carry)
    mcts.set_root(state)
    mcts.expand_root(state)
    (tree,) = mcts.compiled_trees(state, None)
    if carry:
        assert mcts.mast is not None
        assert (tree.mast_n == np.minimum(mcts.mast[1], carry)).all()
        assert tree.mast_n.sum() > 0
    else:
        assert tree.mast_n.sum() == 0  # learned afresh
    # The search goes on from the carried tables and passes them on again.
    mcts.search(state, Budget.seconds(60), float("inf"), max_iterations=100)
    move = mcts.best()
    assert move is not None and move in state.legal_moves()


def python_nodes(params: HybridParams, state: GameState) -> list[Node]:
    """Every node of an 800-iteration Python-tree search from ``state`` (a fixed seed),
    the root first."""
    mcts = Mcts(params.model_copy(update={"tree": "python"}), random.Random(3))
    mcts.set_root(state)
    mcts.search(state, Budget.seconds(60), float("inf"), max_iterations=800)
    assert mcts.root is not None
    nodes = []
    stack: list[Node | None] = [mcts.root]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        nodes.append(node)
        stack.append(node.pass_child)
        for e in node.edges or ():
            stack.extend(s.child for s in e.splits)
    return nodes


def visited_slides(tree: str, params: HybridParams, state: GameState) -> dict[bool, list[int]]:
    """After 800 iterations from ``state``: for the nodes below the root of the
    searching seat (True) and of the other seats (False) whose slides were taken 3 to
    20 times, how many of their slides were taken."""
    out: dict[bool, list[int]] = {True: [], False: []}
    me = state.to_move
    if tree == "compiled":
        t = searched(state, params, 800)
        for k in range(1, int(t.counts[0])):
            n_edges = int(t.node_i[k, N_EDGES])
            if n_edges > 0:
                start = int(t.node_i[k, N_FIRST])
                taken = t.edge_n[start : start + n_edges]
                if 3 <= taken.sum() <= 20:
                    out[int(t.node_i[k, N_MOVER]) == me].append(int((taken > 0).sum()))
        return out
    for node in python_nodes(params, state)[1:]:
        visits = [e.n for e in node.edges or ()]
        if 3 <= sum(visits) <= 20:
            out[node.to_move == me].append(sum(n > 0 for n in visits))
    return out


@pytest.mark.parametrize("tree", ["compiled", "python"])
def test_first_play_urgency_of_the_other_seats_holds_at_their_nodes_only(tree: str) -> None:
    """``fpu_other`` values the other seats' unvisited slides, ``fpu`` the searching
    seat's. With a reduction of 5 (more than a reward and the exploration term of 20
    visits together) a node takes one slide until it has about 25 visits; with 0 some
    nodes of 3 to 20 visits take several."""
    wait_warm(None)
    state = position(1, 4, 4)
    mine = visited_slides(tree, HybridParams(fpu=0.0, fpu_other=5.0), state)
    assert mine[False] and set(mine[False]) == {1}
    assert mine[True] and max(mine[True]) > 1
    theirs = visited_slides(tree, HybridParams(fpu=5.0, fpu_other=0.0), state)
    assert theirs[False] and max(theirs[False]) > 1
    assert set(theirs[True]) <= {1}  # the searching seat's deeper nodes: few reach 3


def root_visits(tree: str, params: HybridParams, state: GameState) -> list[int]:
    """The root slides' visits after 800 iterations from ``state`` (a fixed seed)."""
    if tree == "compiled":
        t = searched(state, params, 800)
        return [int(n) for n in t.edge_n[: int(t.node_i[0, N_EDGES])]]
    return [e.n for e in python_nodes(params, state)[0].edges or ()]


@pytest.mark.parametrize("tree", ["compiled", "python"])
def test_the_other_seats_exploration_holds_at_their_nodes_only(tree: str) -> None:
    """``c_puct_other`` is the PUCT exploration at the other seats' nodes, ``c_puct`` at
    the searching seat's: a flat search (the root alone, the searching seat's) is the
    same whatever ``c_puct_other``; two plies deep (the next seat's nodes below it)
    it is not; 0, the default, is ``c_puct`` there too."""
    wait_warm(None)
    state = position(1, 4, 4)

    def visits(depth: int, c_puct: float, c_other: float) -> list[int]:
        params = HybridParams(tree_depth=depth, c_puct=c_puct, c_puct_other=c_other)
        return root_visits(tree, params, state)

    assert visits(1, 1.0, 0.05) == visits(1, 1.0, 20.0)
    assert visits(1, 0.05, 1.0) != visits(1, 20.0, 1.0)
    assert visits(2, 1.0, 0.05) != visits(2, 1.0, 20.0)
    assert visits(3, 2.0, 0.0) == visits(3, 2.0, 2.0)
    assert visits(3, 2.0, 0.0) != visits(3, 2.0, 0.5)


@pytest.mark.parametrize("tree", ["compiled", "python"])
def test_a_slides_value_from_its_most_visited_split_changes_the_search(tree: str) -> None:
    """``split_value`` is read by both trees' policies: on a position where slides
    have many split sizes, a search that values a slide by its most visited split's
    mean spends its visits differently from one by the slide's own mean (the same
    seed), and in the Python tree each slide's ``top`` is its most visited split."""
    wait_warm(None)
    state = position(1, 4, 4)
    plain = root_visits(tree, HybridParams(), state)
    assert root_visits(tree, HybridParams(split_value=0.0), state) == plain
    assert root_visits(tree, HybridParams(split_value=1.0), state) != plain
    edges = 0
    for node in python_nodes(HybridParams(split_value=1.0), state):
        for e in node.edges or ():
            assert e.top in e.splits and e.top.n == max(sp.n for sp in e.splits)
            edges += len(e.splits) > 1
    assert edges > 0


def test_a_forced_root_slide_takes_every_iteration() -> None:
    """``CompiledTree.force``: while a root slide is forced, every iteration goes
    through it (the others' visits stay), below it the tree policy as before; -1
    gives the root back."""
    wait_warm(None)
    state = position(1, 4, 4)
    tree = searched(state, HybridParams(), 200)
    root = tree.root
    assert root.edges is not None
    tree.sync_root()
    before = [e.n for e in root.edges]
    j = min(range(len(before)), key=lambda k: before[k])  # the least visited slide
    tree.force(j)
    assert tree.run(150) == 150
    tree.sync_root()
    after = [e.n for e in root.edges]
    assert after[j] == before[j] + 150
    assert [a for k, a in enumerate(after) if k != j] == [b for k, b in enumerate(before) if k != j]
    assert root.edges[j].value(0.0) == pytest.approx(float(tree.edge_f[j, 1]) / after[j])
    tree.force(-1)
    assert tree.run(100) == 100
    tree.sync_root()
    assert sum(e.n for e in root.edges) == 450


@pytest.mark.parametrize("game", [1, 2])
def test_sequential_halving_shares_the_rest_among_the_most_visited_slides(game: int) -> None:
    """``halving=4``: PUCT for ``halving_start`` of the iterations (the same search as
    one without halving, to there), then only the four most visited root slides get
    visits, and the move is the one of them halving kept, with its most visited split."""
    wait_warm(None)
    state = position(game, 4 + game, 6)
    its = 600

    def search(**kw: float) -> Mcts:
        mcts = Mcts(HybridParams(**kw), random.Random(3))
        mcts.set_root(state)
        mcts.search(state, Budget.seconds(60), float("inf"), max_iterations=its)
        return mcts

    assert search(halving_start=0.25).chosen is None  # halving off: PUCT for all of it
    head = Mcts(HybridParams(), random.Random(3))
    head.set_root(state)
    head.search(state, Budget.seconds(60), float("inf"), max_iterations=its // 4)
    halved = search(halving=4, halving_start=0.25)
    assert halved.iterations == its
    assert halved.root is not None and head.root is not None
    assert halved.root.n == its
    early = [e.n for e in head.root.edges or ()]
    late = [e.n for e in halved.root.edges or ()]
    grown = {j for j, (a, b) in enumerate(zip(early, late, strict=True)) if b > a}
    assert all(b >= a for a, b in zip(early, late, strict=True))
    edges = head.root.edges or []
    top = sorted(range(len(edges)), key=lambda j: (early[j], edges[j].prior))[::-1][:4]
    assert grown == set(top)
    chosen = halved.chosen
    assert chosen is not None and halved.root.edges is not None
    assert chosen in [halved.root.edges[j] for j in top]
    move = halved.best()
    split = max(chosen.splits, key=lambda s: (s.n, s.w)).split
    assert move is not None and move in state.legal_moves()
    assert (move.cell, move.direction, move.split) == (chosen.cell, chosen.direction, split)
    # The survivor took a share of both phases: one of the two slides that grew most.
    growth = [b - a for a, b in zip(early, late, strict=True)]
    assert growth[halved.root.edges.index(chosen)] >= sorted(growth)[-2]
    # A new root forgets the choice: the most visited slide again.
    halved.set_root(state)
    assert halved.chosen is None
