"""The MCTS part of the main strategy: its parameters, playouts and the search driver.

One search function (``Mcts.search``) runs the iterations: the tree policy of
``strategies.mcts_tree`` down to a new node, an epsilon-greedy playout from there by
the playout kernel (``strategies.kernel``: a copy of the leaf played out in flat
arrays, the state itself untouched), the rewards backed up along the path. The tree
survives between turns of one game: the next search starts from the node that
matches the new position, if the tree holds it.

Game 3 (``search`` with a world sampler): information-set MCTS. Each iteration
draws the hidden counts from the belief and plays the iteration in that world, all
worlds sharing one tree, so a move's value is its average over the worlds the belief
allows and not its value in one guessed world. Another seat's slide exists in a world
only if its stack holds two or more there (edges are bandits over the worlds where
they are available), and its split is decided in the world (a size drawn by the seat's
split models in the belief, or with ``hidden_split="area"`` the world's area guess),
since its size means nothing across worlds. Own counts are always known.
With ``tree="compiled"`` and ``world_trees`` N > 0, game 3 is searched instead by N
compiled trees, one per world drawn from the belief, each a game of known counts,
their root statistics summed (determinized search: many more iterations, at the
price of letting another seat play as if it knew our counts too).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from state.game import UNKNOWN, GameState, Move
from strategies.base import Budget, listed
from strategies.common import (
    KEY_WEIGHTS,
    PRIOR_TERMS,
    area_split,
    paranoid_rewards,
    rewards,
    score_rewards,
)
from strategies.kernel import (
    SPLIT_RULES,
    KernelName,
    PlayoutKernel,
    PlayoutPolicy,
    SplitMode,
    SplitRuleName,
    compiled_tree_ready,
    ready_kernel,
)
from strategies.mcts_tree import (
    Edge,
    Node,
    Trail,
    backup,
    choose_split,
    expand,
    expand_open,
    find_node,
    select_edge,
)
from strategies.opponents import RULES

if TYPE_CHECKING:
    import numpy as np

    from strategies.kernel.tree import CompiledTree

# Draws one world of hidden counts: {cell: count} for other seats' stacks.
WorldSampler = Callable[[random.Random], Mapping[int, int]]
# Draws a split size for (seat, count of the stack it moves off) in such a world.
SplitSampler = Callable[[int, int, random.Random], int]


PLAYOUT_SPLITS: dict[str, SplitMode] = {
    "heuristic": "area",
    "heuristic-random": "random",
    "heuristic-safe": "safe",
}
"""The kernel's split mode of each epsilon-greedy ``MctsParams.playout``."""

COMPILED_CHUNK = 16
"""Iterations of the compiled tree between looks at the clock (about half a
millisecond)."""
COMPILED_OFFER_CHUNKS = 8
"""Chunks between two writes of the compiled tree's root statistics (and offers of
its best move)."""
GROW_TIME = 0.05
"""The compiled tree grows its arrays only this long before the search's end or
earlier: a copy of a big tree takes tens of milliseconds."""


