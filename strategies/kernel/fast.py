"""The compiled playout kernel: ``pure.py``'s loops, compiled by numba (``[fast]`` extra).

Same tables, same draws, same order of stacks and the same swap-removals as the
pure-Python kernel, so both play the same game from the same stream of uniforms
(the property tests compare them). Uniforms come from a SplitMix64 generator
seeded from the caller's ``random.Random`` at every playout, or from a given stream.

Compiled on first use and cached on disk by numba (``cache=True``); where the cache
cannot be written or located (a frozen executable has no source files), it compiles
without one. ``strategies.kernel.warm_up`` compiles in the background.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from state.game import GameState
from state.geometry import Geometry
from strategies.kernel import (
    NEIGHBOUR_BONUS,
    PASS,
    ROOM_CAP,
    SPLIT_MODES,
    STRANDED_COST,
    KernelName,
    PlayoutPolicy,
    Trace,
    board_of,
)
from strategies.kernel.pure import DRAWS, FIRST_PART, forced_split

MAST_PRIOR = 0.5
"""The reward a cell's learned value starts from, as one visit (``_mast_slide``): about
the mean of the rank rewards (1, 0.5, 0.25, 0), so that an untried cell is neither
sought nor shunned."""

NST_VISITS = 7
"""Visits a pair of moves needs before its learned value counts (``_nst_value``): the
threshold of Tak, Winands and Björnsson's N-gram selection technique (2012)."""

AREA = SPLIT_MODES.index("area")
SAFE = SPLIT_MODES.index("safe")
"""``PlayoutPolicy.split_code`` of the area guess and of the safe mode (``_play``)."""

log = logging.getLogger(__name__)

try:
    import numba
    import numpy as np
except ImportError:  # the [fast] extra is not installed
    AVAILABLE = False
else:
    AVAILABLE = True

F = TypeVar("F", bound=Callable[..., Any])


def _jit(fn: F) -> F:
    """``numba.njit`` with the on-disk cache where numba can keep one."""
    try:
        return cast(F, numba.njit(cache=True, nogil=True)(fn))
    except RuntimeError as exc:  # no cache locator (frozen executable): compile each run
        log.debug("numba cache unavailable for %s: %s", fn.__name__, exc)
        return cast(F, numba.njit(nogil=True)(fn))


def _identity(fn: F) -> F:
    return fn


jit = _jit if AVAILABLE else _identity


if AVAILABLE:
    _GOLDEN = np.uint64(0x9E3779B97F4A7C15)
    _MIX1 = np.uint64(0xBF58476D1CE4E5B9)
    _MIX2 = np.uint64(0x94D049BB133111EB)
    _S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
    _UNIT = 1.0 / (1 << 53)


@jit
def _uniform(stream: Any, pos: Any) -> float:
    """The next uniform: from ``stream`` if it is not empty, else SplitMix64 on the
    generator state ``pos[1]`` (seeded from the caller's ``random.Random``: no global
    generator, nothing shared between threads)."""
    if stream.shape[0] == 0:
        z = pos[1] + _GOLDEN
        pos[1] = z
        z = (z ^ (z >> _S30)) * _MIX1
        z = (z ^ (z >> _S27)) * _MIX2
        z = z ^ (z >> _S31)
        return float(z >> _S11) * _UNIT
    u = stream[pos[0]]
    pos[0] += np.uint64(1)
    return u  # type: ignore[no-any-return]


@jit
def _free_dirs(first: Any, owner: Any, cell: int) -> int:
    base = 8 * cell
    n = 0
    for k in range(8):
        if owner[first[base + k]] == 0:
            n += 1
    return n


