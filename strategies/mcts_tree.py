"""The MCTS tree: its node types, how a node is expanded, the tree policy and the backup.

The tree's first-level choice is a slide (stack, direction); the split size is a
second-level choice under each slide, widened progressively: a slide first offers
its promising sizes (the area guess, half, 1, count-1) and opens further sizes as it
is visited more. Slides are chosen by PUCT with priors from a cheap local
evaluation; each edge backs up the reward of the seat that made it (max^n), so
every seat plays for itself (in game 4 the rewards are the pair's).

Game 3: one tree serves every world of hidden counts. A node of another seat holds
every slide of every stack that can hold two or more in some world (``expand_open``);
an iteration offers only the slides its world allows, and PUCT counts an edge's
visits against the selections in which it was available (``Edge.avail``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

from state.game import GameState
from state.geometry import DIRECTION_KEYS
from strategies.common import KEY_WEIGHTS, area_split, slide_key, split_candidates
from strategies.opponents import SplitRule


class Split:
    __slots__ = ("child", "n", "split", "w")

    def __init__(self, split: int) -> None:
        self.split = split
        self.n = 0
        self.w = 0.0
        self.child: Node | None = None


class Edge:
    """A slide (cell, direction) of the seat to move, with its split choices."""

    __slots__ = (
        "area",
        "avail",
        "cands",
        "cell",
        "count",
        "direction",
        "dst",
        "n",
        "prior",
        "splits",
        "top",
        "w",
    )

    def __init__(self, cell: int, direction: int, dst: int, count: int, area: int) -> None:
        self.cell = cell
        self.direction = direction
        self.dst = dst
        self.count = count
        self.area = area
        self.prior = 0.0
        self.n = 0
        self.w = 0.0
        # Game 3: the selections of its node in which this slide existed.
        self.avail = 0
        self.splits: list[Split] = [Split(area)]
        self.top = self.splits[0]  # the most visited split (on ties, the first to get there)
        self.cands: list[int] | None = None  # split sizes not opened yet, best first

    def value(self, split_value: float) -> float:
        """The mean reward of this visited slide, with ``split_value`` of it taken from
        the mean of its most visited split instead: the mover chooses the split, so a
        slide is worth its best split rather than the mean of every size explored."""
        mean = self.w / self.n
        if split_value <= 0:
            return mean
        top = self.top
        return (1.0 - split_value) * mean + split_value * top.w / top.n


class Node:
    __slots__ = ("edges", "hash", "n", "pass_child", "terminal", "to_move")

    def __init__(self, to_move: int, hash_: int) -> None:
        self.to_move = to_move
        self.hash = hash_
        self.n = 0
        self.edges: list[Edge] | None = None
        self.pass_child: Node | None = None
        self.terminal = False


# One iteration's path: (edge, split, mover) for a slide, (None, node passed into, mover)
# for a pass.
Trail = list[tuple[Edge | None, Split | Node, int]]


def softmax(keys: list[float], temperature: float) -> list[float]:
    if not keys:
        return []
    top = max(keys)
    ex = [math.exp((k - top) / temperature) for k in keys]
    total = sum(ex)
    return [e / total for e in ex]


# ----------------------------------------------------------------------- expansion
def expand(
    node: Node,
    state: GameState,
    prior_temperature: float,
    split_rule: SplitRule | None = None,
    weights: Sequence[float] = KEY_WEIGHTS,
) -> None:
    """Edges for every slide of the seat to move in ``state``, priors by the cheap key
    (its terms weighted by ``weights``); a node without slides is marked terminal if
    the game is over. With ``split_rule`` (the seat's learned rule,
    ``strategies.opponents``) each slide has that one split."""
    slides = state.slides()
    if not slides:
        node.edges = []
        if state.is_terminal():
            node.terminal = True
        return
    sheep = state.sheep
    edges: list[Edge] = []
    keys: list[float] = []
    for cell, direction, dst in slides:
        count = sheep[cell]
        area = area_split(state, cell, dst)
        e = Edge(cell, direction, dst, count, area)
        edges.append(e)
        keys.append(slide_key(state, cell, dst, area, weights))
    for e, pr in zip(edges, softmax(keys, prior_temperature), strict=True):
        e.prior = pr
    if split_rule is not None:
        for e in edges:
            e.splits = [Split(split_rule(e.count))]
            e.top = e.splits[0]
            e.cands = []  # nothing to widen to
    node.edges = edges


def expand_open(
    node: Node,
    state: GameState,
    never: set[int],
    prior_temperature: float,
    weights: Sequence[float] = KEY_WEIGHTS,
) -> None:
    """Edges of another seat whose counts are hidden: every slide of every stack not
    known to hold one sheep, whether or not it can move in this world."""
    sheep = state.sheep
    edges: list[Edge] = []
    keys: list[float] = []
    for cell in state.stacks[state.to_move]:
        if cell in never:
            continue
        movable = sheep[cell] >= 2
        for direction in DIRECTION_KEYS:
            dst = state.destination(cell, direction)
            if dst < 0:
                continue
            area = area_split(state, cell, dst) if movable else 1
            edges.append(Edge(cell, direction, dst, 0, area))
            # A slide this world does not allow still needs a prior: a low one.
            keys.append(slide_key(state, cell, dst, area, weights) if movable else -3.0)
    for e, pr in zip(edges, softmax(keys, prior_temperature), strict=True):
        e.prior = pr
    node.edges = edges


# --------------------------------------------------------------------- tree policy
def select_edge(
    node: Node,
    avail: list[Edge],
    c_puct: float,
    fpu: float,
    by_availability: bool,
    split_value: float = 0.0,
) -> Edge:
    """PUCT over the slides ``avail`` of ``node``; unvisited slides get the visited
    ones' mean less ``fpu``, visited ones ``Edge.value(split_value)``. The exploration
    count is the node's visits, or with ``by_availability`` (game 3) each edge's own
    count of selections it was offered in."""
    parent_q = 0.0
    nq = 0
    for e in avail:
        if e.n:
            parent_q += e.w
            nq += e.n
    parent_q = parent_q / nq - fpu if nq else 0.5
    best_u = -1e18
    best_e = avail[0]
    if by_availability:
        for e in avail:
            e.avail += 1
            q = e.value(split_value) if e.n else parent_q
            u = q + c_puct * e.prior * math.sqrt(e.avail) / (1 + e.n)
            if u > best_u:
                best_u, best_e = u, e
        return best_e
    sqrt_n = math.sqrt(node.n + 1)
    for e in avail:
        q = e.value(split_value) if e.n else parent_q
        u = q + c_puct * e.prior * sqrt_n / (1 + e.n)
        if u > best_u:
            best_u, best_e = u, e
    return best_e


def choose_split(e: Edge, c_split: float, pw_base: int, pw_c: float, pw_alpha: float) -> Split:
    """The split size to try on slide ``e``: progressive widening opens more sizes as
    the slide is visited (best candidates first), UCB1 chooses among the open ones."""
    splits = e.splits
    if e.count > 2:
        width = pw_base + int(pw_c * e.n**pw_alpha)
        if len(splits) < width:
            if e.cands is None:
                cands = split_candidates(e.count, e.area)
                cands.remove(e.area)
                e.cands = cands
            if e.cands:
                splits.append(Split(e.cands.pop(0)))
    s = splits[0]
    if len(splits) > 1:
        best_s = -1e18
        log_n = math.log(e.n + 1)
        for sp in splits:
            if sp.n == 0:
                return sp
            u = sp.w / sp.n + c_split * math.sqrt(log_n / sp.n)
            if u > best_s:
                best_s, s = u, sp
    return s


def backup(root: Node, trail: Trail, r: list[float]) -> None:
    """Add one iteration's rewards along its path: each edge and split gets the reward
    of the seat that chose it (max^n), each pass node its visit."""
    root.n += 1
    for edge, item, mover in trail:
        if edge is not None:
            reward = r[mover - 1]
            edge.n += 1
            edge.w += reward
            assert isinstance(item, Split)
            item.n += 1
            item.w += reward
            if item.n > edge.top.n:
                edge.top = item
            if item.child is not None:
                item.child.n += 1
        else:
            assert isinstance(item, Node)
            item.n += 1


# ---------------------------------------------------------------------- tree reuse
def find_node(root: Node, state: GameState, max_depth: int = 8) -> Node | None:
    """The node of ``root``'s tree that matches ``state``: ``root`` itself, or else a
    descendant at most ``max_depth`` plies down (our move and the others' replies)."""
    target = state.hash
    if root.hash == target and root.to_move == state.to_move:
        return root
    queue: deque[tuple[Node, int]] = deque([(root, 0)])
    while queue:
        node, depth = queue.popleft()
        if node.hash == target and node.to_move == state.to_move and depth > 0:
            return node
        if depth >= max_depth:
            continue
        if node.pass_child is not None:
            queue.append((node.pass_child, depth + 1))
        for e in node.edges or ():
            for s in e.splits:
                if s.child is not None:
                    queue.append((s.child, depth + 1))
    return None