class MctsParams(BaseModel):
    """The search's tunables; the main strategy's parameters extend them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def other_c_puct(self) -> float:
        """The PUCT exploration at the other seats' nodes: ``c_puct_other``, or ``c_puct``
        where it is 0 (both trees read it here)."""
        return self.c_puct_other or self.c_puct

    @property
    def other_prior_temperature(self) -> float:
        """The priors' temperature at the other seats' nodes: ``prior_temperature_other``,
        or ``prior_temperature`` where it is 0 (both trees read it here)."""
        return self.prior_temperature_other or self.prior_temperature

    @property
    def other_prior_weights(self) -> tuple[float, ...]:
        """The key's weights at the other seats' nodes: ``prior_weights_other``, or
        ``prior_weights`` where it is empty (both trees read it here)."""
        return self.prior_weights_other or self.prior_weights

    def prior_weights_at(self, mine: bool) -> tuple[float, ...]:
        """The key's weights at a node of the searching seat (``mine``) or of another."""
        return self.prior_weights if mine else self.other_prior_weights

    def prior_temperature_at(self, mine: bool) -> float:
        """The priors' temperature at a node of the searching seat (``mine``) or of
        another seat."""
        return self.prior_temperature if mine else self.other_prior_temperature

    c_puct: float = Field(1.0, gt=0, description="PUCT exploration")
    c_puct_other: float = Field(
        0.0,
        ge=0,
        description=(
            "PUCT exploration at the other seats' nodes (0: c_puct there too; docs/strength.md, "
            '"The other seats searched wider")'
        ),
    )
    c_split: float = Field(0.5, gt=0, description="UCB1 exploration among split sizes")
    split_value: float = Field(
        0.0,
        ge=0,
        le=1,
        description=(
            "share of a visited slide's value in the tree policy taken from the mean of its "
            "most visited split instead of the slide's mean over every split tried "
            '(docs/strength.md, "Stop 62")'
        ),
    )
    # "heuristic": epsilon-greedy slides, area-guess splits; "heuristic-random": the
    # same slides with uniformly random splits; "heuristic-safe": the same slides with
    # random splits except one sheep into a dead end and all but one off a stack left
    # boxed in (PlayoutPolicy.splits "safe"); "random": uniformly random slides and
    # splits (uct's playouts).
    playout: Literal["heuristic", "heuristic-random", "heuristic-safe", "random"] = Field(
        "heuristic-random", description="playout policy (see strategies/mcts.py)"
    )
    epsilon: float = Field(0.3, ge=0, le=1, description="random share of playout moves")
    epsilon_other: float | None = Field(
        None,
        ge=0,
        le=1,
        description=(
            "random share of the playout moves of the seats outside the searching seat's "
            "team (none: epsilon for every seat); 0.1 gave nothing against flatmc "
            '(docs/strength.md, "Stop 101" and "Stop 102")'
        ),
    )
    samples: int = Field(3, ge=1, description="slides sampled by a greedy playout move")
    fpu: float = Field(
        0.1, ge=0, description="first-play urgency reduction at the searching seat's nodes"
    )
    fpu_other: float = Field(
        0.1,
        ge=0,
        description=(
            "first-play urgency reduction at the other seats' nodes "
            '(docs/strength.md, "First-play urgency")'
        ),
    )
    margin: float = Field(0.05, ge=0, description="score-margin weight in rewards")
    prior_temperature: float = Field(2.0, gt=0, description="softmax temperature of priors")
    prior_temperature_other: float = Field(
        0.0,
        ge=0,
        description=(
            "softmax temperature of priors at the other seats' nodes (0: prior_temperature "
            'there too; docs/strength.md, "How greedily the other seats play")'
        ),
    )
    prior_weights: tuple[float, ...] = Field(
        KEY_WEIGHTS,
        description=(
            "weights of the slide's terms in the priors' key, in the order of "
            f"strategies.common.PRIOR_TERMS ({', '.join(PRIOR_TERMS)}); a list, or a "
            "comma-separated string on the command line"
        ),
    )
    prior_weights_other: tuple[float, ...] = Field(
        (),
        description=(
            "the key's weights at the other seats' nodes, as prior_weights (empty: "
            "prior_weights there too)"
        ),
    )
    pw_base: int = Field(2, ge=1, description="split sizes open from the start")
    pw_c: float = Field(1.0, ge=0, description="progressive widening factor")
    pw_alpha: float = Field(0.4, ge=0, le=1, description="progressive widening exponent")
    playout_splits: bool = Field(
        False, description="the seats' learned split rules (opponent_splits) in playouts too"
    )
    playout_split_rule: SplitRuleName = Field(
        "policy",
        description="every seat's split in playouts: the playout policy's, or one rule",
    )
    paranoia: float = Field(
        0.0,
        ge=0,
        le=1,
        description="weight of our loss in the other seats' rewards (0: max^n, 1: paranoid)",
    )
    playout_cutoff: int = Field(
        0,
        ge=0,
        description="turns a playout plays before its position is evaluated (0: to the end)",
    )
    leaf_playouts: int = Field(
        1, ge=1, le=64, description="playouts from each new leaf, their rewards averaged"
    )
    tree_depth: int = Field(
        0, ge=0, description="plies the tree grows below the root (0: no limit; 1: flat)"
    )
    hidden_split: Literal["area", "belief"] = Field(
        "belief",
        description="game 3: another seat's split in the tree (area guess, or the belief's draw)",
    )
    kernel: Literal["auto", "python", "fast"] = Field(
        "auto", description="playout kernel (auto: the fastest installed; see strategies/kernel)"
    )
    world_trees: int = Field(
        0,
        ge=0,
        le=64,
        description=(
            "game 3 with hidden=belief, tree=compiled: this many worlds drawn from the "
            "belief, each searched by its own compiled tree, the root statistics summed "
            "(0: one Python tree over all the worlds)"
        ),
    )
    mast: bool = Field(
        True,
        description=(
            "tree=compiled: the playouts' greedy moves take the cell with the best mean "
            "reward learned in this search (MAST) instead of the most room (docs/strength.md, "
            '"MAST")'
        ),
    )
    nst: bool = Field(
        False,
        description=(
            "tree=compiled with mast: the playouts' greedy moves value a cell by its "
            "learned value averaged with its value after the cell the move before took, "
            "once that pair has 7 visits (the N-gram selection technique; README, "
            '"The compiled tree"; measured: docs/strength.md, "Stop 79" and "Stop 80")'
        ),
    )
    nst_context: Literal["last", "own"] = Field(
        "last",
        description=(
            "with nst: the move a cell is valued after, the last slide by any seat "
            '(last) or the mover\'s own last slide (own; docs/strength.md, "Stop 81")'
        ),
    )
    mast_visits: float = Field(
        0.0,
        ge=0,
        description=(
            "tree=compiled with mast: a slide's value in the tree starts from the "
            "mover's learned value of the cell it lands on, worth this many visits "
            "(0: first-play urgency, as the Python tree)"
        ),
    )
    mast_carry: int = Field(
        0,
        ge=0,
        description=(
            "tree=compiled with mast: each seat's learned cell values go on into the "
            "game's next search, each worth at most this many visits there (0: "
            'learned afresh every search; docs/strength.md, "MAST carried")'
        ),
    )
    halving: int = Field(
        0,
        ge=0,
        le=64,
        description=(
            "tree=compiled: after halving_start of the search, the root's this many most "
            "visited slides share the rest by sequential halving, the best mean kept "
            "(0: PUCT at the root to the end; with workers, the merged visits decide; "
            'docs/strength.md, "Stop 69")'
        ),
    )
    halving_start: float = Field(
        0.3, ge=0, lt=1, description="share of the search the root's PUCT has before halving"
    )
    tree: Literal["python", "compiled"] = Field(
        "compiled",
        description=(
            "the tree below the root: Python objects, or compiled with the fast kernel "
            "(strategies/kernel/tree.py; the Python one in game 3, with leaf_playouts "
            "above 1, and until it compiles)"
        ),
    )

    @field_validator("prior_weights", "prior_weights_other", mode="before")
    @classmethod
    def _weights_from_text(cls, value: object, info: ValidationInfo) -> object:
        """``--param prior_weights=1,-1.5,...`` arrives as one string; one weight a
        term (``prior_weights_other`` may also be empty)."""
        value = listed(value)
        other = info.field_name == "prior_weights_other"
        if (
            isinstance(value, (list, tuple))
            and len(value) != len(PRIOR_TERMS)
            and not (other and not value)
        ):
            raise ValueError(
                f"{len(PRIOR_TERMS)} weights, one for each of {', '.join(PRIOR_TERMS)}"
                f"{' (or none: prior_weights there too)' if other else ''}; "
                f"got {len(value)}"
            )
        return value

    def playout_policy(self, state: GameState | None = None) -> PlayoutPolicy:
        """The kernel's policy for ``playout``; with ``state``, a search's from it: the
        seats outside the team of the seat to move at ``epsilon_other``."""
        rule = SPLIT_RULES.index(self.playout_split_rule)
        seats = (0, rule, rule, rule, rule)
        if self.playout == "random":
            return PlayoutPolicy(seat_splits=seats, cutoff=self.playout_cutoff)
        splits = PLAYOUT_SPLITS[self.playout]
        policy = PlayoutPolicy(self.epsilon, self.samples, splits, seats, self.playout_cutoff)
        if state is None or self.epsilon_other is None:
            return policy
        team = {state.to_move, state.setting.partner(state.to_move)}
        others = [seat for seat in (1, 2, 3, 4) if seat not in team]
        return policy.with_epsilon(others, self.epsilon_other)

    def playout_kernel(self) -> PlayoutKernel:
        """The kernel to play out with now (the Python one while the fast one compiles)."""
        preferred: KernelName | None = None if self.kernel == "auto" else self.kernel
        return ready_kernel(preferred)


