"""Yardsticks: ``seedlike`` (the reference agent's algorithm), ``uct`` (what most
competing student agents are) and ``flatmc`` (a simple player that kept up with the
main agent at 1 s per move).

- ``seedlike``: depth-2 alpha-beta (our move, then the next player's reply), one split
  per move (half the stack), leaves scored by short runs of random play about 9
  plies deep, each valued by our connected-area score. The C++ reference runs 90
  simulations per leaf; here the count is scaled to the time per move.
- ``uct``: plain UCT, half-stack splits, uniformly random playouts to the end of the
  game, rank-point rewards backed up max^n style.
- ``flatmc``: flat Monte-Carlo: every slide with three split sizes (1, half, all but
  one) is a candidate; playouts of uniformly random play to the end of the game are
  dealt to the candidates in turn until the time is up, and the best mean reward
  (rank points plus a little score margin, the pair's in game 4) wins. No tree: all
  of its time goes to playouts of the first move, on the playout kernel.
"""

from __future__ import annotations

import math
import time

from pydantic import Field

from state.game import GameState, Move, SearchMove
from state.playout import random_playout
from strategies.base import Budget, Strategy, StrategyParams
from strategies.common import determinize, rewards, score_rewards
from strategies.kernel import PlayoutPolicy, ready_kernel, warm_up


def _most_room_placement(state: GameState, strategy: Strategy, budget: Budget) -> int:
    cell = strategy.rng.choice(state.most_room(state.initial_positions()))
    budget.offer_placement(cell)
    return cell


