"""The pure-Python playout kernel (see ``strategies.kernel``).

Flat lists, the seat's movable stacks kept in a list of its own (a stack leaves it
when it is down to one sheep or boxed in for good), a slide drawn by rejection
(a random stack and direction, taken if the first cell of its ray is free: uniform
over the legal slides) with a full scan only when draws keep failing, and the score
by one flood fill of the final owners. ``fast.py`` is the same code for numba: keep
the two in step (the property tests compare them choice for choice).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from state.game import GameState
from strategies.kernel import (
    NEIGHBOUR_BONUS,
    PASS,
    ROOM_CAP,
    STRANDED_COST,
    Board,
    KernelName,
    PlayoutPolicy,
    Trace,
    board_of,
)

DRAWS = 4
"""Rejection draws of a slide before the seat's stacks are scanned."""


class PythonKernel:
    name: KernelName = "python"

    def scores(self, state: GameState, policy: PlayoutPolicy, rng: random.Random) -> list[float]:
        board = board_of(state.geometry)
        owner = [*state.owner, -1]
        sheep = state.sheep[:]
        live = live_stacks(state)
        if play(board, owner, sheep, live, state.to_move, state.done, policy, rng.random):
            return final_scores(board, owner)
        return estimated_scores(board, owner, sheep, live)

    def play_stream(
        self, state: GameState, policy: PlayoutPolicy, stream: Sequence[float]
    ) -> Trace:
        board = board_of(state.geometry)
        owner = [*state.owner, -1]
        sheep = state.sheep[:]
        turns: list[tuple[int, int, int]] = []
        draws = iter(stream)
        live = live_stacks(state)
        finished = play(
            board, owner, sheep, live, state.to_move, state.done, policy, draws.__next__, turns
        )
        final = owner[:-1]
        if finished:
            return Trace(turns, final, sheep, final_scores(board, owner))
        return Trace(turns, final, sheep, estimated_scores(board, owner, sheep, live), False)


def play(
    board: Board,
    owner: list[int],
    sheep: list[int],
    live: list[list[int]],
    to_move: int,
    done_in: Sequence[bool],
    policy: PlayoutPolicy,
    rand: Callable[[], float],
    turns: list[tuple[int, int, int]] | None = None,
) -> bool:
    """Play to the end in place on ``owner`` (with the sentinel), ``sheep`` and each
    seat's movable stacks ``live`` (``live_stacks``), or until the policy's cutoff:
    whether the game ended."""
    first = board.first
    rays = board.rays
    done = list(done_in)
    epsilons, samples, mode = policy.epsilons, policy.samples, policy.splits
    seat_splits = policy.seat_splits
    cutoff = policy.cutoff
    p = to_move
    idle = 0
    played = 0
    while idle < 4:
        if played == cutoff and cutoff:
            return False
        played += 1
        stacks = live[p]
        slide = -1
        if not done[p] and stacks:
            epsilon = epsilons[p]
            if epsilon >= 1.0 or rand() < epsilon:
                # One draw here (the common case), the rest in draw_slide.
                pick = int(rand() * (len(stacks) << 3))
                slide = 8 * stacks[pick >> 3] + (pick & 7)
                if owner[first[slide]]:
                    slide = draw_slide(stacks, owner, first, rand)
            else:
                slide = best_slide(board, stacks, owner, sheep, p, rand, samples)
        if slide < 0:
            done[p] = True
            idle += 1
            if turns is not None:
                turns.append((PASS, PASS, PASS))
        else:
            idle = 0
            cell = slide >> 3
            dst = destination(rays[slide], owner)
            count = sheep[cell]
            rule = seat_splits[p]
            if count == 2:
                split = 1
            elif rule:
                split = rule_split(rule, count)
            elif mode == "area":
                split = area_split(first, owner, count, cell, dst)
            else:
                split = safe_split(first, owner, count, cell, dst) if mode == "safe" else 0
                if not split:
                    split = 1 + int(rand() * (count - 1))
            left = count - split
            sheep[cell] = left
            if left == 1:
                i = stacks.index(cell)
                stacks[i] = stacks[-1]
                stacks.pop()
            owner[dst] = p
            sheep[dst] = split
            if split > 1:
                stacks.append(dst)
            if turns is not None:
                turns.append((cell, dst, split))
        p = p % 4 + 1
    return True