def in_turn(worlds: Sequence[Mapping[int, int]]) -> WorldSampler:
    """A sampler that gives ``worlds`` one after another, round and round: with
    ``world_trees`` equal to their number, each compiled tree takes one of them (any
    run of that many draws holds each once)."""
    if not worlds:
        raise ValueError("in_turn needs at least one world")
    turn = itertools.cycle(worlds)
    return lambda _rng: next(turn)


class WorldDraws:
    """Game 3: the hidden counts of the searched position and the worlds that fill them.

    ``worlds`` > 0 draws at most that many worlds and then picks among them
    uniformly: an exact posterior draw costs about as much as a playout, and the
    posterior does not change during one search. 0 draws afresh every time.
    """

    def __init__(
        self,
        state: GameState,
        sample: WorldSampler,
        rng: random.Random,
        worlds: int,
        splits: SplitSampler | None = None,
    ) -> None:
        self.sheep = state.sheep
        self.splits = splits
        self.hidden = [c for cells in state.stacks for c in cells if self.sheep[c] == UNKNOWN]
        self.sample = sample
        self.worlds = worlds
        self.pool = [sample(rng) for _ in range(min(worlds, 16) if worlds else 16)]
        # Hidden stacks that hold one sheep in every draw cannot move in any world.
        self.never = {c for c in self.hidden if all(d.get(c, 2) <= 1 for d in self.pool)}
        self.fresh = [] if worlds else self.pool

    def fill(self, rng: random.Random) -> None:
        """Set the hidden counts to the next world."""
        worlds, pool = self.worlds, self.pool
        if not worlds:
            world = self.fresh.pop() if self.fresh else self.sample(rng)
        elif len(pool) < worlds:
            world = self.sample(rng)
            pool.append(world)
        else:
            world = pool[rng.randrange(worlds)]
        sheep = self.sheep
        for c in self.hidden:
            # The sampler covers every hidden stack; 1 is never impossible.
            sheep[c] = world.get(c, 1)

    def clear(self) -> None:
        for c in self.hidden:
            self.sheep[c] = UNKNOWN


