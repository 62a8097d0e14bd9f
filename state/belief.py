"""What a game-3 player can know about the sheep counts it is not shown.

Every stack of another seat descends from its placement cell by splits: the
placement holds all of the seat's sheep, and each of its moves took ``m`` sheep
off one stack onto a new cell. So the hidden counts are fixed by the unknown
split sizes of the seat's moves, and the facts of the game constrain them:

- every stack keeps at least one sheep, and a seat's stacks sum to its total
  (both hold by construction of the split tree);
- a move's source held at least two sheep and lost exactly what the new cell
  holds (also by construction);
- a seat that made no move while some of its stacks had an open direction had
  no legal move, so those stacks held exactly one sheep. A seat that was late
  or illegal also adds no cell, so this is strong evidence, not certainty: a
  stack holding more than one is ``timeout_odds`` times less likely.

With a prior over split sizes (uniform, or learned from recorded games) the
posterior over each seat's split tree is computed exactly by one pass of
dynamic programming up the tree (``f`` below), and exact joint samples are
drawn by walking down it. Where the constraints decide a count, every sample
agrees on it.

Seats differ in how they split (in half, one sheep off, anything), so the prior
may be a ``SplitMixture``: several split models with prior weights. The same pass
gives each model's likelihood of everything the seat was seen to do (the root's
``f``), so each seat's models are weighed by Bayes' rule on its own evidence, and
a draw first picks a model by that posterior, then the counts under it. With
little evidence the draws follow the prior weights.

A split model may also lean on the board: players that choose their split by its
value send more sheep to the stack with more room (``LeaningSplits``). Each move
records its ``split_lean`` (which of its two stacks had more open directions on the
board the move was seen on), and such a model's probabilities for that move are
those of its lean.
"""

from __future__ import annotations

import copy
import math
import random
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import accumulate, product
from typing import TypeVar

from state.game import UNKNOWN, GameState
from state.geometry import DIRECTION_KEYS, free_dirs
from state.observe import Action
from state.settings import PLAYERS, GameSetting

E = TypeVar("E")  # a stack's estimate of its count: a mean, or a distribution


class SplitPrior:
    """P(split = m | the stack holds n), for 2 <= n <= max_count."""

    def __init__(self, table: list[list[float]]) -> None:
        self.table = table
        self.max_count = len(table) - 1

    @classmethod
    def uniform(cls, max_count: int) -> SplitPrior:
        table = [[0.0] * (max_count + 1) for _ in range(max_count + 1)]
        for n in range(2, max_count + 1):
            for m in range(1, n):
                table[n][m] = 1.0 / (n - 1)
        return cls(table)

    @classmethod
    def fit(
        cls, observed: Iterable[tuple[int, int]], max_count: int, pseudo: float = 0.5
    ) -> SplitPrior:
        """Learn from observed (stack size, split) pairs, smoothed towards uniform.

        Data are thin per stack size, so counts are pooled by the split's
        fraction of the stack (ten bins) and shared across sizes.
        """
        bins = [pseudo] * 10
        for n, m in observed:
            if 1 <= m < n:
                bins[min(9, int(10 * (m - 0.5) / (n - 1)))] += 1.0
        table = [[0.0] * (max_count + 1) for _ in range(max_count + 1)]
        for n in range(2, max_count + 1):
            weights = [bins[min(9, int(10 * (m - 0.5) / (n - 1)))] for m in range(1, n)]
            total = sum(weights)
            for m, w in enumerate(weights, start=1):
                table[n][m] = w / total
        return cls(table)

    def for_lean(self, lean: int) -> list[list[float]]:
        """The table for a move of the given ``split_lean``: the same for every lean."""
        return self.table


LEANS = (-2, -1, 0, 1, 2)
"""The values of ``split_lean``: the source has much more room (-2) ... the
destination has much more (2)."""


def split_lean(state: GameState, src: int, dst: int) -> int:
    """Which stack of a move from ``src`` onto ``dst`` has more room on ``state`` (both
    cells taken): twice the log ratio of their open slide directions, each plus one,
    rounded and clamped to ``LEANS``."""
    open_src = sum(1 for d in DIRECTION_KEYS if state.destination(src, d) >= 0)
    open_dst = sum(1 for d in DIRECTION_KEYS if state.destination(dst, d) >= 0)
    lean = round(2.0 * math.log((open_dst + 1) / (open_src + 1)))
    return max(LEANS[0], min(LEANS[-1], lean))


class LeaningSplits(SplitPrior):
    """Splits of 1, half or all but one sheep, as value-choosing players make them,
    with shares that depend on the move's ``split_lean``.

    ``shares`` maps each lean to the shares of (1, half, all but one); ``spread`` of the
    mass goes to every size alike, so that no split is ruled out. ``table`` (for draws
    with no board to read, the tree's) uses the ``marginal`` shares.
    """

    def __init__(
        self,
        shares: Mapping[int, tuple[float, float, float]],
        marginal: tuple[float, float, float],
        max_count: int,
        spread: float = 0.05,
    ) -> None:
        if set(shares) != set(LEANS):
            raise ValueError(f"leaning split shares need the leans {LEANS}, got {sorted(shares)}")
        self.by_lean = {lean: _three_sizes(s, max_count, spread) for lean, s in shares.items()}
        super().__init__(_three_sizes(marginal, max_count, spread))

    def for_lean(self, lean: int) -> list[list[float]]:
        return self.by_lean[lean]