@jit
def _draw_slide(
    live: Any, live_n: Any, p: int, owner: Any, first: Any, stream: Any, pos: Any
) -> int:
    """``pure.draw_slide``: 8 * cell + direction index, or -1."""
    for _ in range(DRAWS):
        pick = int(_uniform(stream, pos) * (live_n[p] << 3))
        slide = 8 * live[p, pick >> 3] + (pick & 7)
        if owner[first[slide]] == 0:
            return slide  # type: ignore[no-any-return]
    legal = np.empty(8 * live_n[p], np.int64)
    n_legal = 0
    i = 0
    while i < live_n[p]:
        base = 8 * live[p, i]
        found = False
        for slide in range(base, base + 8):
            if owner[first[slide]] == 0:
                legal[n_legal] = slide
                n_legal += 1
                found = True
        if found:
            i += 1
        else:
            live_n[p] -= 1
            live[p, i] = live[p, live_n[p]]
    if n_legal == 0:
        return -1
    return legal[int(_uniform(stream, pos) * n_legal)]  # type: ignore[no-any-return]


@jit
def _destination(owner: Any, ray_off: Any, ray_cells: Any, slide: int) -> int:
    dst = -1
    for j in range(ray_off[slide], ray_off[slide + 1]):
        c = ray_cells[j]
        if owner[c] != 0:
            break
        dst = c
    return dst


@jit
def _best_slide(
    live: Any,
    live_n: Any,
    me: int,
    owner: Any,
    sheep: Any,
    first: Any,
    ray_off: Any,
    ray_cells: Any,
    nb_off: Any,
    nb_cells: Any,
    samples: int,
    stream: Any,
    pos: Any,
) -> int:
    """``pure.best_slide``."""
    best = -1e9
    pick = -1
    for _ in range(samples):
        slide = _draw_slide(live, live_n, me, owner, first, stream, pos)
        if slide < 0:
            return -1
        cell = slide >> 3
        dst = _destination(owner, ray_off, ray_cells, slide)
        owner[dst] = me
        room = _free_dirs(first, owner, dst)
        src_room = _free_dirs(first, owner, cell)
        owner[dst] = 0
        key = min(room, ROOM_CAP) + _uniform(stream, pos)
        for j in range(nb_off[dst], nb_off[dst + 1]):
            if owner[nb_cells[j]] == me:
                key += NEIGHBOUR_BONUS
        if src_room == 0 and sheep[cell] > 2:
            key -= STRANDED_COST
        if room == 0:
            key -= STRANDED_COST
        if key > best:
            best = key
            pick = slide
    return pick


@jit
def _mast_value(mast_w: Any, mast_n: Any, p: int, cell: int) -> float:
    """Seat ``p``'s learned value of ``cell``: the mean reward of its iterations that
    took the cell, from an even start of one visit worth ``MAST_PRIOR``."""
    return (mast_w[p, cell] + MAST_PRIOR) / (mast_n[p, cell] + 1.0)  # type: ignore[no-any-return]


@jit
def _pair(mast_n: Any, n: int, prev: int, cell: int) -> int:
    """The column of the pair (``prev``, then ``cell``) in a row of the MAST tables:
    past the ``n`` cells' columns; -1 with no move before (``prev`` -1) or no pairs'
    columns (``nst`` off)."""
    if prev < 0 or mast_n.shape[1] <= n:
        return -1
    return n + prev * n + cell


@jit
def _context(last: Any, p: int, own: bool) -> int:
    """The cell a move by seat ``p`` is valued after (``_nst_value``): with ``own`` the
    seat's own last move's (``last[p]``), else the last move's by any seat (``last[0]``);
    a pass is not a move. -1: none yet."""
    return last[p] if own else last[0]  # type: ignore[no-any-return]


@jit
def _moved(last: Any, p: int, dst: int) -> None:
    """Seat ``p``'s slide to ``dst`` into the contexts ``_context`` reads: the last
    move's and the seat's own."""
    last[0] = dst
    last[p] = dst


@jit
def _nst_value(mast_w: Any, mast_n: Any, p: int, cell: int, prev: int, n: int) -> float:
    """Seat ``p``'s learned value of ``cell`` (``_mast_value``), averaged with its value
    after the move before it took ``prev`` once that pair has ``NST_VISITS`` visits:
    the pairs' table lies past the cells' in the same rows (``_pair``; no such columns:
    no pairs, ``nst`` off)."""
    value = _mast_value(mast_w, mast_n, p, cell)
    k = _pair(mast_n, n, prev, cell)
    if k >= 0:
        seen = mast_n[p, k]
        if seen >= NST_VISITS:
            value = 0.5 * (value + mast_w[p, k] / seen)
    return value