def live_stacks(state: GameState) -> list[list[int]]:
    """Each seat's stacks of two or more sheep (index 0 empty), in cell order."""
    sheep = state.sheep
    return [sorted(c for c in cells if sheep[c] > 1) for cells in state.stacks]


def draw_slide(
    stacks: list[int], owner: Sequence[int], first: Sequence[int], rand: Callable[[], float]
) -> int:
    """A uniformly random legal slide of ``stacks`` as ``8 * cell + direction index``,
    or -1 if there is none. Stacks found boxed in for good leave ``stacks``."""
    for _ in range(DRAWS):
        pick = int(rand() * (len(stacks) << 3))
        slide = 8 * stacks[pick >> 3] + (pick & 7)
        if not owner[first[slide]]:
            return slide
    # Draws keep failing: scan, dropping dead stacks (a slide never opens again).
    legal: list[int] = []
    i = 0
    while i < len(stacks):
        base = 8 * stacks[i]
        found = False
        for slide in range(base, base + 8):
            if not owner[first[slide]]:
                legal.append(slide)
                found = True
        if found:
            i += 1
        else:
            # The last stack (not scanned yet) takes its place.
            stacks[i] = stacks[-1]
            stacks.pop()
    if not legal:
        return -1
    return legal[int(rand() * len(legal))]


def best_slide(
    board: Board,
    stacks: list[int],
    owner: list[int],
    sheep: Sequence[int],
    me: int,
    rand: Callable[[], float],
    samples: int,
) -> int:
    """The best of ``samples`` uniformly drawn slides by the cheap key, or -1."""
    first = board.first
    rays = board.rays
    neighbours = board.neighbours
    best = -1e9
    pick = -1
    for _ in range(samples):
        slide = draw_slide(stacks, owner, first, rand)
        if slide < 0:
            return -1
        cell = slide >> 3
        dst = destination(rays[slide], owner)
        owner[dst] = me
        room = free_dirs(first, owner, dst)
        src_room = free_dirs(first, owner, cell)
        owner[dst] = 0
        key = min(room, ROOM_CAP) + rand()
        for nb in neighbours[dst]:
            if owner[nb] == me:
                key += NEIGHBOUR_BONUS
        if src_room == 0 and sheep[cell] > 2:
            key -= STRANDED_COST
        if room == 0:
            key -= STRANDED_COST
        if key > best:
            best, pick = key, slide
    return pick


def destination(ray: Sequence[int], owner: Sequence[int]) -> int:
    """Where a slide along ``ray`` stops (the ray's first cell is free)."""
    dst = -1
    for c in ray:
        if owner[c]:
            break
        dst = c
    return dst


def free_dirs(first: Sequence[int], owner: Sequence[int], cell: int) -> int:
    base = 8 * cell
    n = 0
    for k in range(8):
        if not owner[first[base + k]]:
            n += 1
    return n


def rule_split(rule: int, count: int) -> int:
    """The split of a stack of ``count`` > 2 sheep by rule ``rule`` (an index of
    ``SPLIT_RULES`` above 0: half, one, all but one)."""
    if rule == 1:
        return count // 2
    if rule == 2:
        return 1
    return count - 1


def rooms(first: Sequence[int], owner: list[int], cell: int, dst: int) -> tuple[int, int]:
    """The free directions of the source ``cell`` and of ``dst`` once a slide from one
    to the other has taken ``dst``."""
    owner[dst] = -2
    room_src = free_dirs(first, owner, cell)
    room_dst = free_dirs(first, owner, dst)
    owner[dst] = 0
    return room_src, room_dst


def forced_split(room_src: int, room_dst: int, count: int) -> int:
    """The size a stack of ``count`` (> 2) splits by in both the area guess and the
    ``safe`` mode, from ``rooms``: one sheep into a destination left with no free
    direction, all but one off a source left with none; 0 where neither holds (the
    compiled kernel compiles this very function)."""
    if room_dst == 0:
        return 1
    if room_src == 0:
        return count - 1
    return 0