def _three_sizes(
    shares: tuple[float, float, float], max_count: int, spread: float
) -> list[list[float]]:
    """P(split = m | n sheep): ``shares`` of (1, n // 2, n - 1), normalised, on top of
    ``spread`` shared by every size."""
    if min(shares) < 0 or sum(shares) <= 0:
        raise ValueError(f"split shares must be >= 0 and not all 0, got {shares}")
    total = sum(shares)
    table = [[0.0] * (max_count + 1) for _ in range(max_count + 1)]
    for n in range(2, max_count + 1):
        row = table[n]
        for m in range(1, n):
            row[m] = spread / (n - 1)
        for m, share in zip((1, n // 2, n - 1), shares, strict=True):
            row[m] += (1.0 - spread) * share / total
    return table


Shares = tuple[float, float, float]
"""How likely a model of the mover makes the split sizes (1, half, all but one) of
one move, each share of their sum (``SplitTree.move``'s ``shares``)."""


class ValuedSplits(SplitPrior):
    """Splits of 1, half or all but one sheep, as players that choose their move by its
    value make them, with each move's shares given by a judge of those three moves' worth
    to the mover (the main strategy's ``split_search``: playouts of each size from the
    position before the move). ``spread`` of the mass goes to every size alike. A move
    without shares takes ``base``'s table (the model this one refines)."""

    def __init__(self, base: SplitPrior, spread: float = 0.05) -> None:
        super().__init__(base.table)
        self.spread = spread

    def for_shares(self, shares: Shares) -> list[list[float]]:
        return _three_sizes(shares, self.max_count, self.spread)


@dataclass(frozen=True)
class SplitMixture:
    """Split models a seat may follow: (name, prior weight, model) each."""

    components: tuple[tuple[str, float, SplitPrior], ...]

    def __post_init__(self) -> None:
        if not self.components:
            raise ValueError("a split mixture needs at least one model")
        if any(w <= 0 for _, w, _ in self.components):
            raise ValueError("the prior weights of a split mixture must be positive")


def as_mixture(prior: SplitPrior | SplitMixture) -> SplitMixture:
    """A single prior as the mixture of that one model."""
    if isinstance(prior, SplitMixture):
        return prior
    return SplitMixture((("prior", 1.0, prior),))


@dataclass
class _Node:
    cell: int
    lean: int = 0  # the split_lean of the move that made this stack
    # The shares of the sizes (1, half, all but one) of the move that made this stack,
    # as a judge of their worth gave them (``ValuedSplits``), and their table.
    shares: Shares | None = None
    valued: list[list[float]] | None = None
    parent: int = -1  # the node of the stack it was split off (-1: the placement)
    # In time order: a child node index (a split that made that stack) or -1
    # (the evidence that this stack then held exactly one sheep).
    events: list[int] = field(default_factory=list)
    # f[k][j][r]: under split model k, the probability of all evidence from event
    # j on (this stack's later events and the subtrees they create) given r sheep
    # before event j. Replaced, never changed in place: forked trees share it.
    f: list[list[list[float]]] = field(default_factory=list)


class SplitTree:
    """One explanation of a seat's moves: its split tree (each move's source known) and
    the posterior over its counts. ``SeatBelief`` weighs several of them."""

    def __init__(self, total: int, prior: SplitPrior | SplitMixture, timeout_odds: float) -> None:
        self.total = total
        self.mixture = as_mixture(prior)
        self.tables = [model.table for _, _, model in self.mixture.components]
        # Per model, the table of each lean (the same table for models that do not lean).
        self.lean_tables = [
            {lean: model.for_lean(lean) for lean in LEANS}
            for _, _, model in self.mixture.components
        ]
        # Per model, the model itself if it reads a move's shares (``ValuedSplits``; one
        # at most, as each node keeps one table of its shares).
        self.valued = [
            model if isinstance(model, ValuedSplits) else None
            for _, _, model in self.mixture.components
        ]
        if sum(model is not None for model in self.valued) > 1:
            raise ValueError("a split mixture may hold one valued split model, not more")
        # Each model's split sizes 1..n-1 off a stack of n as cumulative weights, for
        # ``draw_split`` (called on every other seat's slide in game 3's tree).
        self._cumulative = [
            [list(accumulate(row[1:n])) for n, row in enumerate(table)] for table in self.tables
        ]
        self.timeout_odds = timeout_odds
        self.nodes: list[_Node] = []
        self.node_of: dict[int, int] = {}
        self._dirty: set[int] = set()  # nodes whose f is out of date (with their ancestors)
        # Per split model, ``_final``'s walk until a node changes: ``choose`` and ``means``
        # both read it, and ``choose`` changes only the models' weights, not the walk.
        self._finals: dict[int, list[list[float]]] = {}
        self._posterior: list[float] = []  # each model's weight, set by _solve
        self.evidence = 0.0  # the likelihood of the seat's moves, set by _solve
        # The probability of the sources this tree took, as a model of the seat's
        # choice of stack gave them (``SeatBelief.move``'s ``odds``; 1 without one).
        self.choice = 1.0
        # Per split model, the probability of the stacks the seat moved from, as a seat
        # choosing any of its slides alike would have chosen them (``choose``; 1 without
        # it): a model under which more stacks could have moved makes each choice less
        # likely.
        self.mobility = [1.0] * len(self.tables)
        self._solved = False

    def place(self, cell: int) -> None:
        self._add_node(cell)

    def _add_node(self, cell: int, parent: int = -1) -> int:
        index = len(self.nodes)
        self.node_of[cell] = index
        self.nodes.append(_Node(cell, parent=parent))
        self._changed(index)
        return index

    def _changed(self, index: int) -> None:
        """Node ``index`` took a stack or an event: its ``f`` (and its ancestors'), every
        model's ``_final`` walk and the solve are out of date."""
        self._dirty.add(index)
        self._finals.clear()
        self._solved = False

    def move(
        self, src: int, dst: int, board: GameState | None = None, shares: Shares | None = None
    ) -> None:
        """Record a move from the stack on ``src`` onto ``dst``. ``board``: where the move
        was seen, for its ``split_lean`` (0 without it). ``shares``: the sizes (1, half,
        all but one) as a judge of their worth to the mover weighs them, for the models
        that read them (``ValuedSplits``)."""
        parent = self.node_of[src]
        child = self._add_node(dst, parent)
        if board is not None:
            self.nodes[child].lean = split_lean(board, src, dst)
        self.nodes[child].shares = shares
        self.nodes[parent].events.append(child)
        self._changed(parent)

    def fork(self) -> SplitTree:
        """A copy to record other moves in: its own stacks and events; the models, and
        each node's solved ``f`` until that node changes, shared."""
        twin = copy.copy(self)
        twin.nodes = [replace(n, events=list(n.events)) for n in self.nodes]
        twin.node_of = dict(self.node_of)
        twin._dirty = set(self._dirty)
        twin._finals = dict(self._finals)
        twin.mobility = list(self.mobility)
        return twin

    def choose(self, src: int, dst: int, room: Mapping[int, int]) -> None:
        """After the move from ``src`` onto ``dst`` is recorded: weigh each split model by
        how likely a seat that picks any of its slides alike would have picked one off
        ``src``: the mean, over the seat's stacks that could move, of ``src``'s slides
        over all of theirs. ``room``: each stack's slides (free directions) on the board;
        a stack other than ``src`` counts where it holds two sheep or more, by its chance
        under the model given the move (each independently).

        Without it, a model that leaves stacks of one sheep (1, half, all but one) is
        penalised for every move off a stack that could have held one, and never
        credited for the stacks that then could not have moved."""
        others = [
            (self.node_of[c], n)
            for c, n in room.items()
            if c not in (src, dst) and n > 0 and c in self.node_of
        ]
        if not others:
            return
        mine = max(1, room.get(src, 1))
        for k in range(len(self.tables)):
            final = self._final(k)
            # The slides of the others that could move: their distribution, stack by stack.
            slides = [1.0]
            for index, n in others:
                p = 1.0 - sum(final[index][:2])
                grown = [q * (1.0 - p) for q in slides] + [0.0] * n
                for total, q in enumerate(slides):
                    grown[total + n] += q * p
                slides = grown
            self.mobility[k] *= sum(q * mine / (mine + t) for t, q in enumerate(slides))
        self._solved = False

    def holds_one(self, cells: Iterable[int]) -> None:
        for cell in cells:
            if cell in self.node_of:
                self.nodes[self.node_of[cell]].events.append(-1)
                self._changed(self.node_of[cell])

    def _node_f(self, node: _Node, k: int) -> list[list[float]]:
        """``node``'s ``f`` under split model ``k`` (its children's already solved)."""
        total, odds = self.total, self.timeout_odds
        nxt = [1.0 if r >= 1 else 0.0 for r in range(total + 1)]
        f = [nxt]
        for event in reversed(node.events):
            if event < 0:
                cur = [v * (1.0 if r == 1 else odds) for r, v in enumerate(nxt)]
            else:
                child = self.nodes[event]
                child_e = child.f[k][0]
                table = self._table(k, child)
                cur = [0.0] * (total + 1)
                for r in range(2, total + 1):
                    row = table[r]
                    cur[r] = sum(row[m] * child_e[m] * nxt[r - m] for m in range(1, r))
            f.append(cur)
            nxt = cur
        f.reverse()
        return f

    def _table(self, k: int, node: _Node) -> list[list[float]]:
        """Model ``k``'s split table for the move that made ``node``: by its shares for a
        model that reads them, else by its lean."""
        model = self.valued[k]
        if model is None or node.shares is None:
            return self.lean_tables[k][node.lean]
        if node.valued is None:
            node.valued = model.for_shares(node.shares)
        return node.valued

    def _solve(self) -> None:
        """Bring ``f`` up to date: the nodes that changed since the last solve and their
        ancestors, leaves first (children are created after their parents)."""
        dirty = self._dirty
        for index in range(len(self.nodes) - 1, -1, -1):
            if index in dirty:
                node = self.nodes[index]
                node.f = [self._node_f(node, k) for k in range(len(self.lean_tables))]
                if node.parent >= 0:
                    dirty.add(node.parent)
        dirty.clear()
        total = self.total
        # Each model's posterior weight: its prior weight times its likelihood of the
        # evidence (the prior weights where the evidence rules out every model).
        prior = [w for _, w, _ in self.mixture.components]
        post = (
            [w * self.nodes[0].f[k][0][total] * self.mobility[k] for k, w in enumerate(prior)]
            if self.nodes
            else prior
        )
        # The probability of everything the seat was seen to do, under this tree.
        self.evidence = sum(post) if self.nodes else 1.0
        if sum(post) <= 0.0:
            post = prior
        norm = sum(post)
        self._posterior = [v / norm for v in post]
        self._solved = True

    def solved(self) -> SplitTree:
        """This tree, its posterior up to date."""
        if not self._solved:
            self._solve()
        return self

    def weight(self) -> float:
        """How likely this explanation of the seat's moves is, up to a constant: the
        evidence of its splits times the probability of its choices of stack."""
        return self.solved().evidence * self.choice

    def model_weights(self) -> dict[str, float]:
        """The posterior weight of each split model given this seat's evidence."""
        self.solved()
        names = [name for name, _, _ in self.mixture.components]
        return dict(zip(names, self._posterior, strict=True))

    def sample(self, rng: random.Random) -> dict[int, int]:
        """One joint draw of every stack's count from the exact posterior: a split
        model by its posterior weight, then the counts under it."""
        if not self.nodes:
            return {}
        k = self._draw_model(rng)
        counts: dict[int, int] = {}
        start = [0] * len(self.nodes)
        start[0] = self.total
        for index, node in enumerate(self.nodes):
            r = start[index]
            for j, event in enumerate(node.events):
                if event < 0:
                    continue
                weights = self._split_weights(k, node, j, r)
                # Where the evidence contradicts the model, keep a legal count.
                possible = sum(weights) > 0.0
                m = rng.choices(range(1, r), weights)[0] if possible else max(1, r // 2)
                start[event] = m
                r -= m
            counts[node.cell] = max(1, r)
        return counts

    def _split_weights(self, k: int, node: _Node, j: int, r: int) -> list[float]:
        """Under model ``k``, the posterior weights of the sizes 1..r-1 of ``node``'s
        split ``j`` (an event that made a child stack) off ``r`` sheep: the prior of
        the size times the evidence below the child and after the split."""
        child = self.nodes[node.events[j]]
        row = self._table(k, child)[r]
        child_e = child.f[k][0]
        after = node.f[k][j + 1]
        return [row[m] * child_e[m] * after[r - m] for m in range(1, r)]

    def draw_split(self, count: int, rng: random.Random) -> int:
        """A split size for this seat's next move off a stack of ``count`` (2 or more): a
        split model by its posterior weight, then a size by that model's prior."""
        k = self._draw_model(rng)
        rows = self._cumulative[k]
        cumulative = rows[count] if count < len(rows) else []
        if not cumulative or cumulative[-1] <= 0.0:
            return max(1, count // 2)
        # As ``random.choices`` draws: the same sizes from the same stream.
        x = rng.random() * cumulative[-1]
        return 1 + bisect_right(cumulative, x, 0, len(cumulative) - 1)

    def _draw_model(self, rng: random.Random) -> int:
        """A split model (its index) drawn by its posterior weight."""
        self.solved()
        models = self._posterior
        return rng.choices(range(len(models)), models)[0] if len(models) > 1 else 0

    def means(self) -> dict[int, float]:
        """Each stack's expected count under the exact posterior: what ``sample`` draws,
        averaged without drawing (``_final`` under each model, by its weight)."""
        if not self.nodes:
            return {}
        self.solved()
        out = dict.fromkeys(self.node_of, 0.0)
        for k, weight in enumerate(self._posterior):
            if weight <= 0.0:
                continue
            for cell, mean in self._model_means(k).items():
                out[cell] += weight * mean
        return out

    def model_means(self, name: str) -> dict[int, float] | None:
        """Each stack's expected count were the seat to follow the split model ``name``
        alone (the posterior given that model: ``means`` takes them by the models'
        weights); None if the mixture has no such model, or if the evidence rules it out."""
        names = [model for model, _, _ in self.mixture.components]
        if name not in names or not self.nodes:
            return None
        k = names.index(name)
        if self.solved()._posterior[k] <= 0.0:
            return None
        return self._model_means(k)

    def _model_means(self, k: int) -> dict[int, float]:
        """Under split model ``k``, each stack's expected count (``_final``)."""
        return {
            node.cell: sum(max(1, r) * p for r, p in enumerate(dist))
            for node, dist in zip(self.nodes, self._final(k), strict=True)
        }

    def marginals(self) -> dict[int, list[float]]:
        """Each stack's distribution of its count under the exact posterior (index r:
        the chance it holds r sheep), the split models mixed by their weights: what
        ``means`` averages. A count of 0 (the evidence contradicts every model) is
        counted as 1, as ``sample`` keeps a legal count."""
        if not self.nodes:
            return {}
        self.solved()
        out = {cell: [0.0] * (self.total + 1) for cell in self.node_of}
        for k, weight in enumerate(self._posterior):
            if weight <= 0.0:
                continue
            for node, dist in zip(self.nodes, self._final(k), strict=True):
                row = out[node.cell]
                for r, p in enumerate(dist):
                    row[max(1, r)] += weight * p
        return out

    def _final(self, k: int) -> list[list[float]]:
        """Under split model ``k``, each node's distribution of the sheep its stack holds
        now, given all the evidence. The walk down the split tree that ``sample`` takes
        carries, instead of one count, the distribution before each event (kept until
        a node changes)."""
        cached = self._finals.get(k)
        if cached is not None:
            return cached
        self.solved()
        total = self.total
        before: list[list[float]] = [[] for _ in self.nodes]
        before[0] = [1.0 if r == total else 0.0 for r in range(total + 1)]
        final: list[list[float]] = [[] for _ in self.nodes]
        for index, node in enumerate(self.nodes):
            dist = before[index]
            for j, event in enumerate(node.events):
                if event < 0:
                    continue
                made = [0.0] * (total + 1)
                left = [0.0] * (total + 1)
                for r, p in enumerate(dist):
                    if p <= 0.0:
                        continue
                    weights = self._split_weights(k, node, j, r)
                    norm = sum(weights)
                    if norm > 0.0:
                        for m, w in enumerate(weights, 1):
                            share = p * w / norm
                            made[m] += share
                            left[r - m] += share
                    else:  # as ``sample``: a legal count where the evidence contradicts
                        m = max(1, r // 2)
                        made[m] += p
                        left[max(0, r - m)] += p
                before[event] = made
                dist = left
            final[index] = dist
        self._finals[k] = final
        return final


class SeatBelief:
    """The belief about one other seat's counts: its split trees, one for each way of
    explaining the sources of its moves that is still likely, weighed by how likely
    each makes everything the seat was seen to do (Bayes' rule, equal priors).

    The board shows where a seat's new stack is, not which of its stacks moved
    there: where two or more of its stacks can reach the new cell, each becomes a
    tree of its own, and the ``hypotheses`` most likely trees are kept. With one (the
    main strategy's default, ``belief_hypotheses``), the stack of the highest mean count
    is taken as the source. More trees know half-splitting seats better and did not
    play measurably better (docs/strength.md, "Which stack moved"). A model of the
    seat's choice of stack (``move``'s ``odds``) orders the candidates instead and
    weighs each tree by the choices it made (``SplitTree.choice``).
    """

    def __init__(
        self,
        total: int,
        prior: SplitPrior | SplitMixture,
        timeout_odds: float,
        hypotheses: int = 1,
    ) -> None:
        if hypotheses < 1:
            raise ValueError(f"a seat's belief keeps at least one hypothesis, not {hypotheses}")
        self.hypotheses = hypotheses
        self.trees = [SplitTree(total, prior, timeout_odds)]

    @property
    def node_of(self) -> dict[int, int]:
        """The seat's known stacks (every tree knows the same cells)."""
        return self.trees[0].node_of

    @property
    def best(self) -> SplitTree:
        """The most likely tree; of trees equally likely (to nine digits), the first: the
        one that took the source of the highest mean where nothing told them apart."""
        return max(self.trees, key=_likelihood)

    def place(self, cell: int) -> None:
        for tree in self.trees:
            tree.place(cell)

    def holds_one(self, cells: Iterable[int]) -> None:
        cells = list(cells)
        for tree in self.trees:
            tree.holds_one(cells)

    def move(
        self,
        sources: Iterable[int],
        dst: int,
        board: GameState | None = None,
        odds: Mapping[int, float] | None = None,
        shares: Mapping[int, Shares] | None = None,
        room: Mapping[int, int] | None = None,
    ) -> int:
        """Record a move onto ``dst`` from one of ``sources``; returns the source in the
        most likely tree. ``board``: where the move was seen (``SplitTree.move``).
        ``odds``: how likely a model of the seat's choices makes each source (any
        scale); the sources are then taken in its order (of equal odds, the highest
        mean first) and each tree's ``choice`` takes the source's share of them.
        ``shares``: by source, the split sizes' shares for the move from there
        (``SplitTree.move``). ``room``: the seat's stacks' slides on the board, for a
        model of its choice among the slides of the stacks that can move
        (``SplitTree.choose``)."""
        candidates = [c for c in sources if c in self.node_of]
        if not candidates:
            raise ValueError(f"no known stack can be the source of the move onto cell {dst}")
        share: dict[int, float] = {}
        if odds is not None and len(candidates) > 1:
            told = {c: max(0.0, odds.get(c, 0.0)) for c in candidates}
            norm = sum(told.values())
            if norm > 0.0:
                share = {c: v / norm for c, v in told.items()}
        grown: list[tuple[SplitTree, int]] = []
        for tree in self.trees:
            ranked = candidates
            if len(candidates) > 1:
                mean = tree.means()
                ranked = sorted(candidates, key=lambda c: (-share.get(c, 0.0), -mean[c]))
            chosen = ranked[: self.hypotheses]
            for k, src in enumerate(chosen):
                twin = tree if k == len(chosen) - 1 else tree.fork()
                twin.move(src, dst, board, shares.get(src) if shares else None)
                if room is not None:
                    twin.choose(src, dst, room)
                if share:
                    twin.choice *= share[src]
                grown.append((twin, src))
        if len(grown) > 1:
            # Stable: of equally likely trees, the older hypothesis and the higher mean first.
            grown.sort(key=lambda pair: -_likelihood(pair[0]))
        self.trees = [tree for tree, _ in grown[: self.hypotheses]]
        return grown[0][1]

    def weights(self) -> list[float]:
        """Each tree's posterior weight (equal where the evidence rules out them all)."""
        evidence = [t.weight() for t in self.trees]
        norm = sum(evidence)
        if norm <= 0.0:
            return [1.0 / len(self.trees)] * len(self.trees)
        return [e / norm for e in evidence]

    def model_weights(self) -> dict[str, float]:
        """The posterior weight of each split model given this seat's evidence."""
        out: dict[str, float] = {}
        for w, tree in zip(self.weights(), self.trees, strict=True):
            for name, v in tree.model_weights().items():
                out[name] = out.get(name, 0.0) + w * v
        return out

    def sample(self, rng: random.Random) -> dict[int, int]:
        """One joint draw of every stack's count: a tree by its weight, then its draw."""
        return self._draw_tree(rng).sample(rng)

    def draw_split(self, count: int, rng: random.Random) -> int:
        """A split size for this seat's next move off a stack of ``count``
        (``SplitTree.draw_split`` of a tree drawn by its weight)."""
        return self._draw_tree(rng).draw_split(count, rng)

    def _draw_tree(self, rng: random.Random) -> SplitTree:
        if len(self.trees) == 1:
            return self.trees[0]
        return rng.choices(self.trees, self.weights())[0]

    def means(self) -> dict[int, float]:
        """Each stack's expected count in the most likely tree (``best``): where the
        sources are in doubt, the trees' weighted means would blur two stacks of 8 and
        4 into two of 6 (docs/strength.md, stop 55)."""
        return self.best.means()

    def marginals(self) -> dict[int, list[float]]:
        """Each stack's count distribution in the most likely tree (as ``means``)."""
        return self.best.marginals()

    def ranked(self) -> list[tuple[float, SplitTree]]:
        """The trees with their posterior weights, the most likely first (ties in the
        order of ``best``)."""
        pairs = zip(self.weights(), self.trees, strict=True)
        return sorted(pairs, key=lambda pair: -_likelihood(pair[1]))


def _likelihood(tree: SplitTree) -> float:
    """A tree's weight (``SplitTree.weight``) to nine significant digits: trees that
    explain a seat's moves equally well tie, whatever the rounding of their sums."""
    return _nine_digits(tree.weight())


def _nine_digits(x: float) -> float:
    """``x`` to nine significant digits, so that equal sums in another order compare equal."""
    return float(f"{x:.9g}")


class Belief:
    """Beliefs about every other seat's hidden counts, fed by ingest reports."""

    def __init__(
        self,
        setting: GameSetting,
        viewer: int,
        prior: SplitPrior | SplitMixture | None = None,
        timeout_odds: float = 0.05,
        hypotheses: int = 1,
        movable_choice: bool = False,
    ) -> None:
        self.setting = setting
        self.viewer = viewer
        # Weigh the split models by a seat's choice among its movable stacks
        # (``SplitTree.choose``); off: by the split sizes alone.
        self.movable_choice = movable_choice
        prior = prior or SplitPrior.uniform(setting.sheep)
        self.seats = {
            p: SeatBelief(setting.sheep, prior, timeout_odds, hypotheses)
            for p in PLAYERS
            if p != viewer
        }

    def update(
        self,
        actions: Iterable[Action],
        board: GameState | None = None,
        odds: Callable[[int, Action], Mapping[int, float] | None] | None = None,
        shares: Callable[[int, Action], Mapping[int, Shares] | None] | None = None,
    ) -> None:
        """Take the actions of an ingest report; ``board``: the state they were seen on
        (the moves' ``split_lean``, for split models that lean). ``odds(i, action)``:
        for a move of more than one candidate source, called before it is recorded
        (the belief then as it was before that move), each source's odds by a model of
        the seat's choices, or None (``SeatBelief.move``); ``i`` its index in
        ``actions``. ``shares(i, action)``: for every move, called after ``odds``, by
        candidate source the shares of its split sizes, or None (``SplitTree.move``)."""
        for i, action in enumerate(actions):
            seat = self.seats.get(action.seat)
            if seat is None:
                continue
            if action.kind == "place":
                seat.place(action.cell)
            elif action.kind == "move":
                sources = action.cells or (action.cell,)
                told = odds(i, action) if odds is not None and len(sources) > 1 else None
                judged = shares(i, action) if shares is not None else None
                room = None
                if self.movable_choice and board is not None:
                    rays = board.geometry.rays
                    room = {c: free_dirs(board.owner, rays[c]) for c in board.stacks[action.seat]}
                seat.move(sources, action.dst, board, told, judged, room)
            else:
                seat.holds_one(action.cells)

    def sample(self, rng: random.Random) -> dict[int, int]:
        counts: dict[int, int] = {}
        for seat in self.seats.values():
            counts.update(seat.sample(rng))
        return counts

    def draw_split(self, seat: int, count: int, rng: random.Random) -> int:
        """A split size for ``seat``'s next move off a stack of ``count``, drawn as its
        belief's split models say (``SeatBelief.draw_split``)."""
        return self.seats[seat].draw_split(count, rng)

    def means(self) -> dict[int, float]:
        """Every other seat's stacks' expected counts (``SeatBelief.means``)."""
        out: dict[int, float] = {}
        for seat in self.seats.values():
            out.update(seat.means())
        return out

    def marginals(self) -> dict[int, list[float]]:
        """Every other seat's stacks' count distributions (``SeatBelief.marginals``)."""
        out: dict[int, list[float]] = {}
        for seat in self.seats.values():
            out.update(seat.marginals())
        return out

    def determinize(self, state: GameState, rng: random.Random) -> GameState:
        """A copy of ``state`` with every hidden count drawn from the posterior."""
        sheep = state.sheep
        counts = {c: n for c, n in self.sample(rng).items() if sheep[c] == UNKNOWN}
        for cell, count in enumerate(sheep):
            if count == UNKNOWN and cell not in counts:  # never seen made (a resync)
                counts[cell] = uniform_guess(state, state.owner[cell])
        return state.with_counts(counts)

    def mean_world(self, state: GameState) -> GameState:
        """A copy of ``state`` with every hidden count set to its posterior mean,
        rounded so that each seat's stacks still hold its total, one sheep at least on
        each (``apportion``): the one world a search can then play in as in game 1
        (``hybrid``'s ``hidden=mean``). Stacks the belief never saw made (after a
        resync) take the reference's guess."""
        return state.with_counts(self.mean_counts(state))

    def hedge_counts(self, state: GameState, model: str, least: float) -> dict[int, int]:
        """The hidden counts of ``state`` were every other seat that may follow the split
        model ``model`` (its posterior weight at least ``least``) to follow it alone:
        such a seat's stacks take their means under that model (``SplitTree.model_means``
        of its likeliest tree), every other seat's their mean counts; made whole as in
        ``mean_world``. With ``mean_world``'s counts, the two worlds ``hybrid``'s
        ``hedge_model`` searches side by side."""
        means: dict[int, float] = {}
        for seat in self.seats.values():
            told = None
            if seat.model_weights().get(model, 0.0) >= least:
                told = seat.best.model_means(model)
            means.update(seat.means() if told is None else told)
        return _whole_counts(state, means, apportion)

    def mean_counts(self, state: GameState) -> dict[int, int]:
        """The hidden counts ``mean_world`` fills in (every seat's stacks: see
        ``_whole_counts``)."""
        return _whole_counts(state, self.means(), apportion)

    def median_world(self, state: GameState) -> GameState:
        """A copy of ``state`` with the hidden counts that are nearest the truth on
        average while each seat's stacks hold its total: the counts that minimise the
        summed expected error |count - truth| under each stack's posterior
        (``median_counts``). Where a stack's posterior has two humps (a seat that
        splits off one sheep or all but one, as ``flatmc`` does, or which of two
        halves moved is in doubt), its mean is neither; the median world takes the
        likelier side (``hybrid``'s ``hidden=median``; measured: docs/strength.md,
        stop 73). Stacks the belief never saw made take the reference's guess, as in
        ``mean_world``."""
        return state.with_counts(_whole_counts(state, self.marginals(), median_counts))

    def likely_worlds(
        self, state: GameState, limit: int, ratio: float
    ) -> list[tuple[float, dict[int, int]]]:
        """The hidden counts of ``state`` in the most likely joint explanations of the
        other seats' moves, with their posterior weights, the likeliest first.

        An explanation takes one split tree per seat (``SeatBelief.ranked``; its weight
        is the product of theirs), and its world the trees' mean counts made whole as
        in ``mean_world``. Explanations whose worlds are the same are one world (their
        weights added). At most ``limit`` worlds, and only those at least ``ratio``
        times as likely as the first: with one tree per seat, the mean world alone.
        """
        if limit < 1:
            raise ValueError(f"likely_worlds needs a limit of at least 1, not {limit}")
        per_seat = [seat.ranked()[:limit] for seat in self.seats.values()]
        joint: list[tuple[float, list[SplitTree]]] = []
        for combo in product(*per_seat):
            weight = math.prod(w for w, _ in combo)
            joint.append((weight, [tree for _, tree in combo]))
        # Stable: of equally likely explanations, the one of the seats' likeliest trees.
        joint.sort(key=lambda pair: -_nine_digits(pair[0]))
        tree_means = {id(t): t.means() for trees in per_seat for _, t in trees}
        worlds: dict[tuple[tuple[int, int], ...], float] = {}
        for weight, trees in joint[:limit]:
            means: dict[int, float] = {}
            for tree in trees:
                means.update(tree_means[id(tree)])
            key = tuple(sorted(_whole_counts(state, means, apportion).items()))
            worlds[key] = worlds.get(key, 0.0) + weight
        ranked = sorted(worlds.items(), key=lambda kv: -kv[1])
        top = ranked[0][1]
        return [(w, dict(key)) for key, w in ranked if w >= ratio * top]


def _whole_counts(
    state: GameState,
    estimates: Mapping[int, E],
    whole: Callable[[list[E], int], list[int]],
) -> dict[int, int]:
    """Every hidden stack's count: its estimate (a mean, or a distribution) made whole
    by ``whole`` (``apportion`` of means, ``median_counts`` of distributions) so that
    each seat's stacks hold its total, one sheep at least on each; stacks without an
    estimate (the belief never saw them made: a resync) take the reference's guess."""
    out: dict[int, int] = {}
    for p in PLAYERS:
        guess = guess_counts(state, p)
        seen = [c for c in guess if c in estimates]
        # The seen stacks share what the guess gives them together (one each at least).
        shares = whole([estimates[c] for c in seen], sum(guess[c] for c in seen))
        guess.update(zip(seen, shares, strict=True))
        out.update(guess)
    return out


def apportion(means: list[float], total: int) -> list[int]:
    """Whole counts near ``means`` that sum to ``total``, each at least 1: the means
    scaled to the total, rounded down, then up on the largest remainders (or, where
    the floor of 1 overshoots, down on the smallest)."""
    if total < len(means):
        raise ValueError(f"{total} sheep cannot give {len(means)} stacks one each")
    if not means:
        return []
    spread = sum(means)
    scaled = [m * total / spread if spread > 0 else total / len(means) for m in means]
    counts = [max(1, math.floor(x)) for x in scaled]
    order = sorted(range(len(means)), key=lambda i: scaled[i] - counts[i], reverse=True)
    while (short := total - sum(counts)) != 0:
        if short > 0:
            for i in order[:short]:
                counts[i] += 1
        else:
            for i in [i for i in reversed(order) if counts[i] > 1][:-short]:
                counts[i] -= 1
    return counts


def median_counts(dists: list[list[float]], total: int) -> list[int]:
    """Whole counts, each at least 1 and summing to ``total``, that minimise the summed
    expected error sum_i E|X_i - c_i| where X_i is distributed as ``dists[i]`` (index
    r: the chance of r). Each term is convex in c_i, so the optimum is found greedily:
    every count starts at its distribution's median (the unconstrained optimum), then
    one sheep at a time goes to the stack most likely to hold more than it is given
    (raising c by one changes E|X - c| by 1 - 2 P(X > c)), or is taken from the stack
    most likely to hold less (1 - 2 P(X < c)), until the counts sum to ``total``."""
    if total < len(dists):
        raise ValueError(f"{total} sheep cannot give {len(dists)} stacks one each")
    if not dists:
        return []
    cdfs: list[list[float]] = []
    for d in dists:
        norm = sum(d)
        cdfs.append(list(accumulate(x / norm for x in d)) if norm > 0 else [])

    def below(i: int, c: int) -> float:  # P(X_i < c), c >= 1
        cdf = cdfs[i]
        return cdf[min(c - 1, len(cdf) - 1)] if cdf else 0.0

    counts = []
    for cdf in cdfs:
        median = next((r for r, f in enumerate(cdf) if f >= 0.5), 1) if cdf else 1
        counts.append(max(1, median))
    while (short := total - sum(counts)) != 0:
        if short > 0:  # the stack most likely to hold more than its count
            i = max(range(len(counts)), key=lambda i: 1.0 - below(i, counts[i] + 1))
            counts[i] += 1
        else:  # the stack most likely to hold less, of those above one sheep
            movable = [i for i in range(len(counts)) if counts[i] > 1]
            i = max(movable, key=lambda i: below(i, counts[i]))
            counts[i] -= 1
    return counts


def _spread(state: GameState, seat: int) -> tuple[list[int], int, int]:
    """The seat's hidden stacks, and the sheep not on its known stacks divided among
    them: (hidden stacks, sheep each, stacks that get one more)."""
    sheep = state.sheep
    cells = state.stacks[seat]
    hidden = [c for c in cells if sheep[c] == UNKNOWN]
    known = sum(sheep[c] for c in cells if sheep[c] != UNKNOWN)
    # Every stack holds at least one sheep.
    rest = max(state.setting.sheep - known, len(hidden))
    base, extra = divmod(rest, max(1, len(hidden)))
    return hidden, max(1, base), extra


def uniform_guess(state: GameState, seat: int) -> int:
    """The published reference's guess for a hidden stack of ``seat``: the sheep not on
    its known stacks over its hidden stacks (the seat's total over its stacks in game 3),
    at least 1. ``guess_counts`` adds the remainder, so that the guesses sum up."""
    return _spread(state, seat)[1]


def guess_counts(state: GameState, seat: int) -> dict[int, int]:
    """The guessed count of each hidden stack of ``seat``: ``uniform_guess``, plus one
    on the first stacks (in the order taken) until the sheep are all accounted for."""
    hidden, base, extra = _spread(state, seat)
    return {c: base + (1 if k < extra else 0) for k, c in enumerate(hidden)}


def world_sampler(state: GameState, belief: Belief) -> Callable[[random.Random], dict[int, int]]:
    """Draws of every hidden count of ``state``: the belief's posterior, and the
    reference's guess (``uniform_guess``) for stacks the belief does not know (after a
    resync)."""
    hidden = [c for cells in state.stacks for c in cells if state.sheep[c] == UNKNOWN]
    guess = {c: uniform_guess(state, state.owner[c]) for c in hidden}

    def draw(rng: random.Random) -> dict[int, int]:
        out = dict(guess)
        out.update(belief.sample(rng))
        return out

    return draw