@jit
def _mast_slide(
    live: Any, live_n: Any, p: int, owner: Any, first: Any, ray_off: Any, ray_cells: Any,
    mast_w: Any, mast_n: Any, samples: int, stream: Any, pos: Any, prev: int,
) -> int:  # fmt: skip
    """The best of ``samples`` drawn slides by the seat's learned value of the cell it
    lands on after the move before took ``prev`` (``_nst_value``), or -1."""
    best = -1.0
    pick = -1
    n = owner.shape[0] - 1
    for _ in range(samples):
        slide = _draw_slide(live, live_n, p, owner, first, stream, pos)
        if slide < 0:
            return -1
        dst = _destination(owner, ray_off, ray_cells, slide)
        value = _nst_value(mast_w, mast_n, p, dst, prev, n)
        if value > best:
            best = value
            pick = slide
    return pick


@jit
def _rooms(first: Any, owner: Any, cell: int, dst: int) -> tuple[int, int]:
    """``pure.rooms``."""
    owner[dst] = -2
    room_src = _free_dirs(first, owner, cell)
    room_dst = _free_dirs(first, owner, dst)
    owner[dst] = 0
    return room_src, room_dst


_forced_split = jit(forced_split)


@jit
def _safe_split(first: Any, owner: Any, count: int, cell: int, dst: int) -> int:
    """``pure.safe_split``."""
    room_src, room_dst = _rooms(first, owner, cell, dst)
    return _forced_split(room_src, room_dst, count)


@jit
def _area_split(first: Any, owner: Any, count: int, cell: int, dst: int) -> int:
    """``pure.area_split``."""
    room_src, room_dst = _rooms(first, owner, cell, dst)
    forced = _forced_split(room_src, room_dst, count)
    if forced:
        return forced
    m = int(np.rint(count * room_dst / (room_src + room_dst)))  # half to even, as round()
    return min(count - 1, max(1, m))


@jit
def _rule_split(rule: int, count: int) -> int:
    """``pure.rule_split``."""
    if rule == 1:
        return count // 2
    if rule == 2:
        return 1
    return count - 1


