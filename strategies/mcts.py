"""The MCTS part of the main strategy.

The tree's first-level choice is a slide (stack, direction); the split size is a
second-level choice under each slide, widened progressively: a slide first offers
its promising sizes (the area guess, half, 1, count-1) and opens further sizes as it
is visited more. Slides are chosen by PUCT with priors from a cheap local
evaluation; each edge backs up the reward of the seat that made it (max^n), so
every seat plays for itself (in game 4 the rewards are the pair's). Playouts are
epsilon-greedy. The tree survives between turns of one game: the next search
starts from the node that matches the new position, if the tree holds it.

Game 3 (``search_worlds``): information-set MCTS. Each iteration draws the hidden
counts from the belief and plays the iteration in that world, all worlds sharing
one tree, so a move's value is its average over the worlds the belief allows and
not its value in one guessed world. Another seat's slide exists in a world only if
its stack holds two or more there (edges are bandits over the worlds where they are
available), and its split is decided in the world (the area guess), since its size
means nothing across worlds. Own counts are always known.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable, Mapping

from state.game import UNKNOWN, GameState, Move
from state.geometry import DIRECTION_KEYS, FREE
from state.playout import random_playout
from strategies.base import Budget
from strategies.common import area_split, heuristic_playout, rewards, slide_key, split_candidates

PLAYOUTS = ("heuristic", "heuristic-random", "random")

# Draws one world of hidden counts: {cell: count} for other seats' stacks.
WorldSampler = Callable[[random.Random], Mapping[int, int]]


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
        self.cands: list[int] | None = None  # split sizes not opened yet, best first


class Node:
    __slots__ = ("edges", "hash", "n", "pass_child", "terminal", "to_move")

    def __init__(self, to_move: int, hash_: int) -> None:
        self.to_move = to_move
        self.hash = hash_
        self.n = 0
        self.edges: list[Edge] | None = None
        self.pass_child: Node | None = None
        self.terminal = False


class MctsConfig:
    """Tunable constants of the search (copied from the strategy's parameters)."""

    __slots__ = (
        "c_puct",
        "c_split",
        "epsilon",
        "fpu",
        "margin",
        "playout",
        "prior_temperature",
        "pw_alpha",
        "pw_base",
        "pw_c",
        "samples",
    )

    def __init__(
        self,
        c_puct: float = 1.0,
        c_split: float = 0.5,
        epsilon: float = 0.3,
        samples: int = 3,
        fpu: float = 0.1,
        margin: float = 0.05,
        prior_temperature: float = 2.0,
        pw_base: int = 2,
        pw_c: float = 1.0,
        pw_alpha: float = 0.4,
        playout: str = "heuristic",
    ) -> None:
        # "heuristic": epsilon-greedy slides, area-guess splits; "heuristic-random":
        # the same slides with uniformly random splits; "random": uniformly random
        # slides and splits (uct's playouts).
        if playout not in PLAYOUTS:
            raise ValueError(f"playout must be one of {PLAYOUTS}, not {playout!r}")
        self.playout = playout
        self.c_puct = c_puct
        self.c_split = c_split
        self.epsilon = epsilon
        self.samples = samples
        self.fpu = fpu
        self.margin = margin
        self.prior_temperature = prior_temperature
        self.pw_base = pw_base
        self.pw_c = pw_c
        self.pw_alpha = pw_alpha


def playout(state: GameState, rng: random.Random, cfg: MctsConfig) -> int:
    """Play to the end in place with the configured policy; returns the plies played."""
    if cfg.playout == "random":
        return random_playout(state, rng)
    return heuristic_playout(
        state, rng, cfg.epsilon, cfg.samples, random_split=cfg.playout == "heuristic-random"
    )


def softmax(keys: list[float], temperature: float) -> list[float]:
    if not keys:
        return []
    top = max(keys)
    ex = [math.exp((k - top) / temperature) for k in keys]
    total = sum(ex)
    return [e / total for e in ex]


Trail = list[tuple[Edge | None, Split | Node, int]]


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
            if item.child is not None:
                item.child.n += 1
        else:
            assert isinstance(item, Node)
            item.n += 1


class Mcts:
    """A search tree kept across turns of one game."""

    def __init__(self, config: MctsConfig, rng: random.Random) -> None:
        self.cfg = config
        self.rng = rng
        self.root: Node | None = None
        self.iterations = 0
        self.nodes = 0
        self.max_depth = 0
        self.reused = 0

    # --------------------------------------------------------------- tree reuse
    def set_root(self, state: GameState, max_depth: int = 8) -> None:
        """Make the node matching ``state`` the root: a descendant of the old root
        (our move and the others' replies) if the tree holds it, else a new node."""
        target = state.hash
        found: Node | None = None
        if self.root is not None:
            queue: deque[tuple[Node, int]] = deque([(self.root, 0)])
            while queue:
                node, depth = queue.popleft()
                if node.hash == target and node.to_move == state.to_move and depth > 0:
                    found = node
                    break
                if depth >= max_depth:
                    continue
                if node.pass_child is not None:
                    queue.append((node.pass_child, depth + 1))
                for e in node.edges or ():
                    for s in e.splits:
                        if s.child is not None:
                            queue.append((s.child, depth + 1))
            if self.root.hash == target and self.root.to_move == state.to_move:
                found = self.root
        self.reused = found.n if found is not None else 0
        self.root = found if found is not None else Node(state.to_move, target)

    # ---------------------------------------------------------------- expansion
    def expand(self, node: Node, state: GameState) -> None:
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
            keys.append(slide_key(state, cell, dst, area))
        for e, pr in zip(edges, softmax(keys, self.cfg.prior_temperature), strict=True):
            e.prior = pr
        node.edges = edges

    def set_root_priors(self, priors: dict[tuple[int, int], float], weight: float) -> None:
        """Blend outside knowledge (e.g. alpha-beta's root values) into the root priors."""
        root = self.root
        if root is None or not root.edges or not priors:
            return
        for e in root.edges:
            e.prior = (1 - weight) * e.prior + weight * priors.get((e.cell, e.direction), 0.0)

    def choose_split(self, e: Edge) -> Split:
        """The split size to try on slide ``e``: progressive widening opens more sizes as
        the slide is visited (best candidates first), UCB1 chooses among the open ones."""
        cfg = self.cfg
        splits = e.splits
        if e.count > 2:
            width = cfg.pw_base + int(cfg.pw_c * e.n**cfg.pw_alpha)
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
            c_split = cfg.c_split
            for sp in splits:
                if sp.n == 0:
                    return sp
                u = sp.w / sp.n + c_split * math.sqrt(log_n / sp.n)
                if u > best_s:
                    best_s, s = u, sp
        return s

    # ------------------------------------------------------------------- search
    def search(
        self,
        state: GameState,
        budget: Budget,
        stop_at: float,
        max_iterations: int = 0,
        allowed: set[tuple[int, int]] | None = None,
    ) -> None:
        """Iterate until ``stop_at``, the budget or ``max_iterations``; ``state`` is
        the root position and is left as it was."""
        cfg = self.cfg
        rng = self.rng
        root = self.root
        assert root is not None
        if root.edges is None:
            self.expand(root, state)
            self.nodes += 1
        if allowed is not None and root.edges:
            kept = [e for e in root.edges if (e.cell, e.direction) in allowed]
            if kept:
                total = sum(e.prior for e in kept) or 1.0
                for e in kept:
                    e.prior /= total
                root.edges = kept
        c_puct = cfg.c_puct
        fpu = cfg.fpu
        monotonic = time.monotonic
        it = 0
        while True:
            if max_iterations and it >= max_iterations:
                break
            if monotonic() >= stop_at or budget.expired():
                break
            node = root
            trail: Trail = []
            applied = 0
            while True:
                if node.edges is None:
                    self.expand(node, state)
                    self.nodes += 1
                    break
                if node.terminal:
                    break
                edges = node.edges
                if not edges:
                    # The seat to move has no slide: it passes.
                    if node.pass_child is None:
                        state.skip_turn()
                        applied += 1
                        node.pass_child = Node(state.to_move, state.hash)
                        trail.append((None, node.pass_child, node.to_move))
                        node = node.pass_child
                        break
                    state.skip_turn()
                    applied += 1
                    trail.append((None, node.pass_child, node.to_move))
                    node = node.pass_child
                    continue
                # PUCT over slides.
                sqrt_n = math.sqrt(node.n + 1)
                parent_q = 0.0
                best_u = -1e18
                best_e = edges[0]
                nq = 0
                for e in edges:
                    if e.n:
                        parent_q += e.w
                        nq += e.n
                parent_q = parent_q / nq - fpu if nq else 0.5
                for e in edges:
                    q = e.w / e.n if e.n else parent_q
                    u = q + c_puct * e.prior * sqrt_n / (1 + e.n)
                    if u > best_u:
                        best_u, best_e = u, e
                e = best_e
                s = self.choose_split(e)
                mover = node.to_move
                state.slide(e.cell, e.dst, s.split)
                applied += 1
                trail.append((e, s, mover))
                if s.child is None:
                    s.child = Node(state.to_move, state.hash)
                    node = s.child
                    break
                node = s.child
            depth = len(trail)
            if depth > self.max_depth:
                self.max_depth = depth
            if not node.terminal:
                applied += playout(state, rng, cfg)
            r = rewards(state, cfg.margin)
            for _ in range(applied):
                state.undo()
            backup(root, trail, r)
            it += 1
            if it % 32 == 0:
                self.offer(budget)
        self.iterations += it

    # ------------------------------------------------------- game 3: many worlds
    def expand_open(self, node: Node, state: GameState, never: set[int]) -> None:
        """Edges of another seat whose counts are hidden: every slide of every stack not
        known to hold one sheep, whether or not it can move in this world."""
        owner = state.owner
        sheep = state.sheep
        rays = state.geometry.rays
        edges: list[Edge] = []
        keys: list[float] = []
        for cell in state.stacks[state.to_move]:
            if cell in never:
                continue
            for k, ray in enumerate(rays[cell]):
                dst = -1
                for c in ray:
                    if owner[c] != FREE:
                        break
                    dst = c
                if dst < 0:
                    continue
                movable = sheep[cell] >= 2
                area = area_split(state, cell, dst) if movable else 1
                edges.append(Edge(cell, DIRECTION_KEYS[k], dst, 0, area))
                # A slide this world does not allow still needs a prior: a low one.
                keys.append(slide_key(state, cell, dst, area) if movable else -3.0)
        for e, pr in zip(edges, softmax(keys, self.cfg.prior_temperature), strict=True):
            e.prior = pr
        node.edges = edges

    def search_worlds(
        self,
        state: GameState,
        budget: Budget,
        stop_at: float,
        sample: WorldSampler,
        max_iterations: int = 0,
        worlds: int = 0,
    ) -> None:
        """Information-set MCTS over hidden counts: like ``search``, but every iteration
        first sets the hidden counts of ``state`` (``UNKNOWN`` cells) to a world drawn
        with ``sample``.

        ``worlds`` > 0 draws at most that many worlds and then picks among them
        uniformly: an exact posterior draw costs about as much as a playout, and
        the posterior does not change during one search. 0 draws afresh every time.
        ``state`` is left as it was, hidden counts included.
        """
        cfg = self.cfg
        rng = self.rng
        root = self.root
        assert root is not None
        me = state.to_move
        sheep = state.sheep
        hidden = [c for cells in state.stacks for c in cells if sheep[c] == UNKNOWN]
        # Hidden stacks that hold one sheep in every draw cannot move in any world.
        pool = [sample(rng) for _ in range(min(worlds, 16) if worlds else 16)]
        never = {c for c in hidden if all(d.get(c, 2) <= 1 for d in pool)}
        draws = [] if worlds else pool
        c_puct = cfg.c_puct
        fpu = cfg.fpu
        monotonic = time.monotonic
        it = 0
        try:
            while True:
                if max_iterations and it >= max_iterations:
                    break
                if monotonic() >= stop_at or budget.expired():
                    break
                if not worlds:
                    world = draws.pop() if draws else sample(rng)
                elif len(pool) < worlds:
                    world = sample(rng)
                    pool.append(world)
                else:
                    world = pool[rng.randrange(worlds)]
                for c in hidden:
                    # The sampler covers every hidden stack; 1 is never impossible.
                    sheep[c] = world.get(c, 1)
                node = root
                trail: Trail = []
                applied = 0
                finished = False
                while True:
                    if node.edges is None:
                        if node.to_move == me:
                            self.expand(node, state)
                        else:
                            self.expand_open(node, state, never)
                        self.nodes += 1
                        break
                    mover = node.to_move
                    if mover == me:
                        avail = node.edges
                    else:
                        avail = [e for e in node.edges if sheep[e.cell] >= 2]
                    if not avail:
                        if state.is_terminal():
                            finished = True
                            break
                        state.skip_turn()
                        applied += 1
                        if node.pass_child is None:
                            node.pass_child = Node(state.to_move, state.hash)
                            trail.append((None, node.pass_child, mover))
                            node = node.pass_child
                            break
                        trail.append((None, node.pass_child, mover))
                        node = node.pass_child
                        continue
                    parent_q = 0.0
                    nq = 0
                    for e in avail:
                        e.avail += 1
                        if e.n:
                            parent_q += e.w
                            nq += e.n
                    parent_q = parent_q / nq - fpu if nq else 0.5
                    best_u = -1e18
                    best_e = avail[0]
                    for e in avail:
                        q = e.w / e.n if e.n else parent_q
                        u = q + c_puct * e.prior * math.sqrt(e.avail) / (1 + e.n)
                        if u > best_u:
                            best_u, best_e = u, e
                    e = best_e
                    if mover != me:
                        s = e.splits[0]
                        split = area_split(state, e.cell, e.dst)
                    else:
                        s = self.choose_split(e)
                        split = s.split
                    state.slide(e.cell, e.dst, split)
                    applied += 1
                    trail.append((e, s, mover))
                    if s.child is None:
                        s.child = Node(state.to_move, state.hash)
                        node = s.child
                        break
                    node = s.child
                depth = len(trail)
                if depth > self.max_depth:
                    self.max_depth = depth
                if not finished:
                    applied += playout(state, rng, cfg)
                r = rewards(state, cfg.margin)
                for _ in range(applied):
                    state.undo()
                backup(root, trail, r)
                it += 1
                if it % 32 == 0:
                    self.offer(budget)
        finally:
            for c in hidden:
                sheep[c] = UNKNOWN
        self.iterations += it

    # ------------------------------------------------------------------ results
    def best(self) -> Move | None:
        root = self.root
        if root is None or not root.edges:
            return None
        e = max(root.edges, key=lambda e: (e.n, e.prior))
        s = max(e.splits, key=lambda s: (s.n, s.w))
        return Move(e.cell, s.split, e.direction)

    def offer(self, budget: Budget) -> None:
        move = self.best()
        if move is not None:
            budget.offer_move(move)

    def root_values(self) -> dict[tuple[int, int], tuple[int, float]]:
        root = self.root
        if root is None or not root.edges:
            return {}
        return {(e.cell, e.direction): (e.n, e.w / e.n if e.n else 0.0) for e in root.edges}