def area_split(first: Sequence[int], owner: list[int], count: int, cell: int, dst: int) -> int:
    """``strategies.common.area_split`` on the kernel's arrays (``count`` > 2)."""
    room_src, room_dst = rooms(first, owner, cell, dst)
    forced = forced_split(room_src, room_dst, count)
    if forced:
        return forced
    m = round(count * room_dst / (room_src + room_dst))
    return min(count - 1, max(1, m))


def safe_split(first: Sequence[int], owner: list[int], count: int, cell: int, dst: int) -> int:
    """The split the ``safe`` mode forces (``count`` > 2): one sheep into a destination
    left with no free direction, all but one off a source left with none; 0 where
    neither holds and the size is drawn."""
    room_src, room_dst = rooms(first, owner, cell, dst)
    return forced_split(room_src, room_dst, count)


def final_scores(board: Board, owner: list[int]) -> list[float]:
    """Each seat's exact score (index 0 is seat 1) by one flood fill of ``owner``, which
    it uses up (every owned cell reads free afterwards)."""
    neighbours = board.neighbours
    pw = board.pow
    score = [0.0, 0.0, 0.0, 0.0, 0.0]
    for start in board.cells:
        o = owner[start]
        if o > 0:
            score[o] += pw[flood(neighbours, owner, start, 0)]
    return score[1:]


def flood(neighbours: Sequence[Sequence[int]], owner: list[int], start: int, fill: int) -> int:
    """Relabel the region of ``start`` (the cells of its owner value joined to it) as
    ``fill`` (another value); its size."""
    o = owner[start]
    owner[start] = fill
    todo = [start]
    size = 0
    while todo:
        c = todo.pop()
        size += 1
        for nb in neighbours[c]:
            if owner[nb] == o:
                owner[nb] = fill
                todo.append(nb)
    return size


FIRST_PART = -2
"""``estimated_scores`` relabels the free cells of part ``k`` as ``FIRST_PART - k``."""


def estimated_scores(
    board: Board, owner: list[int], sheep: Sequence[int], live: Sequence[Sequence[int]]
) -> list[float]:
    """Each seat's score as the evaluation of a playout stopped early expects it (see
    ``strategies.kernel``). Uses up ``owner`` as ``final_scores`` does."""
    first = board.first
    # The free area, in parts connected as slides move (part k relabelled FIRST_PART - k).
    sizes: list[int] = []
    for start in board.cells:
        if owner[start] == 0:
            sizes.append(flood(board.around, owner, start, FIRST_PART - len(sizes)))
    # The sheep each seat can still move into each part, and in all.
    wants = [[0, 0, 0, 0, 0] for _ in sizes]
    movable = [0, 0, 0, 0, 0]
    for p in range(1, 5):
        for c in live[p]:
            seen: list[int] = []
            for f in first[8 * c : 8 * c + 8]:
                k = FIRST_PART - owner[f]
                if k >= 0 and k not in seen:
                    seen.append(k)
                    wants[k][p] += sheep[c] - 1
            if seen:
                movable[p] += sheep[c] - 1
    gain = [0.0, 0.0, 0.0, 0.0, 0.0]
    for k, size in enumerate(sizes):
        share_out(wants[k], size, gain)
    cells = [0, 0, 0, 0, 0]
    for c in board.cells:
        if owner[c] > 0:
            cells[owner[c]] += 1
    score = final_scores(board, owner)
    for p in range(1, 5):
        n = cells[p]
        score[p - 1] += (n + min(gain[p], movable[p])) ** 1.25 - n**1.25
    return score


def share_out(wants: list[int], size: int, gain: list[float]) -> None:
    """Share ``size`` free cells among the seats that want ``wants[seat]`` of them, as
    turn-by-turn play does (one cell per seat a round): equal shares, a seat that
    wants less than its share taking what it wants and leaving the rest to the others
    (the smallest want first, the lower seat on a tie). Adds the shares to ``gain``."""
    left = float(size)
    open_ = [p for p in range(1, 5) if wants[p] > 0]
    while open_:
        low = open_[0]
        for p in open_:
            if wants[p] < wants[low]:
                low = p
        share = left / len(open_)
        if wants[low] > share:
            for p in open_:
                gain[p] += share
            return
        gain[low] += wants[low]
        left -= wants[low]
        open_.remove(low)