@jit
def _play(
    owner: Any,
    sheep: Any,
    to_move: int,
    done_in: Any,
    first: Any,
    ray_off: Any,
    ray_cells: Any,
    nb_off: Any,
    nb_cells: Any,
    epsilon: Any,
    samples: int,
    splits: int,
    seat_splits: Any,
    cutoff: int,
    seed: int,
    stream: Any,
    turns: Any,
    live: Any,
    live_n: Any,
    mast_w: Any,
    mast_n: Any,
    last: Any,
    own: bool,
) -> tuple[int, bool]:
    """``pure.play`` on arrays, the seats' movable stacks in ``live`` (filled here),
    ``epsilon`` each seat's random share (``PlayoutPolicy.epsilons``, ``epsilon_array``);
    returns the turns played (recorded in ``turns`` if it has room) and whether the
    game ended. ``mast_w``/``mast_n`` not empty: the greedy moves pick by their learned
    values (``_mast_slide``) instead of the room heuristic; ``last``: the cells the
    moves before the first turn took (``_context``; -1: none), for the pairs' values,
    each move's context the mover's own last move with ``own``, else the last move;
    updated in place as the playout moves (the caller's scratch)."""
    pos = np.zeros(2, np.uint64)  # the stream's next index, the generator's state
    pos[1] = seed
    n = owner.shape[0] - 1
    live_n[:] = 0
    for c in range(n):
        o = owner[c]
        if o > 0 and sheep[c] > 1:
            live[o, live_n[o]] = c
            live_n[o] += 1
    done = done_in.copy()
    p = to_move
    idle = 0
    played = 0
    record = turns.shape[0]
    while idle < 4:
        if played == cutoff and cutoff:
            return played, False
        slide = -1
        if not done[p] and live_n[p] > 0:
            e = epsilon[p]
            if e >= 1.0 or _uniform(stream, pos) < e:
                pick = int(_uniform(stream, pos) * (live_n[p] << 3))
                slide = 8 * live[p, pick >> 3] + (pick & 7)
                if owner[first[slide]] != 0:
                    slide = _draw_slide(live, live_n, p, owner, first, stream, pos)
            elif mast_n.shape[0] > 0:
                slide = _mast_slide(
                    live, live_n, p, owner, first, ray_off, ray_cells, mast_w, mast_n,
                    samples, stream, pos, _context(last, p, own),
                )  # fmt: skip
            else:
                slide = _best_slide(
                    live, live_n, p, owner, sheep, first, ray_off, ray_cells,
                    nb_off, nb_cells, samples, stream, pos,
                )  # fmt: skip
        if slide < 0:
            done[p] = True
            idle += 1
            if played < record:
                turns[played, 0] = PASS
                turns[played, 1] = PASS
                turns[played, 2] = PASS
        else:
            idle = 0
            cell = slide >> 3
            dst = _destination(owner, ray_off, ray_cells, slide)
            count = sheep[cell]
            rule = seat_splits[p]
            if count == 2:
                split = 1
            elif rule != 0:
                split = _rule_split(rule, count)
            elif splits == AREA:
                split = _area_split(first, owner, count, cell, dst)
            else:
                split = _safe_split(first, owner, count, cell, dst) if splits == SAFE else 0
                if split == 0:
                    split = 1 + int(_uniform(stream, pos) * (count - 1))
            left = count - split
            sheep[cell] = left
            if left == 1:
                i = 0
                while live[p, i] != cell:
                    i += 1
                live_n[p] -= 1
                live[p, i] = live[p, live_n[p]]
            owner[dst] = p
            sheep[dst] = split
            _moved(last, p, dst)
            if split > 1:
                live[p, live_n[p]] = dst
                live_n[p] += 1
            if played < record:
                turns[played, 0] = cell
                turns[played, 1] = dst
                turns[played, 2] = split
        played += 1
        p = p % 4 + 1
    return played, True


@jit
def _flood(owner: Any, start: int, fill: int, nb_off: Any, nb_cells: Any, todo: Any) -> int:
    """``pure.flood`` over the adjacency ``nb_off``/``nb_cells`` (CSR; ``todo``: room for
    every cell)."""
    o = owner[start]
    owner[start] = fill
    todo[0] = start
    top = 1
    size = 0
    while top > 0:
        top -= 1
        c = todo[top]
        size += 1
        for j in range(nb_off[c], nb_off[c + 1]):
            nb = nb_cells[j]
            if owner[nb] == o:
                owner[nb] = fill
                todo[top] = nb
                top += 1
    return size


@jit
def _final_scores(owner: Any, cells: Any, nb_off: Any, nb_cells: Any, pw: Any) -> Any:
    """``pure.final_scores``."""
    todo = np.empty(cells.shape[0], np.int64)
    score = np.zeros(4)
    for start in cells:
        o = owner[start]
        if o > 0:
            score[o - 1] += pw[_flood(owner, start, 0, nb_off, nb_cells, todo)]
    return score


@jit
def _share_out(wants: Any, size: int, gain: Any) -> None:
    """``pure.share_out`` (``wants`` is changed: a served seat's want becomes 0)."""
    left = float(size)
    n_open = 0
    for p in range(1, 5):
        if wants[p] > 0:
            n_open += 1
    while n_open > 0:
        low = 0
        for p in range(1, 5):
            if wants[p] > 0 and (low == 0 or wants[p] < wants[low]):
                low = p
        share = left / n_open
        if wants[low] > share:
            for p in range(1, 5):
                if wants[p] > 0:
                    gain[p] += share
            return
        gain[low] += wants[low]
        left -= wants[low]
        wants[low] = 0
        n_open -= 1