def _half_slides(state: GameState) -> list[SearchMove]:
    """(cell, direction, dst, split) for every slide, split in half."""
    sheep = state.sheep
    return [(c, d, t, max(1, sheep[c] // 2)) for c, d, t in state.slides()]


# ------------------------------------------------------------------------ seedlike


class SeedlikeParams(StrategyParams):
    simulations: int = Field(
        0, ge=0, description="random runs per leaf; 0 scales the reference's 90 to the time"
    )
    reference_simulations: int = Field(90, ge=1, description="the C++ reference's runs per leaf")
    rollout_plies: int = Field(9, ge=1, description="plies of random play per run")
    time_fraction: float = Field(0.9, gt=0, le=1, description="share of the budget to use")


class SeedlikeStrategy(Strategy):
    """Depth-2 alpha-beta with random-run leaves, like the reference agent."""

    name = "seedlike"
    Params = SeedlikeParams
    params: SeedlikeParams

    def place(self, state: GameState, budget: Budget) -> int:
        return _most_room_placement(state, self, budget)

    def _leaf(self, state: GameState, me: int, sims: int) -> float:
        rng = self.rng
        sheep = state.sheep
        total = 0.0
        depth = self.params.rollout_plies
        for _ in range(sims):
            plies = 0
            for _ in range(depth):
                slides = state.slides()
                if not slides:
                    state.skip_turn()
                else:
                    cell, _d, dst = slides[rng.randrange(len(slides))]
                    state.slide(cell, dst, rng.randint(1, sheep[cell] - 1))
                plies += 1
            total += state.regions.score[me]
            for _ in range(plies):
                state.undo()
        return total / sims

    def _fitting_simulations(self, work: GameState, ours: list[SearchMove], stop_at: float) -> int:
        """Runs per leaf that fit the time to ``stop_at`` (at most the reference's),
        from the time of a few runs after our first move."""
        # Leaves ~ our moves x the next player's replies; scale the runs to fit.
        me = work.to_move
        work.slide(ours[0][0], ours[0][2], ours[0][3])
        n_replies = max(1, len(work.slides()))
        t0 = time.perf_counter()
        self._leaf(work, me, 4)
        per_run = max(1e-5, (time.perf_counter() - t0) / 4)
        work.undo()
        leaves = len(ours) * n_replies
        # Alpha-beta visits fewer leaves than all of them; about half in practice.
        sims = int((stop_at - time.monotonic()) / per_run / (0.5 * leaves))
        return max(1, min(self.params.reference_simulations, sims))

    def move(self, state: GameState, budget: Budget) -> Move | None:
        start = time.monotonic()
        work = determinize(state, state.to_move)
        me = work.to_move
        ours = _half_slides(work)
        if not ours:
            return None
        first = Move.from_search(ours[0])
        budget.offer_move(first)
        p = self.params
        stop_at = start + max(0.0, budget.remaining()) * p.time_fraction
        sims = p.simulations or self._fitting_simulations(work, ours, stop_at)
        best_value = -math.inf
        best = first
        leaves_done = 0
        for mv in ours:
            cell, _direction, dst, split = mv
            if time.monotonic() >= stop_at or budget.expired():
                break
            work.slide(cell, dst, split)
            replies = _half_slides(work)
            value = math.inf
            if not replies:
                work.skip_turn()
                value = self._leaf(work, me, sims)
                leaves_done += 1
                work.undo()
            else:
                for rc, _rd, rdst, rsplit in replies:
                    work.slide(rc, rdst, rsplit)
                    v = self._leaf(work, me, sims)
                    leaves_done += 1
                    work.undo()
                    value = min(value, v)
                    if value <= best_value or budget.expired():
                        break  # alpha cut: the reply already refutes this move
            work.undo()
            if value > best_value and not budget.expired():
                best_value = value
                best = Move.from_search(mv)
                budget.offer_move(best)
        budget.info.update(
            {"leaves": float(leaves_done), "sims_per_leaf": float(sims), "depth": 2.0}
        )
        return best


# ----------------------------------------------------------------------------- uct


class UctParams(StrategyParams):
    exploration: float = Field(0.7, gt=0, description="UCB1 exploration constant")
    margin: float = Field(0.05, ge=0, description="weight of the score margin in rewards")
    time_fraction: float = Field(0.95, gt=0, le=1, description="share of the budget to use")
    max_iterations: int = Field(0, ge=0, description="stop after this many (0: time only)")


class _UctNode:
    __slots__ = ("children", "move", "mover", "n", "untried", "w")

    def __init__(self, mover: int, move: SearchMove | None) -> None:
        self.mover = mover  # seat that made the move into this node
        self.move = move  # (cell, direction, dst, split); None for a pass
        self.n = 0
        self.w = 0.0
        self.children: list[_UctNode] = []
        self.untried: list[SearchMove | None] | None = None


def _play(state: GameState, move: SearchMove | None) -> None:
    """Play a tree move: a slide, or a skipped turn (None)."""
    if move is None:
        state.skip_turn()
    else:
        state.slide(move[0], move[2], move[3])


def _ucb1_child(node: _UctNode, c: float) -> _UctNode:
    """The child of highest UCB1 value (the first of equals); every child has a visit."""
    log_n = math.log(node.n)
    best_u = -1.0
    best_child = node.children[0]
    for ch in node.children:
        u = ch.w / ch.n + c * math.sqrt(log_n / ch.n)
        if u > best_u:
            best_u, best_child = u, ch
    return best_child


class UctStrategy(Strategy):
    """Plain UCT with uniformly random playouts to the end of the game."""

    name = "uct"
    Params = UctParams
    params: UctParams

    def place(self, state: GameState, budget: Budget) -> int:
        return _most_room_placement(state, self, budget)

    def _expand_moves(self, state: GameState) -> list[SearchMove | None]:
        moves: list[SearchMove | None] = list(_half_slides(state))
        if not moves and not state.is_terminal():
            moves.append(None)
        self.rng.shuffle(moves)
        return moves

    def move(self, state: GameState, budget: Budget) -> Move | None:
        start = time.monotonic()
        work = determinize(state, state.to_move)
        me = work.to_move
        if not work.slides():
            return None
        p = self.params
        stop_at = start + max(0.0, budget.remaining()) * p.time_fraction
        root = _UctNode(0, None)
        root.untried = self._expand_moves(work)
        first = root.untried[0]
        assert first is not None
        budget.offer_move(Move.from_search(first))
        iterations = 0
        while not budget.expired() and time.monotonic() < stop_at:
            if p.max_iterations and iterations >= p.max_iterations:
                break
            self._iterate(work, root, p.exploration, p.margin)
            iterations += 1
            if iterations % 64 == 0:
                self._offer(root, budget)
        move = self._offer(root, budget)
        budget.info.update(
            {
                "iterations": float(iterations),
                "time_used": time.monotonic() - start,
            }
        )
        assert me == work.to_move
        return move

    def _iterate(self, work: GameState, root: _UctNode, c: float, margin: float) -> None:
        """One UCT iteration: select, expand, play out at random, back up the rewards;
        ``work`` is left as it was."""
        path = self._select_and_expand(work, root, c)
        applied = len(path) - 1 + random_playout(work, self.rng)
        r = rewards(work, margin)
        for _ in range(applied):
            work.undo()
        for nd in path:
            nd.n += 1
            if nd.mover:
                nd.w += r[nd.mover - 1]

    def _select_and_expand(self, work: GameState, root: _UctNode, c: float) -> list[_UctNode]:
        """Descend by UCB1 while every move of the node has a child, then add one child
        for an untried move; each step is played on ``work``. The nodes from the root."""
        node = root
        path = [root]
        while not node.untried and node.children:
            node = _ucb1_child(node, c)
            _play(work, node.move)
            path.append(node)
            if node.untried is None:
                node.untried = self._expand_moves(work)
        if node.untried:
            mv = node.untried.pop()
            child = _UctNode(work.to_move, mv)
            _play(work, mv)
            node.children.append(child)
            path.append(child)
        return path

    @staticmethod
    def _offer(root: _UctNode, budget: Budget) -> Move:
        if not root.children:
            mv = root.untried[-1] if root.untried else None
        else:
            mv = max(root.children, key=lambda ch: ch.n).move
        assert mv is not None
        move = Move.from_search(mv)
        budget.offer_move(move)
        return move


# -------------------------------------------------------------------------- flatmc


class FlatMcParams(StrategyParams):
    margin: float = Field(0.05, ge=0, description="weight of the score margin in rewards")
    time_fraction: float = Field(0.95, gt=0, le=1, description="share of the budget to use")
    playouts: int = Field(0, ge=0, description="playouts per candidate (0: as many as fit)")


def flat_splits(count: int) -> list[int]:
    """The split sizes ``flatmc`` tries on a stack of ``count``: 1, half, all but one."""
    return sorted({1, count // 2, count - 1})


class FlatMcStrategy(Strategy):
    """Flat Monte-Carlo over every slide with three split sizes (see the module)."""

    name = "flatmc"
    Params = FlatMcParams
    params: FlatMcParams

    def __init__(self, params: dict[str, object] | None = None) -> None:
        super().__init__(params)
        warm_up()  # the fast kernel compiles in the background; Python serves meanwhile

    def place(self, state: GameState, budget: Budget) -> int:
        return _most_room_placement(state, self, budget)

    def move(self, state: GameState, budget: Budget) -> Move | None:
        start = time.monotonic()
        work = determinize(state, state.to_move)
        me = work.to_move
        sheep = work.sheep
        candidates: list[SearchMove] = [
            (c, d, t, split) for c, d, t in work.slides() for split in flat_splits(sheep[c])
        ]
        if not candidates:
            return None
        self.rng.shuffle(candidates)
        budget.offer_move(Move.from_search(candidates[0]))
        p = self.params
        stop_at = start + max(0.0, budget.remaining()) * p.time_fraction
        kernel = ready_kernel()
        policy = PlayoutPolicy.uniform()
        setting = work.setting
        totals = [0.0] * len(candidates)
        runs = [0] * len(candidates)
        rounds = 0
        while not (p.playouts and rounds >= p.playouts):
            for i, (cell, _d, dst, split) in enumerate(candidates):
                if time.monotonic() >= stop_at or budget.expired():
                    break
                work.slide(cell, dst, split)
                scores = kernel.scores(work, policy, self.rng)
                work.undo()
                totals[i] += score_rewards(setting, scores, p.margin)[me - 1]
                runs[i] += 1
            else:
                rounds += 1
                continue
            break
        best = max(range(len(candidates)), key=lambda i: totals[i] / runs[i] if runs[i] else -1)
        move = Move.from_search(candidates[best])
        budget.offer_move(move)
        budget.info.update(
            {
                "iterations": float(sum(runs)),
                "candidates": float(len(candidates)),
                "time_used": time.monotonic() - start,
            }
        )
        return move