class Mcts:
    """A search tree kept across turns of one game."""

    def __init__(self, params: MctsParams, rng: random.Random) -> None:
        self.params = params
        self.rng = rng
        self.policy = params.playout_policy()
        self.kernel = params.playout_kernel()
        self.root: Node | None = None
        # Seats whose slides get one split in the tree (``strategies.opponents``).
        self.split_rules: dict[int, str] = {}
        self.iterations = 0
        self.nodes = 0
        self.max_depth = 0
        self.reused = 0
        # The root slide sequential halving chose (``halving``), or None: the most visited.
        self.chosen: Edge | None = None
        # The last compiled search's MAST tables (``mast_carry``): (value sums, visits).
        self.mast: tuple[np.ndarray, np.ndarray] | None = None

    # --------------------------------------------------------------------- root
    def set_root(self, state: GameState) -> None:
        """Make the node matching ``state`` the root: the old root or a descendant of
        it (our move and the others' replies) if the tree holds it, else a new node.
        The compiled tree keeps nothing between searches: always a new node."""
        keep = self.root is not None and self.params.tree == "python"
        found = find_node(self.root, state) if keep and self.root is not None else None
        self.reused = found.n if found is not None else 0
        self.chosen = None
        self.root = found if found is not None else Node(state.to_move, state.hash)

    def expand_root(self, state: GameState) -> None:
        """Give the root its edges now (before priors or restrictions), if it has none."""
        assert self.root is not None
        if self.root.edges is None:
            expand(self.root, state, self.params.prior_temperature, None, self.params.prior_weights)

    def set_root_priors(self, priors: dict[tuple[int, int], float], weight: float) -> None:
        """Blend outside knowledge (e.g. alpha-beta's root values) into the root priors."""
        root = self.root
        if root is None or not root.edges or not priors:
            return
        for e in root.edges:
            e.prior = (1 - weight) * e.prior + weight * priors.get((e.cell, e.direction), 0.0)

    def restrict_root(self, allowed: set[tuple[int, int]]) -> None:
        """Keep only the root slides (cell, direction) in ``allowed`` (if any of them
        is there), their priors renormalised."""
        root = self.root
        if root is None or not root.edges:
            return
        kept = [e for e in root.edges if (e.cell, e.direction) in allowed]
        if kept:
            total = sum(e.prior for e in kept) or 1.0
            for e in kept:
                e.prior /= total
            root.edges = kept

    # ------------------------------------------------------------------- search
    def search(
        self,
        state: GameState,
        budget: Budget,
        stop_at: float,
        max_iterations: int = 0,
        sample: WorldSampler | None = None,
        worlds: int = 0,
        splits: SplitSampler | None = None,
    ) -> None:
        """Iterate until ``stop_at``, the budget or ``max_iterations``; ``state`` is
        the root position and is left as it was (hidden counts included).

        With ``sample`` (game 3), every iteration first sets the hidden counts of
        ``state`` (``UNKNOWN`` cells) to a world drawn with it (see ``WorldDraws``);
        with ``splits`` as well and ``hidden_split="belief"`` (the default), another
        seat's split in the tree is drawn with it instead of the area guess.
        """
        rng = self.rng
        assert self.root is not None
        self.chosen = None
        self.kernel = self.params.playout_kernel()
        self.policy = self.params.playout_policy(state)
        if self.params.playout_splits and self.split_rules:
            self.policy = self.policy.with_rules(self.split_rules)
        if self.compiled(sample):
            self._search_compiled(state, budget, stop_at, max_iterations, sample)
            return
        draws = None
        if sample is not None:
            belief_splits = splits if self.params.hidden_split == "belief" else None
            draws = WorldDraws(state, sample, rng, worlds, belief_splits)
        me = state.to_move
        monotonic = time.monotonic
        it = 0
        try:
            while True:
                if max_iterations and it >= max_iterations:
                    break
                if monotonic() >= stop_at or budget.expired():
                    break
                if draws is not None:
                    draws.fill(rng)
                self._iterate(state, me, draws)
                it += 1
                if it % 32 == 0:
                    self.offer(budget)
        finally:
            if draws is not None:
                draws.clear()
        self.iterations += it

    def compiled(self, sample: WorldSampler | None = None) -> bool:
        """Whether ``search`` (with ``sample`` or not) runs on the compiled tree now."""
        p = self.params
        return (
            p.tree == "compiled"
            and (sample is None or bool(p.world_trees))
            and p.leaf_playouts == 1
            and self.kernel.name == "fast"
            and compiled_tree_ready()
        )

    def _search_compiled(
        self,
        state: GameState,
        budget: Budget,
        stop_at: float,
        max_iterations: int,
        sample: WorldSampler | None,
    ) -> None:
        """``search`` by the compiled tree (``strategies.kernel.tree``) below the root:
        chunks of ``COMPILED_CHUNK`` iterations between looks at the clock, the root's
        statistics written back (and the best move offered) every few chunks.

        With ``sample`` (game 3), ``world_trees`` worlds drawn with it, each searched
        by its own tree as a game of known counts (another seat splits as it would
        knowing its counts, as in game 1), the chunks taken in turn and the root
        statistics summed: a slide's value is its average over those worlds.

        With ``halving`` (one tree), PUCT at the root for ``halving_start`` of the time
        (or of ``max_iterations``), then ``_halve`` for the rest."""
        from strategies.kernel.tree import sync_roots

        root = self.root
        assert root is not None
        if root.edges is None:
            rule = self.split_rules.get(root.to_move)
            p = self.params
            expand(root, state, p.prior_temperature, RULES[rule] if rule else None, p.prior_weights)
        if not root.edges:
            return  # nothing to choose: the caller passes or the game is over
        trees = self.compiled_trees(state, sample)
        p = self.params
        halving = p.halving if len(trees) == 1 and len(root.edges) > 2 else 0
        puct_stop, puct_its = stop_at, max_iterations
        if halving:
            puct_stop = time.monotonic() + (stop_at - time.monotonic()) * p.halving_start
            puct_its = max(1, int(max_iterations * p.halving_start)) if max_iterations else 0
        it = chunks = 0
        more = True
        while not (puct_its and it >= puct_its):
            if time.monotonic() >= puct_stop or budget.expired():
                break
            want = min(COMPILED_CHUNK, puct_its - it) if puct_its else COMPILED_CHUNK
            tree = trees[chunks % len(trees)]
            got, more = self._chunk(tree, want, stop_at)
            it += got
            if not more:
                break
            chunks += 1
            if chunks % COMPILED_OFFER_CHUNKS == 0:
                sync_roots(root, trees)
                self.offer(budget)
        if halving and more:
            it += self._halve(trees[0], budget, stop_at, max_iterations - it, halving)
        sync_roots(root, trees)
        if self.params.mast_carry:
            self.mast = (trees[0].mast_w, trees[0].mast_n) if len(trees) == 1 else None
        self.iterations += it
        self.nodes += sum(t.expanded for t in trees)
        self.max_depth = max(self.max_depth, *(t.depth for t in trees))

    def _chunk(self, tree: CompiledTree, want: int, stop_at: float) -> tuple[int, bool]:
        """Up to ``want`` iterations of ``tree``: the number done, and whether the search
        can go on (a full tree grows, a copy of its arrays, unless the end is too near)."""
        got = tree.run(want)
        if got < want and (stop_at - time.monotonic() < GROW_TIME or not tree.grow()):
            return got, False
        return got, True

    def _halve(
        self, tree: CompiledTree, budget: Budget, stop_at: float, iterations: int, keep: int
    ) -> int:
        """Sequential halving at the root (``halving``): the ``keep`` most visited root
        slides share the time to ``stop_at`` (or ``iterations``, when above 0) in
        ceil(log2(keep)) equal phases, every slide alive taking ``COMPILED_CHUNK``
        iterations in turn, the better half by mean reward kept after each phase; the
        last one alive (or the best when the time runs out) is ``chosen``. The iterations
        done."""
        root = self.root
        assert root is not None and root.edges is not None
        edges = root.edges
        tree.sync_root()
        ranked = sorted(range(len(edges)), key=lambda j: (edges[j].n, edges[j].prior))
        alive = ranked[::-1][:keep]
        phases = max(1, math.ceil(math.log2(len(alive))))
        start = time.monotonic()
        span = stop_at - start
        it = 0
        more = True
        for phase in range(1, phases + 1):
            end = start + span * phase / phases
            quota = iterations * phase // phases
            while more and time.monotonic() < end and not budget.expired():
                if iterations > 0 and it >= quota:
                    break
                for j in alive:
                    want = min(COMPILED_CHUNK, quota - it) if iterations > 0 else COMPILED_CHUNK
                    if want <= 0:
                        break
                    tree.force(j)
                    got, more = self._chunk(tree, want, stop_at)
                    it += got
                    if not more or time.monotonic() >= stop_at:
                        break
            tree.force(-1)
            tree.sync_root()
            alive.sort(key=lambda j: edges[j].value(0.0) if edges[j].n else 0.0, reverse=True)
            alive = alive[: (len(alive) + 1) // 2] if phase < phases else alive[:1]
            self.chosen = edges[alive[0]]
            self.offer(budget)
        return it

    def compiled_trees(self, state: GameState, sample: WorldSampler | None) -> list[CompiledTree]:
        """The compiled trees of a search from ``state`` below the expanded root: one,
        or with ``sample`` one for each of ``world_trees`` fresh draws, ``state``'s
        hidden counts set to the draw while its tree copies the position."""
        from strategies.kernel.tree import START_EDGES, CompiledTree

        p, rng, rules, policy = self.params, self.rng, self.split_rules, self.policy
        root = self.root
        assert root is not None
        if sample is None:
            tree = CompiledTree(state, root, p, policy, rules, rng.getrandbits(64))
            if p.mast_carry and self.mast is not None:
                tree.carry_mast(*self.mast, p.mast_carry)
            return [tree]
        draws = WorldDraws(state, sample, rng, 0)  # a fresh draw for each tree
        rows = max(START_EDGES // p.world_trees, 1 << 14)
        trees = []
        try:
            for _ in range(p.world_trees):
                draws.fill(rng)
                seed = rng.getrandbits(64)
                trees.append(CompiledTree(state, root, p, policy, rules, seed, rows))
        finally:
            draws.clear()
        return trees

    def _iterate(self, state: GameState, me: int, draws: WorldDraws | None) -> None:
        """One iteration: descend, play out (a copy), back up, undo the descent."""
        assert self.root is not None
        trail, applied, finished = self._descend(state, me, draws)
        depth = len(trail)
        if depth > self.max_depth:
            self.max_depth = depth
        r = rewards(state, self.params.margin) if finished else self._playouts(state)
        if self.params.paranoia:
            r = paranoid_rewards(state.setting, r, me, self.params.paranoia)
        for _ in range(applied):
            state.undo()
        backup(self.root, trail, r)

    def _playouts(self, state: GameState) -> list[float]:
        """The mean rewards of ``leaf_playouts`` playouts of ``state`` (left as it is)."""
        p = self.params
        setting, policy, rng, play = state.setting, self.policy, self.rng, self.kernel.scores
        r = score_rewards(setting, play(state, policy, rng), p.margin)
        k = p.leaf_playouts
        if k > 1:
            for _ in range(k - 1):
                more = score_rewards(setting, play(state, policy, rng), p.margin)
                r = [a + b for a, b in zip(r, more, strict=True)]
            r = [a / k for a in r]
        return r

    def _descend(
        self, state: GameState, me: int, draws: WorldDraws | None
    ) -> tuple[Trail, int, bool]:
        """The tree policy from the root, applied to ``state``, down to a new node.
        Returns the path, the plies applied and whether the game is over there.

        With ``draws`` (game 3), another seat's node offers the slides of the
        current world, its split is a draw of ``draws.splits`` (the world's area guess
        without one) and edges count the selections they were available in; ``me``'s
        nodes are as without."""
        p = self.params
        c_puct, by_availability = p.c_puct, draws is not None
        c_other = p.other_c_puct
        fpu, fpu_other = p.fpu, p.fpu_other
        hidden_splits = draws.splits if draws is not None else None
        rules = self.split_rules
        depth_cap = p.tree_depth
        sheep = state.sheep
        node = self.root
        assert node is not None
        trail: Trail = []
        applied = 0
        while True:
            if node.edges is None:
                mine = node.to_move == me
                temperature = p.prior_temperature_at(mine)
                weights = p.prior_weights_at(mine)
                if draws is None or mine:
                    rule = rules.get(node.to_move)
                    expand(node, state, temperature, RULES[rule] if rule else None, weights)
                else:
                    expand_open(node, state, draws.never, temperature, weights)
                self.nodes += 1
                return trail, applied, draws is None and node.terminal
            mover = node.to_move
            hidden = by_availability and mover != me
            avail = [e for e in node.edges if sheep[e.cell] >= 2] if hidden else node.edges
            if not avail:
                # Game over, or the seat to move has no slide: it passes.
                if node.terminal if draws is None else state.is_terminal():
                    return trail, applied, True
                state.skip_turn()
                applied += 1
                child = node.pass_child
                if child is None:
                    if depth_cap and len(trail) >= depth_cap:
                        return trail, applied, False  # at the cap: played out from here
                    child = node.pass_child = Node(state.to_move, state.hash)
                    trail.append((None, child, mover))
                    return trail, applied, False
                trail.append((None, child, mover))
                node = child
                continue
            mine = mover == me
            e = select_edge(
                node,
                avail,
                c_puct if mine else c_other,
                fpu if mine else fpu_other,
                by_availability,
                p.split_value,
            )
            if hidden:
                s = e.splits[0]
                if hidden_splits is None:
                    split = area_split(state, e.cell, e.dst)
                else:
                    split = hidden_splits(mover, sheep[e.cell], self.rng)
            else:
                s = choose_split(e, p.c_split, p.pw_base, p.pw_c, p.pw_alpha)
                split = s.split
            state.slide(e.cell, e.dst, split)
            applied += 1
            trail.append((e, s, mover))
            if s.child is None:
                if depth_cap and len(trail) >= depth_cap:
                    return trail, applied, False  # at the cap: played out from here
                s.child = Node(state.to_move, state.hash)
                return trail, applied, False
            node = s.child

    # ------------------------------------------------------------------ results
    def best(self) -> Move | None:
        """The most visited root slide (or the one sequential halving chose) with its most
        visited split."""
        root = self.root
        if root is None or not root.edges:
            return None
        e = self.chosen
        if e is None:
            e = max(root.edges, key=lambda e: (e.n, e.prior))
        s = max(e.splits, key=lambda s: (s.n, s.w))
        return Move(e.cell, s.split, e.direction)

    def offer(self, budget: Budget) -> None:
        move = self.best()
        if move is not None:
            budget.offer_move(move)