@jit
def _estimated_scores(
    owner: Any, sheep: Any, live: Any, live_n: Any, first: Any, cells: Any, nb_off: Any,
    nb_cells: Any, pw: Any, ar_off: Any, ar_cells: Any,
) -> Any:  # fmt: skip
    """``pure.estimated_scores``."""
    sizes = np.zeros(cells.shape[0], np.int64)
    todo = np.empty(cells.shape[0], np.int64)
    n_parts = 0
    for start in cells:
        if owner[start] == 0:
            sizes[n_parts] = _flood(owner, start, FIRST_PART - n_parts, ar_off, ar_cells, todo)
            n_parts += 1
    wants = np.zeros((n_parts, 5), np.int64)
    movable = np.zeros(5, np.int64)
    seen = np.empty(8, np.int64)
    for p in range(1, 5):
        for i in range(live_n[p]):
            c = live[p, i]
            n_seen = 0
            for k in range(8):
                q = FIRST_PART - owner[first[8 * c + k]]
                if q < 0:
                    continue
                new = True
                for m in range(n_seen):
                    if seen[m] == q:
                        new = False
                if new:
                    seen[n_seen] = q
                    n_seen += 1
                    wants[q, p] += sheep[c] - 1
            if n_seen > 0:
                movable[p] += sheep[c] - 1
    gain = np.zeros(5)
    for q in range(n_parts):
        _share_out(wants[q], sizes[q], gain)
    count = np.zeros(5, np.int64)
    for c in cells:
        if owner[c] > 0:
            count[owner[c]] += 1
    score = _final_scores(owner, cells, nb_off, nb_cells, pw)
    for p in range(1, 5):
        n = count[p]
        score[p - 1] += (n + min(gain[p], movable[p])) ** 1.25 - n**1.25
    return score


@jit
def _scores(
    owner_in: Any,
    sheep_in: Any,
    to_move: int,
    done_in: Any,
    first: Any,
    ray_off: Any,
    ray_cells: Any,
    nb_off: Any,
    nb_cells: Any,
    cells: Any,
    pw: Any,
    ar_off: Any,
    ar_cells: Any,
    epsilon: Any,
    samples: int,
    splits: int,
    seat_splits: Any,
    cutoff: int,
    seed: int,
    stream: Any,
    turns: Any,
    mast_w: Any,
    mast_n: Any,
    last: Any,
    own: bool,
) -> Any:
    """Play the position out (written back into ``owner_in`` and ``sheep_in``) and
    score it: one call from Python per playout. Returns the scores and the turns.
    ``last`` and ``own``: the pairs' context (``_play``; ``last`` is updated)."""
    owner = np.empty(owner_in.shape[0] + 1, np.int64)
    owner[:-1] = owner_in
    owner[-1] = -1
    sheep = sheep_in.copy()
    live = np.empty((5, owner.shape[0] - 1), np.int64)
    live_n = np.zeros(5, np.int64)
    played, finished = _play(
        owner, sheep, to_move, done_in, first, ray_off, ray_cells, nb_off, nb_cells,
        epsilon, samples, splits, seat_splits, cutoff, seed, stream, turns, live, live_n,
        mast_w, mast_n, last, own,
    )  # fmt: skip
    owner_in[:] = owner[:-1]
    sheep_in[:] = sheep
    if finished:
        return _final_scores(owner, cells, nb_off, nb_cells, pw), played, True
    score = _estimated_scores(
        owner, sheep, live, live_n, first, cells, nb_off, nb_cells, pw, ar_off, ar_cells
    )
    return score, played, False


Tables = tuple[Any, Any, Any, Any, Any, Any, Any, Any, Any]


