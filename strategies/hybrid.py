"""``hybrid``: the main strategy. Alpha-beta where it is sharp, feeding MCTS.

One deadline, in this order:

1. Endgame: when few sheep are left on stacks of two or more (walled-in ones too),
   a paranoid alpha-beta to the end of the game; a solved position is played at once
   (or, with ``endgame_play=first``, only one that proves first place).
2. Tactics near the root: best-reply alpha-beta (iterative deepening, transposition
   table, move ordering) for ``ab_fraction`` of the time; its root values become
   priors of the MCTS root and may prune clearly losing root slides.
3. MCTS (progressive widening of splits, priors, max^n rewards, epsilon-greedy
   playouts with uniformly random splits, tree reuse between turns) for the rest;
   the most visited move wins.

Game 3: a belief over the hidden counts (``state.belief``, fed by ``observe``);
steps 1-3 in the one world of its mean counts (``Belief.mean_world``), or with
``hidden=belief`` one MCTS tree over its worlds (``Mcts.search`` with a world
sampler) instead; with ``endgame_trust`` > 0 (not the default) step 1 only where
the belief takes every other seat that can still move for a half splitter. Before
the endgame, step 3 searches beside the mean world a hedge world (``hedge_model``,
``Belief.hedge_counts``: the seats that may split 1, half or all but one at their
means under that model alone), a compiled tree each, merged at the root; with
``likely_worlds`` > 1 (not the default), where the sources of the other seats' moves
are in doubt, the worlds of their likeliest explanations instead. With workers
those worlds are shared out between the processes (``_share_worlds``).
Game 4: the rewards are the pair's, the partner maximises with us in alpha-beta
(paranoid), priors dislike taking the partner's room, and placement keeps away from
the partner.

``ab_fraction=0`` is MCTS alone, ``ab_fraction=1`` alpha-beta alone (the ablation in
the README's Strategies section). The default is 0: against three ``uct`` at 0.2 s
per move (40 games each) MCTS alone scored 3.55 points per game, with 20% alpha-beta
3.48, alpha-beta alone 2.35. The endgame solver stays on: it only decides a move when
the paranoid search proves the result.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Literal

from pydantic import Field, field_validator

from state.belief import (
    Belief,
    LeaningSplits,
    Shares,
    SplitMixture,
    SplitPrior,
    ValuedSplits,
    world_sampler,
)
from state.game import GameState, Move
from state.observe import Action, IngestReport
from state.settings import GameSetting
from strategies.alphabeta import AlphaBeta
from strategies.base import Budget, Strategy, StrategyParams, listed
from strategies.common import (
    EvalWeights,
    area_split,
    determinize,
    only_move,
    score_rewards,
    slide_key,
)
from strategies.kernel import PlayoutPolicy, ready_kernel, warm_up
from strategies.mcts import Mcts, MctsParams, in_turn
from strategies.mcts_tree import softmax
from strategies.opponents import OpponentModel
from strategies.parallel import SearchPool, merged_best, root_stats, worker_count
from strategies.placement import choose_placement

log = logging.getLogger(__name__)

FINISH = 0.003
"""Seconds before the budget's deadline at which the search stops, to pick its move and
return it before the client has to take the posted one (the client's margin covers
the way to the server, ``client.clock``)."""


ADAPTIVE_SPLITS = (("half", 0.5), ("three", 0.25), ("uniform", 0.25))
"""The split models of ``split_prior="adaptive"`` with their prior weights. ``leaning``
in the place of ``three`` gave a slightly smaller belief error on ``flatmc`` and
``uct`` and no gain in points (docs/strength.md): not adopted."""

LEANING_SHARES = {
    -2: (0.69, 0.15, 0.15),
    -1: (0.43, 0.37, 0.19),
    0: (0.19, 0.53, 0.28),
    1: (0.15, 0.32, 0.53),
    2: (0.06, 0.11, 0.83),
}
"""Shares of the splits (1, half, all but one) by ``state.belief.split_lean``, counted on
1,039 moves of four ``flatmc`` seats off stacks of 4 or more (34 game-1 games at 0.2 s
per move), each plus one: the more room the destination has, the more sheep go there."""
LEANING_MARGINAL = (0.21, 0.44, 0.35)
"""The same moves' shares whatever the lean (the tree's draws: it reads no lean)."""


def split_prior(kind: str, max_count: int, valued: bool = False) -> SplitPrior | SplitMixture:
    """The prior over other seats' split sizes (game 3).

    ``half``: fitted to players that split in half (the course's reference agent and
    samples, ``uct``, ``seedlike``, ``greedy``); ``mixed``: as many half splits as
    uniformly random ones (random players, playouts); ``three``: 1, half or all but
    one alike (as ``flatmc`` chooses); ``leaning``: those three, with the shares
    value-choosing players give them by where the room is (``LEANING_SHARES``);
    ``uniform``: no knowledge; ``adaptive``: each seat weighs the models of
    ``ADAPTIVE_SPLITS`` by what it was seen to do (``state.belief.SplitMixture``).
    ``valued``: the ``three`` model (alone or in ``adaptive``) takes each move's shares
    of the three sizes where it is given them (``state.belief.ValuedSplits``, the main
    strategy's ``split_search``).
    """
    if kind == "adaptive":
        models = tuple(
            (name, w, _split_model(name, max_count, valued)) for name, w in ADAPTIVE_SPLITS
        )
        return SplitMixture(models)
    return _split_model(kind, max_count, valued)


def _split_model(kind: str, max_count: int, valued: bool = False) -> SplitPrior:
    if kind == "three" and valued:
        return ValuedSplits(_split_model(kind, max_count))
    if kind == "uniform":
        return SplitPrior.uniform(max_count)
    if kind == "leaning":
        return LeaningSplits(LEANING_SHARES, LEANING_MARGINAL, max_count)
    sizes = range(2, max_count + 1)
    if kind == "three":
        pairs = [(n, m) for n in sizes for m in {1, n // 2, n - 1} for _ in range(n - 1)]
        return SplitPrior.fit(pairs, max_count)
    pairs = [(n, n // 2) for n in sizes for _ in range(3 * (n - 1))]
    if kind == "mixed":
        pairs += [(n, m) for n in sizes for m in range(1, n) for _ in range(3)]
    return SplitPrior.fit(pairs, max_count)


HedgeModel = Literal["half", "three", "uniform"]
"""A split model of the adaptive prior that a hedge world may follow (``hedge_model``)."""


class HybridParams(StrategyParams, MctsParams):
    time_fraction: float = Field(
        1.0, gt=0, le=1, description="share of the budget to search (1: up to the deadline)"
    )
    max_iterations: int = Field(0, ge=0, description="MCTS iterations per move (0: by time)")
    workers: int = Field(
        0,
        ge=-1,
        description="search processes beside this one in our turn (-1: one per other core)",
    )
    # minimax part
    policy: Literal["brs", "paranoid"] = Field("brs", description="multi-player alpha-beta")
    ab_fraction: float = Field(
        0.0, ge=0, le=1, description="share of the time for alpha-beta (0: measured best)"
    )
    ab_max_depth: int = Field(8, ge=1, description="deepest alpha-beta iteration")
    ab_splits: int = Field(2, ge=1, le=4, description="split sizes per slide in alpha-beta")
    ab_prior_weight: float = Field(0.5, ge=0, le=1, description="alpha-beta share of priors")
    ab_prior_temperature: float = Field(4.0, gt=0, description="softmax temperature (points)")
    ab_prune_margin: float = Field(
        0.0, ge=0, description="drop root slides this far below the best (0: keep all)"
    )
    endgame_sheep: int = Field(
        10,
        ge=0,
        description="sheep left (as endgame_count counts them) that start solving",
    )
    endgame_count: Literal["stacks", "movable"] = Field(
        "stacks",
        description="what endgame_sheep counts: all but one sheep of every stack of two or "
        "more, walled in or not, or only of those that can still move (measured: README)",
    )
    endgame_fraction: float = Field(0.5, ge=0, le=1, description="time share for solving")
    endgame_play: Literal["solved", "first"] = Field(
        "solved",
        description="play the solver's move when it solved the game, or only when that "
        "proves first place, else the search decides in the time left (measured: README)",
    )
    endgame_trust: float = Field(
        0.0,
        ge=0,
        le=1,
        description="game 3: start the solver only when every other seat that can still "
        "move splits in half with at least this posterior weight of the belief's half "
        "model (its proofs hold in the mean world's counts only; 0: always; docs/strength.md, "
        '"Stop 71")',
    )
    # MCTS part: the fields of MctsParams (c_puct, playout, margin...), and
    team_margin: float = Field(
        0.3, ge=0, description="score-margin weight in game 4 (measured: see README)"
    )
    reuse_tree: bool = Field(
        True, description="keep the tree between turns of a game (with tree=python)"
    )
    # game 3
    hidden: Literal["belief", "mean", "median", "uniform"] = Field(
        "mean",
        description="hidden counts: one world of the belief's mean counts searched as game "
        "1, or of its median counts (the least expected error per stack), or a search over "
        "the belief's worlds, or the reference's guess (measured: README)",
    )
    worlds: int = Field(
        64,
        ge=0,
        description="hidden=belief: exact belief draws per search, then reused (0: a new one "
        "each time)",
    )
    opponent_splits: bool = Field(
        False, description="learn other seats' split rules and search only those splits"
    )
    split_prior: Literal["half", "mixed", "uniform", "three", "leaning", "adaptive"] = Field(
        "adaptive", description="prior over other seats' split sizes in the belief"
    )
    belief_hypotheses: int = Field(
        1,
        ge=1,
        le=64,
        description="game 3: ways of explaining which stack each move came from that the "
        "belief keeps (1: the stack of the highest mean; see state.belief.SeatBelief)",
    )
    source_search: int = Field(
        0,
        ge=0,
        le=100_000,
        description="game 3: iterations of a search from the mover's seat, in the belief's "
        "mean world before its move, whose visits weigh which of its stacks moved where "
        "the board leaves it in doubt (0: not modelled, the stack of the highest mean)",
    )
    split_search: int = Field(
        0,
        ge=0,
        le=10_000,
        description="game 3: random playouts of each split size (1, half, all but one) of "
        "another seat's move, in the belief's mean world before it, whose mean rewards to "
        "the mover weigh the size it chose, for seats that split by value (0: not judged)",
    )
    movable_choice: bool = Field(
        False,
        description="game 3: weigh the split models by how likely each move's source was "
        "for a seat choosing any of its slides alike (state.belief.SplitTree.choose)",
    )
    likely_worlds: int = Field(
        1,
        ge=1,
        le=16,
        description="game 3 with hidden=mean and belief_hypotheses > 1: search at most this "
        "many worlds of the likeliest explanations, a compiled tree each, merged at the "
        "root, where they are about as likely (1: the mean world alone; measured: README)",
    )
    likely_ratio: float = Field(
        0.5,
        gt=0,
        le=1,
        description="likely_worlds: the least weight of a searched world against the "
        "likeliest one's",
    )
    hedge_model: tuple[HedgeModel, ...] = Field(
        ("three",),
        description="game 3 with hidden=mean: beside the mean world, for each split model "
        "named, search the world of the other seats' counts were each that may follow that "
        "model of the adaptive prior to follow it alone (Belief.hedge_counts), a compiled "
        "tree each, merged at the root; worlds that are the same are searched once (a "
        "comma-separated list on the command line; none: the mean world alone; docs/strength.md, "
        '"Stop 86" and "Stop 89")',
    )
    hedge_weight: float = Field(
        0.1,
        ge=0,
        le=1,
        description="hedge_model: the least posterior weight of the model for a seat's "
        "counts to follow it in the hedge world (below it, the seat's mean counts)",
    )

    @field_validator("hedge_model", mode="before")
    @classmethod
    def _models_from_text(cls, value: object) -> object:
        """``--param hedge_model=three,uniform`` arrives as one string, and a parameter
        file may name one model alone; ``none`` (or nothing) is no hedge world."""
        value = listed(value)
        if isinstance(value, (list, tuple)):
            if len(set(value)) != len(value):
                raise ValueError(f"hedge_model names a model twice: {', '.join(value)}")
            if list(value) == ["none"]:
                return ()
        return value

    # evaluation
    w_potential: float = Field(1.2, description="value of a cell movable sheep can still take")
    w_waste: float = Field(1.0, description="cost of a sheep stuck on a dead stack")
    w_mobility: float = Field(0.2, description="value of a free slide direction")
    # placement
    placement_time_fraction: float = Field(0.9, ge=0, le=1, description="time for playouts")
    placement_candidates: int = Field(6, ge=1, description="cells checked by playouts")


SOURCE_TEMPER = 0.75
"""``source_odds``: the power of the visits (offline, 0.75 scored the true sources as
well as the raw visits and is less sure where one candidate takes nearly all)."""

SOURCE_TIME = 0.1
"""``source_odds``: seconds at most per search, whatever ``source_search`` asks. The
searches run in ``observe``, on the client's event loop before the turn's search, and
count against the turn's clock (three moves in doubt at most per turn)."""


def source_odds(
    belief: Belief, report: IngestReport, params: HybridParams, rng: random.Random
) -> Callable[[int, Action], dict[int, float] | None]:
    """``Belief.update``'s odds of each candidate source of a move in doubt: a search of
    ``source_search`` iterations (``params``' MCTS) from the mover's seat in the belief's
    mean world just before the move (``report.positions``), each candidate's visits to
    the slide onto the new cell, plus a half, to the power ``SOURCE_TEMPER``. Offline, on
    stop 52's recorded games, the most visited candidate was the true source of 70% of
    ``uct``'s moves in doubt and 74% of ``flatmc``'s, where chance gives 47-49% (docs/strength.md,
    stop 56)."""

    def odds(index: int, action: Action) -> dict[int, float] | None:
        before = report.positions.get(index)
        if before is None:
            return None
        world = belief.mean_world(before)
        mcts = Mcts(params, rng)
        mcts.set_root(world)
        mcts.expand_root(world)
        mcts.search(world, Budget.seconds(SOURCE_TIME), float("inf"), params.source_search)
        root = mcts.root
        visits = {e.cell: e.n for e in root.edges or () if e.dst == action.dst} if root else {}
        return {c: (visits.get(c, 0) + 0.5) ** SOURCE_TEMPER for c in action.cells}

    return odds


SPLIT_SHARPNESS = 25.0
"""``split_shares``: each size's share is exp(this times its mean reward to the mover),
normalised (offline, on stop 52's recorded ``flatmc`` games, 20-40 scored the chosen
sizes best: docs/strength.md, stop 57)."""

SPLIT_TIME = 0.03
"""``split_shares``: seconds at most of playouts per candidate source of a move, whatever
``split_search`` asks (they run in ``observe``, before the turn's search, on its clock)."""


def split_shares(
    belief: Belief, report: IngestReport, params: HybridParams, rng: random.Random
) -> Callable[[int, Action], dict[int, Shares] | None]:
    """``Belief.update``'s shares of the split sizes (1, half, all but one) of another
    seat's move, by candidate source: in the belief's mean world just before the move
    (``report.positions``), ``split_search`` uniformly random playouts of each size
    (dealt in turn, ``SPLIT_TIME`` at most), and each size's mean reward to the mover,
    sharpened by ``SPLIT_SHARPNESS``. A seat that chooses its split by such a value (as
    ``flatmc`` does) is told by it; one that always halves is weighed by the belief's
    other models. Sources of fewer than four sheep in the mean world (no three sizes)
    get none."""
    kernel = ready_kernel(None if params.kernel == "auto" else params.kernel)
    policy = PlayoutPolicy.uniform()

    def shares(index: int, action: Action) -> dict[int, Shares] | None:
        before = report.positions.get(index)
        if before is None:
            return None
        world = belief.mean_world(before)
        seat = action.seat
        out: dict[int, Shares] = {}
        for src in action.cells or (action.cell,):
            n = world.sheep[src]
            if n < 4:
                continue
            sizes = (1, n // 2, n - 1)
            totals = [0.0, 0.0, 0.0]
            runs = 0
            stop_at = time.monotonic() + SPLIT_TIME
            while runs < params.split_search and time.monotonic() < stop_at:
                for i, m in enumerate(sizes):
                    world.slide(src, action.dst, m)
                    scores = kernel.scores(world, policy, rng)
                    world.undo()
                    totals[i] += score_rewards(world.setting, scores, params.margin)[seat - 1]
                runs += 1
            if runs:
                one, half, most = softmax([t / runs for t in totals], 1.0 / SPLIT_SHARPNESS)
                out[src] = (one, half, most)
        return out or None

    return shares


class HybridStrategy(Strategy):
    name = "hybrid"
    Params = HybridParams
    params: HybridParams

    def __init__(self, params: dict[str, object] | None = None) -> None:
        super().__init__(params)
        p = self.params
        if p.kernel != "python":
            warm_up()  # compile the fast kernel while the Python one serves
        self.weights = EvalWeights(p.w_potential, p.w_waste, p.w_mobility)
        self.mcts = self._new_mcts()
        self.belief: Belief | None = None
        self.opponents: OpponentModel | None = None
        workers = worker_count(p.workers)
        self.pool = SearchPool(workers, fast=p.kernel != "python") if workers else None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    @property
    def reward_margin(self) -> float:
        """Game 4's pair result is nearly win-or-lose (4 or 1.5 points), so rank
        rewards barely tell a safe win from a narrow one: the pair's score lead
        weighs more there."""
        if self.setting is not None and self.setting.teams:
            return self.params.team_margin
        return self.params.margin

    def _new_mcts(self) -> Mcts:
        return Mcts(self.params.model_copy(update={"margin": self.reward_margin}), self.rng)

    def new_game(self, setting: GameSetting, seat: int) -> None:
        super().new_game(setting, seat)
        self.mcts = self._new_mcts()
        self.belief = None
        self.opponents = OpponentModel(seat) if self.params.opponent_splits else None
        if self.pool is not None:
            self.pool.new_game(self.mcts.params, self.rng.getrandbits(32))

    def observe(self, state: GameState, report: IngestReport) -> None:
        p = self.params
        if not state.setting.hidden_counts:
            if self.opponents is not None:
                self.opponents.update(state, report.actions)
            return
        if self.belief is None or report.resynced:
            # After a resync the split history is lost: stacks the new belief never
            # saw made are filled with the reference's guess (see ``_sampler``).
            prior = split_prior(p.split_prior, state.setting.sheep, valued=p.split_search > 0)
            self.belief = Belief(
                state.setting,
                self.seat or state.to_move,
                prior=prior,
                hypotheses=p.belief_hypotheses,
                movable_choice=p.movable_choice,
            )
            if report.resynced:
                log.info("belief reset after a resync: %s", report.reason)
                return
        odds = source_odds(self.belief, report, p, self.rng) if p.source_search else None
        shares = split_shares(self.belief, report, p, self.rng) if p.split_search else None
        try:
            self.belief.update(report.actions, state, odds, shares)
        except ValueError as exc:
            # An action the belief cannot place (its history differs from the
            # state's): start again rather than search a wrong posterior.
            log.warning("belief reset: %s", exc)
            self.belief = None

    def place(self, state: GameState, budget: Budget) -> int:
        p = self.params
        return choose_placement(
            state,
            budget,
            self.rng,
            p.placement_time_fraction,
            p.placement_candidates,
            p.playout_kernel(),
            PlayoutPolicy(p.epsilon, p.samples, "area"),
            self.reward_margin,
        )

    def _move_worlds(
        self, state: GameState, budget: Budget, stop_at: float, start: float
    ) -> Move | None:
        """Game 3: one tree over the belief's worlds. No alpha-beta: it would search a
        single world, and a move good in one imagined world is what this avoids."""
        p = self.params
        # Tree nodes below the root hold world-dependent hashes: no reuse.
        mcts = self._new_mcts()
        mcts.set_root(state)
        assert self.belief is not None  # move() searches the worlds only with a belief
        sample = world_sampler(state, self.belief)
        splits = self.belief.draw_split
        mcts.search(state, budget, stop_at, p.max_iterations, sample, p.worlds, splits)
        return self._report_worlds(mcts, budget, start)

    def _move_side_worlds(
        self,
        state: GameState,
        side: list[dict[int, int]],
        budget: Budget,
        stop_at: float,
        start: float,
    ) -> Move | None:
        """Game 3's worlds side by side (``_side_worlds``): each searched by a compiled tree
        of its own as a game of known counts (``world_trees``), the root statistics summed,
        so that a slide's value is its mean over the worlds. A new tree each turn (the
        worlds change as the belief does); no alpha-beta, as in ``_move_worlds``."""
        p = self.params
        update = {"margin": self.reward_margin, "world_trees": len(side)}
        mcts = Mcts(p.model_copy(update=update), self.rng)
        mcts.set_root(state)
        mcts.search(state, budget, stop_at, p.max_iterations, in_turn(side), len(side))
        return self._report_worlds(mcts, budget, start)

    def _report_worlds(self, mcts: Mcts, budget: Budget, start: float) -> Move | None:
        """The search's move (``_best``) and its figures, posted to the budget."""
        move = self._best(mcts, budget)
        budget.info.update(
            {
                "iterations": float(mcts.iterations),
                "nodes": float(mcts.nodes),
                "depth": float(mcts.max_depth),
                "time_used": time.monotonic() - start,
            }
        )
        return move

    def move(self, state: GameState, budget: Budget) -> Move | None:
        """Steps 1-3 of the module docstring, or game 3's search over worlds.

        The garbage collector is the client's business (``client.runner``: no
        automatic full collections, which would stop this thread and the event loop
        for up to 0.2 s on a big tree); this runs in the client's worker thread.
        """
        p = self.params
        start = time.monotonic()
        # A belief exists only in game 3 (``observe``): there the hidden counts are filled.
        if p.hidden == "mean" and self.belief is not None:
            work = self.belief.mean_world(state)
        elif p.hidden == "median" and self.belief is not None:
            work = self.belief.median_world(state)
        else:
            work = determinize(state, state.to_move)
        slides = work.slides()
        if not slides:
            return None
        # A legal move at once: the best slide by the cheap key.
        quick = max(slides, key=lambda s: slide_key(work, s[0], s[2], area_split(work, s[0], s[2])))
        budget.offer_move(Move.from_search((*quick, area_split(work, quick[0], quick[2]))))
        if only_move(work, slides):
            return budget.best_move
        span = max(0.0, budget.remaining() - FINISH) * p.time_fraction
        stop_at = start + span
        budget.info.clear()
        worlds = work is not state and p.hidden == "belief" and self.belief is not None
        side = self._side_worlds(state, work)
        if self.belief is not None and (p.likely_worlds > 1 or p.hedge_model):
            budget.info["worlds"] = float(max(1, len(side)))
        if self.pool is None:
            return self._search(state, work, budget, stop_at, start, worlds, side)
        if worlds:
            self.pool.start(state, stop_at, p.max_iterations, self.belief, p.worlds)
        elif side:
            side = self._share_worlds(work, side, budget, stop_at)
        else:
            self.pool.start(work, stop_at, p.max_iterations, split_rules=self._split_rules())
        try:
            return self._search(state, work, budget, stop_at, start, worlds, side)
        finally:
            self.pool.cancel()  # a move decided early needs the workers no more

    def _side_worlds(self, state: GameState, work: GameState) -> list[dict[int, int]]:
        """Game 3 (``hidden=mean``), the worlds searched side by side: with
        ``likely_worlds`` > 1, the hidden counts of the likeliest explanations of the
        other seats' moves where two or more are about as likely
        (``Belief.likely_worlds``); else with ``hedge_model`` (the default), the mean
        world's counts and each hedge world's (``Belief.hedge_counts``, one a model
        named) that differs from those before it. Otherwise none: the mean world is
        searched alone. None in the endgame either, where the solver plays in the mean
        world."""
        p, belief = self.params, self.belief
        if belief is None or p.hidden != "mean" or self._endgame(work):
            return []
        if p.likely_worlds > 1:
            found = belief.likely_worlds(state, p.likely_worlds, p.likely_ratio)
            if len(found) > 1:
                return [counts for _, counts in found]
        hedges = [belief.hedge_counts(state, m, p.hedge_weight) for m in p.hedge_model]
        if not hedges:
            return []
        side = [{c: work.sheep[c] for c in hedges[0]}]  # ``work`` is the mean world
        for hedge in hedges:
            if hedge not in side:
                side.append(hedge)
        return side if len(side) > 1 else []

    def _share_worlds(
        self, work: GameState, side: list[dict[int, int]], budget: Budget, stop_at: float
    ) -> list[dict[int, int]]:
        """With workers, the worlds side by side are shared out between the processes
        instead of every process searching them all: the k-th worker started takes world
        k + 1 (round and round), and the main search keeps the first world (the mean
        world, with the hedge world beside it) and those no worker took, which it returns.
        With one worker the mean and the hedge world then get a core each, the even share
        the single-core search gives them (stop 86). The figure ``worker_worlds`` is how
        many of the worlds the workers took."""
        assert self.pool is not None
        p = self.params
        given = [work.with_counts(counts) for counts in side[1:] + side[:1]]
        started = self.pool.start(given, stop_at, p.max_iterations, split_rules=self._split_rules())
        if not started:
            return side
        budget.info["worker_worlds"] = float(min(started, len(side)))
        return side[:1] + side[started + 1 :]

    def _endgame(self, work: GameState) -> bool:
        """Whether ``work`` is the endgame solver's (step 1); in game 3 the solver then
        runs only where ``_counts_trusted``."""
        p = self.params
        left = work.spare_sheep(walled_in=p.endgame_count == "stacks")
        return left <= p.endgame_sheep and p.endgame_fraction > 0

    def _counts_trusted(self, work: GameState) -> bool:
        """Game 3: whether every other seat with a stack that can still move in ``work``
        (the mean world) is a half splitter by at least ``endgame_trust`` of the belief's
        weight: the split prior's ``half`` model in ``adaptive``; ``split_prior=half``
        counts as sure of it, the priors without a half model as sure it is not.
        Always true without a belief or with ``endgame_trust=0``."""
        p, belief = self.params, self.belief
        if belief is None or p.endgame_trust <= 0:
            return True
        for seat, seat_belief in belief.seats.items():
            if not work.has_moves(seat):
                continue  # nothing of this seat moves again: its counts decide nothing
            weights = seat_belief.model_weights()
            half = weights.get("half", 1.0 if p.split_prior == "half" else 0.0)
            if half < p.endgame_trust:
                return False
        return True

    def _search(
        self,
        state: GameState,
        work: GameState,
        budget: Budget,
        stop_at: float,
        start: float,
        worlds: bool,
        side: list[dict[int, int]],
    ) -> Move | None:
        """Steps 1-3 (or game 3's search over worlds, or over its worlds side by side) until
        ``stop_at``."""
        if worlds:
            return self._move_worlds(state, budget, stop_at, start)
        if side:
            return self._move_side_worlds(state, side, budget, stop_at, start)
        span = stop_at - start
        solved = self._solve_endgame(work, budget, start, span)
        if solved is not None:
            return solved
        priors, allowed, decided = self._tactics(work, budget, stop_at, start)
        if decided is not None:
            return decided
        return self._move_tree(work, budget, stop_at, start, priors, allowed)

    def _split_rules(self) -> dict[int, str]:
        """The other seats' learned split rules (``opponent_splits``), for the tree."""
        return self.opponents.split_rules() if self.opponents is not None else {}

    def _best(self, mcts: Mcts, budget: Budget) -> Move | None:
        """The move of the search: the main tree's, or with workers the most visited over
        every tree that reported by the deadline (posted to the budget)."""
        reports = self.pool.collect(budget.deadline - FINISH / 3) if self.pool else []
        if reports:
            move = merged_best([root_stats(mcts.root), *(r.stats for r in reports)])
            budget.info["workers"] = float(len(reports))
            budget.info["worker_iterations"] = float(sum(r.iterations for r in reports))
        else:
            move = mcts.best()
        if move is None:
            return budget.best_move
        budget.offer_move(move)
        return move

    def _solve_endgame(
        self, work: GameState, budget: Budget, start: float, span: float
    ) -> Move | None:
        """1. Endgame: when few sheep are left on stacks of two or more (``endgame_count``:
        walled-in stacks too, by default), a paranoid alpha-beta to the end of the game
        for ``endgame_fraction`` of the span; the move if it proved the result (with
        ``endgame_play=first``, only a first place), else None. Neither alternative to
        the defaults gave anything measurable (docs/strength.md, stops 49 and 50)."""
        p = self.params
        if not self._endgame(work):
            return None
        if self.belief is not None:
            # Game 3: the share of the solver's positions where the counts were trusted.
            trusted = self._counts_trusted(work)
            budget.info["solve_trusted"] = float(trusted)
            if not trusted:
                return None
        solver = AlphaBeta("paranoid", self.weights, splits=4)
        r = solver.search(work, budget, start + span * p.endgame_fraction)
        info = budget.info
        info.update({"solve_depth": float(r.depth), "solve_nodes": float(r.nodes)})
        if not r.solved or r.best is None:
            return None
        if p.endgame_play == "first" and not solver.proves_first(r.value):
            info["solved_not_first"] = 1.0
            return None
        info.update({"solved": 1.0, "time_used": time.monotonic() - start})
        budget.offer_move(r.best)
        return r.best

    def _tactics(
        self, work: GameState, budget: Budget, stop_at: float, start: float
    ) -> tuple[dict[tuple[int, int], float], set[tuple[int, int]] | None, Move | None]:
        """2. Tactics near the root: alpha-beta for ``ab_fraction`` of the time. Returns
        the root priors from its values, the root slides it allows (None: all) and its
        move if that decides (alpha-beta alone, or a solved position)."""
        p = self.params
        if p.ab_fraction <= 0:
            return {}, None, None
        # Game 4: best-reply search would leave the partner passive; paranoid
        # lets it maximise the pair's value with us.
        policy = "paranoid" if work.setting.teams else p.policy
        ab = AlphaBeta(policy, self.weights, splits=p.ab_splits)
        ab_stop = time.monotonic() + (stop_at - time.monotonic()) * p.ab_fraction
        r = ab.search(work, budget, ab_stop, max_depth=p.ab_max_depth)
        budget.info.update({"ab_depth": float(r.depth), "ab_nodes": float(r.nodes)})
        if r.best is not None and (p.ab_fraction >= 1 or r.solved):
            budget.info["time_used"] = time.monotonic() - start
            return {}, None, r.best
        if not r.root_values:
            return {}, None, None
        keys = list(r.root_values)
        vals = [r.root_values[k] for k in keys]
        priors = dict(zip(keys, softmax(vals, p.ab_prior_temperature), strict=True))
        allowed = None
        if p.ab_prune_margin > 0:
            top = max(vals)
            allowed = {k for k, v in r.root_values.items() if v >= top - p.ab_prune_margin}
        return priors, allowed, None

    def _move_tree(
        self,
        work: GameState,
        budget: Budget,
        stop_at: float,
        start: float,
        priors: dict[tuple[int, int], float],
        allowed: set[tuple[int, int]] | None,
    ) -> Move | None:
        """3. MCTS for the rest of the time, from the tree kept since the last turn."""
        p = self.params
        mcts = self.mcts if p.reuse_tree else self._new_mcts()
        mcts.split_rules = self._split_rules()
        mcts.iterations = mcts.nodes = mcts.max_depth = 0
        mcts.set_root(work)
        mcts.expand_root(work)
        if priors:
            mcts.set_root_priors(priors, p.ab_prior_weight)
        if allowed is not None:
            mcts.restrict_root(allowed)
        mcts.search(work, budget, stop_at, p.max_iterations)
        move = self._best(mcts, budget)
        budget.info.update(
            {
                "iterations": float(mcts.iterations),
                "nodes": float(mcts.nodes),
                "depth": float(mcts.max_depth),
                "reused": float(mcts.reused),
                "time_used": time.monotonic() - start,
            }
        )
        return move
