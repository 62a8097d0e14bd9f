"""The minimax part of the main strategy: alpha-beta for four players.

Two multi-player policies:

- ``brs`` (best-reply search, Schadd & Winands): the root seat's layers alternate
  with one layer where only the *one* strongest opponent reply is played and the
  other opponents skip. It looks deeper than paranoid for the same work, and the
  literature finds it the strongest of the alpha-beta policies in multi-player games.
- ``paranoid``: the real seat order, every opponent minimizes the root seat's value
  (the partner in game 4 maximizes it). Exact when it reaches the end of the game:
  a paranoid win is a win against any play.

Both use iterative deepening, a transposition table keyed by the Zobrist hash that
apply/undo maintain, the previous iteration's best move first, and moves ordered
by the cheap slide key. Leaves are scored by ``common.evaluate``; finished games
by rank points, so that a sure place beats any heuristic score.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from state.game import GameState, Move, SearchMove
from state.scoring import PLACE_POINTS, tournament_points
from state.settings import SETTINGS
from strategies.base import Budget
from strategies.common import (
    EvalWeights,
    area_split,
    evaluate,
    final_results,
    relative_value,
    slide_key,
)

INF = 1e9
# A finished game's value: PLACE_WEIGHT per rank point above the mean (2.75), plus the
# score lead, so that a place outweighs any lead (a lead is below 100 on every board).
PLACE_WEIGHT = 100.0
MEAN_POINTS = sum(PLACE_POINTS) / len(PLACE_POINTS)
_CHECK_EVERY = 64  # nodes between two looks at the clock
_EXACT, _LOWER, _UPPER = 0, 1, 2


class SearchTimeout(Exception):
    """The clock ran out inside the tree; the partial iteration is discarded."""


@dataclass
class AbResult:
    best: Move | None = None
    value: float = 0.0
    depth: int = 0
    nodes: int = 0
    solved: bool = False
    # (cell, direction) -> value bound of the best split of that slide at the root.
    root_values: dict[tuple[int, int], float] = field(default_factory=dict)


class AlphaBeta:
    def __init__(self, policy: str, weights: EvalWeights, splits: int = 2) -> None:
        if policy not in ("brs", "paranoid"):
            raise ValueError(f"multi-player policy must be 'brs' or 'paranoid', not {policy!r}")
        self.policy = policy
        self.weights = weights
        self.n_splits = splits
        self.tt: dict[int, tuple[int, float, int, SearchMove | None]] = {}
        self.nodes = 0
        self.heuristic_leaves = 0
        self.seat = 1
        self.ally = 0
        self.setting = SETTINGS[1]
        self.stop_at = 0.0
        self.budget: Budget | None = None

    # ------------------------------------------------------------------ helpers
    def _moves(self, state: GameState, order: bool, tt_move: SearchMove | None) -> list[SearchMove]:
        sheep = state.sheep
        out: list[SearchMove] = []
        keyed: list[tuple[float, SearchMove]] = []
        for cell, direction, dst in state.slides():
            count = sheep[cell]
            area = area_split(state, cell, dst)
            sizes = [area]
            if self.n_splits >= 2 and count // 2 != area and count > 2:
                sizes.append(count // 2)
            if self.n_splits >= 3 and 1 not in sizes:
                sizes.append(1)
            if self.n_splits >= 4 and count - 1 not in sizes and count > 2:
                sizes.append(count - 1)
            for m in sizes:
                mv = (cell, direction, dst, m)
                if order:
                    keyed.append((slide_key(state, cell, dst, m), mv))
                else:
                    out.append(mv)
        if order:
            keyed.sort(key=lambda t: -t[0])
            out = [mv for _k, mv in keyed]
        if tt_move is not None and tt_move in out:
            out.remove(tt_move)
            out.insert(0, tt_move)
        return out

    def _tick(self) -> None:
        self.nodes += 1
        if self.nodes % _CHECK_EVERY == 0:
            assert self.budget is not None
            if time.monotonic() >= self.stop_at or self.budget.expired():
                raise SearchTimeout

    def _terminal_value(self, state: GameState) -> float:
        results = final_results(state)
        points = tournament_points(results)
        i = self.seat - 1
        others = [results[j] for j in range(4) if j != i]
        return PLACE_WEIGHT * (points[i] - MEAN_POINTS) + results[i] - max(others)

    def proves_first(self, value: float) -> bool:
        """Whether the value of a search solved from the last root is first place: alone
        (5 points; a shared first is 4), or in game 4 the pair's (4 points each, the
        partners' results being the pair's average)."""
        first = sum(PLACE_POINTS[:2]) / 2 if self.ally else PLACE_POINTS[0]
        return value > PLACE_WEIGHT * (first - MEAN_POINTS) - PLACE_WEIGHT / 2

    def _leaf(self, state: GameState) -> float:
        if state.is_terminal():
            return self._terminal_value(state)
        self.heuristic_leaves += 1
        return relative_value(evaluate(state, self.weights), self.seat, self.setting)

    # ------------------------------------------------------ transposition table
    def _probe(
        self, key: int, depth: int, alpha: float, beta: float
    ) -> tuple[float | None, SearchMove | None]:
        """A stored value that decides this window (or None), and the stored best move."""
        entry = self.tt.get(key)
        if entry is None:
            return None, None
        e_depth, e_value, e_flag, tt_move = entry
        if e_depth >= depth and (
            e_flag == _EXACT
            or (e_flag == _LOWER and e_value >= beta)
            or (e_flag == _UPPER and e_value <= alpha)
        ):
            return e_value, tt_move
        return None, tt_move

    def _store(
        self, key: int, depth: int, best: float, alpha: float, beta: float, move: SearchMove | None
    ) -> None:
        """Record ``best`` as exact, or as a bound when it fell outside (alpha, beta)."""
        flag = _EXACT
        if best <= alpha:
            flag = _UPPER
        elif best >= beta:
            flag = _LOWER
        self.tt[key] = (depth, best, flag, move)

    # -------------------------------------------------------------- best reply
    def _brs(self, state: GameState, depth: int, alpha: float, beta: float, maxing: bool) -> float:
        self._tick()
        if depth <= 0:
            return self._leaf(state)
        key = state.hash
        cut, tt_move = self._probe(key, depth, alpha, beta)
        if cut is not None:
            return cut
        if maxing:
            return self._brs_ours(state, key, depth, alpha, beta, tt_move)
        return self._brs_replies(state, key, depth, alpha, beta, tt_move)

    def _brs_ours(
        self,
        state: GameState,
        key: int,
        depth: int,
        alpha: float,
        beta: float,
        tt_move: SearchMove | None,
    ) -> float:
        """The root seat's layer: the best of its moves (it skips when it has none)."""
        moves = self._moves(state, depth >= 2, tt_move)
        if not moves:
            if state.is_terminal():
                return self._terminal_value(state)
            state.skip_turn()
            try:
                return self._brs(state, depth - 1, alpha, beta, False)
            finally:
                state.undo()
        a0 = alpha
        best = -INF
        best_move: SearchMove | None = None
        for mv in moves:
            state.slide(mv[0], mv[2], mv[3])
            try:
                v = self._brs(state, depth - 1, alpha, beta, False)
            finally:
                state.undo()
            if v > best:
                best, best_move = v, mv
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        break
        self._store(key, depth, best, a0, beta, best_move)
        return best

    def _brs_replies(
        self,
        state: GameState,
        key: int,
        depth: int,
        alpha: float,
        beta: float,
        tt_move: SearchMove | None,
    ) -> float:
        """The opponents' layer: the one reply, by any opponent in seat order, that is
        worst for the root seat; the other seats skip (the partner in game 4 stays
        passive). When no opponent can move the layer is empty."""
        b0 = beta
        order = depth >= 2
        best = INF
        best_move: SearchMove | None = None
        any_move = False
        skipped = 0
        try:
            while state.to_move != self.seat:
                if state.to_move != self.ally:
                    # The stored best move is a reply of the first opponent only.
                    moves = self._moves(state, order, tt_move if skipped == 0 else None)
                    for mv in moves:
                        any_move = True
                        v = self._after_reply(state, mv, depth, alpha, beta)
                        if v < best:
                            best = v
                            best_move = mv if skipped == 0 else None
                            if v < beta:
                                beta = v
                                if alpha >= beta:
                                    break
                    if alpha >= beta:
                        break
                state.skip_turn()
                skipped += 1
            if not any_move and alpha < beta:
                best = self._brs(state, depth - 1, alpha, beta, True)
        finally:
            for _ in range(skipped):
                state.undo()
        self._store(key, depth, best, alpha, b0, best_move)
        return best

    def _after_reply(
        self, state: GameState, mv: SearchMove, depth: int, alpha: float, beta: float
    ) -> float:
        """The value of opponent reply ``mv``: played, then the seats up to the root seat
        skip, and the root seat's layer is searched."""
        state.slide(mv[0], mv[2], mv[3])
        extra = 0
        try:
            while state.to_move != self.seat:
                state.skip_turn()
                extra += 1
            return self._brs(state, depth - 1, alpha, beta, True)
        finally:
            for _ in range(extra + 1):
                state.undo()

    # ---------------------------------------------------------------- paranoid
    def _paranoid(
        self, state: GameState, depth: int, alpha: float, beta: float, idle: int
    ) -> float:
        self._tick()
        if idle >= 4:
            return self._terminal_value(state)
        if depth <= 0:
            return self._leaf(state)
        key = state.hash
        cut, tt_move = self._probe(key, depth, alpha, beta)
        if cut is not None:
            return cut
        p = state.to_move
        maxing = p == self.seat or p == self.ally
        moves = self._moves(state, depth >= 2, tt_move)
        if not moves:
            state.skip_turn()
            try:
                return self._paranoid(state, depth, alpha, beta, idle + 1)
            finally:
                state.undo()
        a0, b0 = alpha, beta
        best = -INF if maxing else INF
        best_move: SearchMove | None = None
        for mv in moves:
            state.slide(mv[0], mv[2], mv[3])
            try:
                v = self._paranoid(state, depth - 1, alpha, beta, 0)
            finally:
                state.undo()
            if maxing:
                if v > best:
                    best, best_move = v, mv
                    alpha = max(alpha, v)
            elif v < best:
                best, best_move = v, mv
                beta = min(beta, v)
            if alpha >= beta:
                break
        self._store(key, depth, best, a0, b0, best_move)
        return best

    # -------------------------------------------------------------------- root
    def _root(self, state: GameState, depth: int, prev_best: SearchMove | None) -> AbResult:
        moves = self._moves(state, True, prev_best)
        result = AbResult()
        alpha = -INF
        best_mv: SearchMove | None = None
        for mv in moves:
            state.slide(mv[0], mv[2], mv[3])
            try:
                if self.policy == "brs":
                    v = self._brs(state, depth - 1, alpha, INF, False)
                else:
                    v = self._paranoid(state, depth - 1, alpha, INF, 0)
            finally:
                state.undo()
            key = (mv[0], mv[1])
            result.root_values[key] = max(result.root_values.get(key, -INF), v)
            if v > alpha or best_mv is None:
                alpha, best_mv = max(alpha, v), mv
        assert best_mv is not None
        result.best = Move.from_search(best_mv)
        result.value = alpha
        result.depth = depth
        return result

    def search(
        self,
        state: GameState,
        budget: Budget,
        stop_at: float,
        max_depth: int = 64,
    ) -> AbResult:
        """Iterative deepening until ``stop_at`` or ``max_depth``; the state is left
        as it was. The result is that of the deepest completed iteration, whose best
        move is also offered to ``budget``."""
        self.seat = state.to_move
        self.setting = state.setting
        self.ally = state.setting.partner(self.seat) or 0
        self.budget = budget
        self.stop_at = stop_at
        self.nodes = 0
        self.tt.clear()
        result = AbResult()
        if not state.slides():
            return result
        base_ply = state.ply
        prev: SearchMove | None = None
        for depth in range(1, max_depth + 1):
            self.heuristic_leaves = 0
            try:
                r = self._root(state, depth, prev)
            except SearchTimeout:
                while state.ply > base_ply:
                    state.undo()
                break
            r.nodes = self.nodes
            r.solved = self.heuristic_leaves == 0
            result = r
            assert r.best is not None
            prev = state.search_move(r.best)
            budget.offer_move(r.best)
            if r.solved or time.monotonic() >= stop_at:
                break
        result.nodes = self.nodes
        return result