@functools.lru_cache(maxsize=64)
def tables_of(geometry: Geometry) -> Tables:
    """``Board``'s tables as int64 arrays (CSR rays, neighbours and ``around``) for the
    compiled code."""
    board = board_of(geometry)
    nb_off = np.zeros(board.n + 2, np.int64)
    nb_off[1 : board.n + 1] = np.cumsum([len(nb) for nb in board.neighbours])
    nb_off[board.n + 1] = nb_off[board.n]
    return (
        np.array(board.first, np.int64),
        *csr(board.rays),
        nb_off,
        np.array([c for nb in board.neighbours for c in nb], np.int64),
        np.array(board.cells, np.int64),
        np.array(board.pow, np.float64),
        *csr(board.around),
    )


def csr(lists: list[tuple[int, ...]]) -> tuple[Any, Any]:
    """Lists of cells as offsets and one array (``cells[off[i]:off[i + 1]]`` is list i)."""
    off = np.zeros(len(lists) + 1, np.int64)
    off[1:] = np.cumsum([len(x) for x in lists])
    return off, np.array([c for x in lists for c in x], np.int64)


@functools.lru_cache(maxsize=64)
def seat_array(seat_splits: tuple[int, ...]) -> Any:
    """``PlayoutPolicy.seat_splits`` as the compiled code takes it (made once, not per
    playout)."""
    return np.array(seat_splits, np.int64)


def epsilon_array(policy: PlayoutPolicy) -> Any:
    """``PlayoutPolicy.epsilons`` as the compiled code takes it."""
    return np.array(policy.epsilons, np.float64)


_NO_STREAM = np.empty(0, np.float64) if AVAILABLE else None
_NO_TURNS = np.empty((0, 3), np.int64) if AVAILABLE else None
_NO_MAST_W = np.empty((0, 0), np.float64) if AVAILABLE else None
_NO_MAST_N = np.empty((0, 0), np.int64) if AVAILABLE else None


class FastKernel:
    name: KernelName = "fast"

    def scores(self, state: GameState, policy: PlayoutPolicy, rng: random.Random) -> list[float]:
        cells = len(state.owner)
        out, _, _ = _scores(
            np.fromiter(state.owner, np.int64, cells),
            np.fromiter(state.sheep, np.int64, cells),
            state.to_move,
            np.array(state.done, np.bool_),
            *tables_of(state.geometry),
            epsilon_array(policy),
            policy.samples,
            policy.split_code,
            seat_array(policy.seat_splits),
            policy.cutoff,
            rng.getrandbits(63),
            _NO_STREAM,
            _NO_TURNS,
            _NO_MAST_W,
            _NO_MAST_N,
            np.full(5, -1, np.int64),
            False,
        )
        return out.tolist()  # type: ignore[no-any-return]

    def play_stream(
        self, state: GameState, policy: PlayoutPolicy, stream: Sequence[float]
    ) -> Trace:
        owner = np.array(state.owner, np.int64)
        sheep = np.array(state.sheep, np.int64)
        turns = np.empty((4 * (len(owner) + 2), 3), np.int64)
        out, played, finished = _scores(
            owner, sheep, state.to_move, np.array(state.done, np.bool_),
            *tables_of(state.geometry), epsilon_array(policy), policy.samples, policy.split_code,
            seat_array(policy.seat_splits), policy.cutoff, 0, np.array(stream, np.float64),
            turns, _NO_MAST_W, _NO_MAST_N, np.full(5, -1, np.int64), False,
        )  # fmt: skip
        return Trace(
            [(int(a), int(b), int(c)) for a, b, c in turns[:played]],
            owner.tolist(),
            sheep.tolist(),
            out.tolist(),
            bool(finished),
        )


def compile_kernel() -> None:
    """Compile (or load from the cache) every signature the kernel is called with."""
    from state.boardgen import random_geometry
    from state.playout import random_placement
    from state.settings import get_setting

    setting = get_setting(1)
    rng = random.Random(0)
    state = GameState(setting, random_geometry(setting, 1))
    random_placement(state, rng)
    kernel = FastKernel()
    for policy in (PlayoutPolicy.uniform(), PlayoutPolicy(0.3, 3, "area", cutoff=8)):
        kernel.scores(state, policy, rng)
