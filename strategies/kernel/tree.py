"""The compiled search tree: ``strategies.mcts_tree``'s tree policy, expansion and
backup below the root, in flat arrays, with the fast kernel's playouts (``[fast]``).

The Python tree spends about four fifths of an iteration in Python (descent,
make/unmake, expansion, rewards) around a compiled playout. Here a whole iteration
runs compiled: the position is copied from the root's arrays, the descent plays
its slides on the copy, a new node is expanded or created, the copy is played out
(``fast._scores``), the rewards are backed up. ``Mcts`` (``tree="compiled"``)
keeps the root in Python (its expansion, priors and restrictions, the fallback
move, the workers' root statistics) and calls ``CompiledTree.run`` for a chunk of
iterations at a time between looks at the clock.

Same choices as the Python tree, rule for rule: PUCT over slides with first-play
urgency, priors a softmax of ``strategies.common.slide_key`` at the area guess,
progressive widening of split sizes in ``split_candidates`` order with UCB1 among
the open ones, a seat's learned split rule as its only split, passes as nodes of
their own, max^n rewards (``score_rewards``, and ``paranoid_rewards``) backed up
per mover. The tests hold the priors, the split order and the rewards to the
Python functions. What it does not do: game 3's hidden counts (the Python tree's
information-set search serves them) and keeping the tree between turns (each
search starts from a new root).

Storage (rows grown by ``CompiledTree`` between chunks; a chunk stops early when
the next iteration might not fit):

- nodes: ``node_i[k] = (to_move, first edge, edges or -1 if not expanded, pass
  child or -1, terminal)``, ``node_n[k]`` visits;
- edges: ``edge_i[j] = (cell, dst, direction index, count, area guess, first split,
  last split, splits open, fixed split)``, ``edge_f[j] = (prior, reward sum)``,
  ``edge_n[j]`` visits;
- splits (a chain per edge in the order opened): ``split_i[s] = (size, visits,
  child or -1, next or -1)``, ``split_w[s]`` reward sum.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from state.game import GameState
from state.geometry import DIRECTION_KEYS
from state.scoring import PLACE_POINTS
from strategies.kernel import PASS, SPLIT_RULES, PlayoutPolicy
from strategies.kernel.fast import (
    AVAILABLE,
    _area_split,
    _context,
    _destination,
    _final_scores,
    _flood,
    _free_dirs,
    _mast_value,
    _moved,
    _pair,
    _rule_split,
    _scores,
    epsilon_array,
    jit,
    seat_array,
    tables_of,
)
from strategies.mcts_tree import Edge, Node, Split

if AVAILABLE:
    import numpy as np
if TYPE_CHECKING:
    from strategies.mcts import MctsParams

# Columns of node_i, edge_i and split_i.
N_MOVER, N_FIRST, N_EDGES, N_PASS, N_TERMINAL = range(5)
E_CELL, E_DST, E_DIR, E_COUNT, E_AREA, E_HEAD, E_TAIL, E_OPEN, E_FIXED, E_TOP = range(10)
S_SIZE, S_N, S_CHILD, S_NEXT = range(4)
NODE_COLS, EDGE_COLS, SPLIT_COLS = 5, 10, 4
FORCED = 7
"""The index in ``CompiledTree.ints`` of the root slide every iteration takes (-1: none)."""
NST_OWN = 8
"""The index in ``CompiledTree.ints`` of ``nst_context`` ("own": 1, "last": 0)."""


_GOLDEN = 0x9E3779B97F4A7C15


# ------------------------------------------------------------------- expansion
@jit
def _has_moves(owner: Any, sheep: Any, first: Any, cells: Any, p: int) -> bool:
    for c in cells:  # noqa: SIM110 (a loop: numba compiles no generator in any())
        if owner[c] == p and sheep[c] > 1 and _free_dirs(first, owner, c) > 0:
            return True
    return False


LABEL_BASE = -10
"""``_label_regions`` relabels region ``k`` of the seat as ``LABEL_BASE - k``."""


@jit
def _label_regions(
    owner: Any, cells: Any, nb_off: Any, nb_cells: Any, p: int, label: Any, size: Any
) -> None:
    """``label``: a copy of ``owner`` with region ``k`` of seat ``p`` relabelled
    ``LABEL_BASE - k`` (``fast._flood``); ``size[k]`` its size."""
    label[:] = owner
    todo = np.empty(cells.shape[0], np.int64)
    k = 0
    for start in cells:
        if label[start] == p:
            size[k] = _flood(label, start, LABEL_BASE - k, nb_off, nb_cells, todo)
            k += 1


@jit
def _slide_key(
    owner: Any, sheep: Any, first: Any, nb_off: Any, nb_cells: Any, pw: Any,
    label: Any, size: Any, me: int, ally: int, cell: int, dst: int, split: int, weights: Any,
) -> float:  # fmt: skip
    """``strategies.common.slide_key`` with ``weights`` (the gain from ``me``'s region
    labels)."""
    seen = np.empty(8, np.int64)
    n_seen = 0
    total = 1
    lost = 0.0
    for j in range(nb_off[dst], nb_off[dst + 1]):
        nb = nb_cells[j]
        if owner[nb] != me:
            continue
        k = LABEL_BASE - label[nb]
        new = True
        for m in range(n_seen):
            if seen[m] == k:
                new = False
        if new:
            seen[n_seen] = k
            n_seen += 1
            total += size[k]
            lost += pw[size[k]]
    gain = pw[total] - lost
    left = sheep[cell] - split
    owner[dst] = me
    stranded = 0
    if left > 1 and _free_dirs(first, owner, cell) == 0:
        stranded += left - 1
    room = _free_dirs(first, owner, dst)
    if split > 1 and room == 0:
        stranded += split - 1
    trapped = 0
    squeezed = 0
    foes = 0
    for k in range(8):
        c = first[8 * dst + k]
        o = owner[c]
        if o <= 0 or o == me or sheep[c] <= 1:
            continue
        if o != ally:
            foes += 1
            if _free_dirs(first, owner, c) == 0:
                trapped += min(sheep[c] - 1, 8) + 2
        else:
            squeezed += 1
            if _free_dirs(first, owner, c) == 0:
                squeezed += min(sheep[c] - 1, 8) + 2
    owner[dst] = 0
    return (  # type: ignore[no-any-return]
        weights[0] * gain + weights[1] * stranded + weights[2] * trapped
        + weights[3] * squeezed + weights[4] * min(room, 4) + weights[5] * room
        + weights[6] * foes
    )  # fmt: skip


@jit
def _new_split(split_i: Any, split_w: Any, counts: Any, size: int) -> int:
    s = counts[2]
    counts[2] += 1
    split_i[s, S_SIZE] = size
    split_i[s, S_N] = 0
    split_i[s, S_CHILD] = -1
    split_i[s, S_NEXT] = -1
    split_w[s] = 0.0
    return s  # type: ignore[no-any-return]


@jit
def _new_node(node_i: Any, node_n: Any, counts: Any, mover: int) -> int:
    k = counts[0]
    counts[0] += 1
    node_i[k, N_MOVER] = mover
    node_i[k, N_FIRST] = 0
    node_i[k, N_EDGES] = -1
    node_i[k, N_PASS] = -1
    node_i[k, N_TERMINAL] = 0
    node_n[k] = 0
    return k  # type: ignore[no-any-return]


@jit
def _expand(
    k: int, owner: Any, sheep: Any, tables: Any, ally_of: Any, rules: Any, temperature: float,
    weights: Any, node_i: Any, edge_i: Any, edge_f: Any, edge_n: Any, split_i: Any,
    split_w: Any, counts: Any,
) -> None:  # fmt: skip
    """``mcts_tree.expand``: the edges of node ``k`` for the position in ``owner`` and
    ``sheep``, or none (and terminal if no seat can move)."""
    first, ray_off, ray_cells, nb_off, nb_cells, cells, pw = tables[:7]
    me = node_i[k, N_MOVER]
    start = counts[1]
    n = 0
    label = np.empty(owner.shape[0], np.int64)
    size = np.empty(cells.shape[0] + 1, np.int64)
    labelled = False
    top = -1e300
    for cell in cells:
        if owner[cell] != me or sheep[cell] <= 1:
            continue
        count = sheep[cell]
        for d in range(8):
            dst = _destination(owner, ray_off, ray_cells, 8 * cell + d)
            if dst < 0:
                continue
            if not labelled:
                _label_regions(owner, cells, nb_off, nb_cells, me, label, size)
                labelled = True
            area = 1 if count <= 2 else _area_split(first, owner, count, cell, dst)
            j = start + n
            n += 1
            edge_i[j, E_CELL] = cell
            edge_i[j, E_DST] = dst
            edge_i[j, E_DIR] = d
            edge_i[j, E_COUNT] = count
            edge_i[j, E_AREA] = area
            edge_n[j] = 0
            edge_f[j, 1] = 0.0
            key = _slide_key(
                owner, sheep, first, nb_off, nb_cells, pw, label, size, me, ally_of[me],
                cell, dst, area, weights,
            )  # fmt: skip
            edge_f[j, 0] = key
            top = max(top, key)
            rule = rules[me]
            edge_i[j, E_FIXED] = 1 if rule != 0 else 0
            s = _new_split(split_i, split_w, counts, _rule_split(rule, count) if rule else area)
            edge_i[j, E_HEAD] = s
            edge_i[j, E_TAIL] = s
            edge_i[j, E_OPEN] = 1
            edge_i[j, E_TOP] = s
    counts[1] = start + n
    counts[4] += 1
    node_i[k, N_FIRST] = start
    node_i[k, N_EDGES] = n
    if n == 0:
        terminal = True
        for p in range(1, 5):
            if _has_moves(owner, sheep, first, cells, p):
                terminal = False
        node_i[k, N_TERMINAL] = 1 if terminal else 0
        return
    total = 0.0
    for j in range(start, start + n):
        e = math.exp((edge_f[j, 0] - top) / temperature)
        edge_f[j, 0] = e
        total += e
    for j in range(start, start + n):
        edge_f[j, 0] /= total


@jit
def _candidate(count_in: int, area_in: int, index: int) -> int:
    """``strategies.common.split_candidates(count, area)[index]``, or -1 past the end."""
    count = np.int64(count_in)
    area = np.int64(area_in)
    options = np.empty(4, np.int64)
    options[0] = area
    options[1] = count // 2
    options[2] = 1
    options[3] = count - 1
    firsts = np.empty(4, np.int64)
    n_first = 0
    for m in options:
        if 1 <= m < count:
            new = True
            for i in range(n_first):
                if firsts[i] == m:
                    new = False
            if new:
                firsts[n_first] = m
                n_first += 1
    if index < n_first:
        return int(firsts[index])
    i = n_first
    for d in range(1, count):
        for m in (area - d, area + d):
            if not 1 <= m < count:
                continue
            taken = False
            for f in range(n_first):
                if firsts[f] == m:
                    taken = True
            if taken:
                continue
            if i == index:
                return int(m)
            i += 1
    return -1


# --------------------------------------------------------------------- tree policy
@jit
def _select_edge(
    k: int, node_i: Any, node_n: Any, edge_f: Any, edge_n: Any, c_puct: float, fpu: float,
    edge_i: Any, mast_w: Any, mast_n: Any, mast_visits: float, split_i: Any, split_w: Any,
    split_value: float,
) -> int:  # fmt: skip
    """``mcts_tree.select_edge`` (every edge available). With ``mast_visits`` above 0
    and the MAST tables learned, a slide's value starts from the mover's learned value
    of the cell it lands on, worth that many visits, instead of first-play urgency.
    ``split_value`` is the share of a visited slide's value taken from the mean of its
    most visited split (``E_TOP``) instead of its own mean (``mcts_tree.Edge.value``)."""
    start = node_i[k, N_FIRST]
    end = start + node_i[k, N_EDGES]
    learned = mast_visits > 0 and mast_n.shape[0] > 0
    parent_q = 0.0
    if not learned:  # the first-play value (with MAST visits each slide has its own)
        nq = 0
        for j in range(start, end):
            if edge_n[j]:
                parent_q += edge_f[j, 1]
                nq += edge_n[j]
        parent_q = parent_q / nq - fpu if nq else 0.5
    sqrt_n = math.sqrt(node_n[k] + 1)
    p = node_i[k, N_MOVER]
    best_u = -1e18
    best = start
    for j in range(start, end):
        n = edge_n[j]
        w = edge_f[j, 1]  # the reward sum, that share of it from the top split's mean
        if n and split_value > 0:
            t = edge_i[j, E_TOP]
            w += split_value * (n * split_w[t] / split_i[t, S_N] - w)
        if learned:
            dst = edge_i[j, E_DST]
            m = _mast_value(mast_w, mast_n, p, dst)
            q = (w + mast_visits * m) / (n + mast_visits)
        else:
            q = w / n if n else parent_q
        u = q + c_puct * edge_f[j, 0] * sqrt_n / (1 + n)
        if u > best_u:
            best_u = u
            best = j
    return best  # type: ignore[no-any-return]


@jit
def _choose_split(
    j: int, edge_i: Any, edge_n: Any, split_i: Any, split_w: Any, counts: Any,
    c_split: float, pw_base: int, pw_c: float, pw_alpha: float,
) -> int:  # fmt: skip
    """``mcts_tree.choose_split``."""
    count = edge_i[j, E_COUNT]
    if count > 2 and not edge_i[j, E_FIXED]:
        width = pw_base + int(pw_c * edge_n[j] ** pw_alpha)
        opened = edge_i[j, E_OPEN]
        if opened < width:
            m = _candidate(count, edge_i[j, E_AREA], opened)
            if m > 0:
                s = _new_split(split_i, split_w, counts, m)
                split_i[edge_i[j, E_TAIL], S_NEXT] = s
                edge_i[j, E_TAIL] = s
                edge_i[j, E_OPEN] = opened + 1
    s = edge_i[j, E_HEAD]
    if split_i[s, S_NEXT] < 0:
        return s  # type: ignore[no-any-return]
    best_u = -1e18
    best = s
    log_n = math.log(edge_n[j] + 1)
    while s >= 0:
        n = split_i[s, S_N]
        if n == 0:
            return s  # type: ignore[no-any-return]
        u = split_w[s] / n + c_split * math.sqrt(log_n / n)
        if u > best_u:
            best_u = u
            best = s
        s = split_i[s, S_NEXT]
    return best  # type: ignore[no-any-return]


# ------------------------------------------------------------------------ rewards
@jit
def _rewards(scores: Any, partner: Any, margin: float, cells: int, points_table: Any) -> Any:
    """``strategies.common.score_rewards`` (``partner[seat]``: the team-mate, or 0)."""
    own = np.empty(4)
    for i in range(4):
        own[i] = np.rint(scores[i])
    results = np.empty(4)
    for i in range(4):
        q = partner[i + 1]
        results[i] = own[i] if q == 0 else (own[i] + own[q - 1]) / 2
    mean = results.sum() / 4
    out = np.empty(4)
    for i in range(4):
        greater = 0
        equal = 0
        for m in range(4):
            if results[m] > results[i]:
                greater += 1
            elif results[m] == results[i]:
                equal += 1
        share = 0.0
        for place in range(greater, greater + equal):
            share += points_table[place]
        share /= equal
        out[i] = (share - 1.0) * 0.25 + (results[i] - mean) * (margin / cells)
    return out


@jit
def _paranoid(r: Any, partner: Any, me: int, weight: float) -> None:
    """``strategies.common.paranoid_rewards``, in place."""
    loss = weight * (1.0 - r[me - 1])
    for i in range(4):
        seat = i + 1
        if seat != me and seat != partner[me]:
            r[i] = (1.0 - weight) * r[i] + loss


# ------------------------------------------------------------------------ the search
@jit
def _full(nodes: int, edges: int, splits: int, counts: Any, widest: int, cells: int) -> int:
    """Which arrays might not hold one more iteration (bits: 1 nodes, 2 edges, 4
    splits): one new node, an expansion of up to ``widest`` slides (one split each)
    and a split opened on every ply of the longest descent."""
    full = 0
    if counts[0] + 2 > nodes:
        full |= 1
    if counts[1] + widest > edges:
        full |= 2
    if counts[2] + widest + 4 * cells + 16 > splits:
        full |= 4
    return full


@jit
def _learn_cell(
    r: Any, p: int, dst: int, prev: int, n: int, mast_w: Any, mast_n: Any
) -> None:  # fmt: skip
    """Seat ``p``'s reward into its value of ``dst``, and with the pairs' columns
    (``nst``) into its value of ``dst`` after ``prev`` (-1: none)."""
    mast_w[p, dst] += r[p - 1]
    mast_n[p, dst] += 1
    k = _pair(mast_n, n, prev, dst)
    if k >= 0:
        mast_w[p, k] += r[p - 1]
        mast_n[p, k] += 1


@jit
def _learn_cells(
    r: Any, depth: int, path_edge: Any, path_mover: Any, edge_i: Any, to_move: int,
    played: int, turns: Any, mast_w: Any, mast_n: Any, n: int, own: bool, last: Any,
) -> None:  # fmt: skip
    """One iteration's rewards into each mover's values of the cells it took: the
    descent's slides, then the playout's recorded turns (its first mover ``to_move``,
    the seats in turn; passes take no cell). With the pairs' columns (``nst``) also
    into its values of each cell after the cell its context took (``fast._context``:
    the last slide before it, or with ``own`` the mover's own last slide; passes are
    skipped, the descent's first slide has none). ``last``: scratch for the contexts."""
    last[:] = -1
    for i in range(depth):
        j = path_edge[i]
        if j >= 0:
            p = path_mover[i]
            dst = edge_i[j, E_DST]
            _learn_cell(r, p, dst, _context(last, p, own), n, mast_w, mast_n)
            _moved(last, p, dst)
    for t in range(min(played, turns.shape[0])):
        if turns[t, 0] != PASS:
            p = (to_move - 1 + t) % 4 + 1
            dst = turns[t, 1]
            _learn_cell(r, p, dst, _context(last, p, own), n, mast_w, mast_n)
            _moved(last, p, dst)


@jit
def _run(
    root_owner: Any, root_sheep: Any, root_done: Any, tables: Any, config: Any, ints: Any,
    seat_rules: Any, seat_splits: Any, seat_eps: Any, partner: Any, points_table: Any,
    node_i: Any, node_n: Any, edge_i: Any, edge_f: Any, edge_n: Any, split_i: Any,
    split_w: Any, counts: Any, rng: Any, iterations: int, stream: Any, turns: Any,
    mast_w: Any, mast_n: Any,
) -> int:  # fmt: skip
    """Up to ``iterations`` iterations from node 0; the number done (fewer when the
    arrays might not hold the next one). ``config``: c_puct, fpu (both at ``me``'s
    nodes), c_split, pw_c, pw_alpha, temperature (the priors' at ``me``'s nodes), margin,
    paranoia, MAST visits, fpu and c_puct at the other seats' nodes, the split
    value share (``_select_edge``), the priors' temperature at the other seats' nodes,
    then the priors' key weights at ``me``'s nodes and at the others'
    (``MctsParams.prior_weights_at``);
    ``ints``: pw_base, depth cap, samples, the playouts' split mode
    (``PlayoutPolicy.split_code``), cutoff, me, the widest expansion, the root slide
    every iteration takes (``FORCED``; -1: the tree policy's choice), the pairs'
    context (``NST_OWN``); ``seat_eps``: each seat's random share in the playouts
    (``PlayoutPolicy.epsilons``);
    ``counts``: nodes, edges, splits, the deepest path, nodes expanded. ``mast_w`` and
    ``mast_n`` not empty (then ``turns`` has room for a playout): each seat's reward sum
    and count per cell it took in an iteration, in the tree and in the playout, learned
    here and read by the playouts' greedy moves (``fast._mast_slide``) and, with MAST
    visits, by the tree policy (``_select_edge``)."""
    c_puct, fpu, c_split = config[0], config[1], config[2]
    pw_c, pw_alpha, temperature = config[3], config[4], config[5]
    margin, paranoia, mast_visits = config[6], config[7], config[8]
    fpu_other, c_other, split_value = config[9], config[10], config[11]
    temperature_other = config[12]
    terms = (config.shape[0] - 13) // 2
    weights, weights_other = config[13 : 13 + terms], config[13 + terms :]
    pw_base, depth_cap, samples, splits = ints[0], ints[1], ints[2], ints[3]
    cutoff, me, widest, forced = ints[4], ints[5], ints[6], ints[FORCED]
    own = ints[NST_OWN] != 0
    first, ray_off, ray_cells, nb_off, nb_cells, cells, pw, ar_off, ar_cells = tables
    n = root_owner.shape[0]
    longest = 4 * n + 16
    owner = np.empty(n + 1, np.int64)
    sheep = np.empty(n, np.int64)
    path_edge = np.empty(longest, np.int64)
    path_item = np.empty(longest, np.int64)
    path_mover = np.empty(longest, np.int64)
    last = np.empty(5, np.int64)
    done = 0
    while done < iterations:
        if _full(node_i.shape[0], edge_i.shape[0], split_i.shape[0], counts, widest, n):
            break
        owner[:n] = root_owner
        owner[n] = -1
        sheep[:] = root_sheep
        k = 0
        to_move = node_i[0, N_MOVER]
        depth = 0
        finished = False
        while True:
            if node_i[k, N_EDGES] < 0:
                mine = node_i[k, N_MOVER] == me
                t = temperature if mine else temperature_other
                _expand(
                    k, owner, sheep, tables, partner, seat_rules, t,
                    weights if mine else weights_other,
                    node_i, edge_i, edge_f, edge_n, split_i, split_w, counts,
                )  # fmt: skip
                finished = node_i[k, N_EDGES] == 0 and node_i[k, N_TERMINAL] == 1
                break
            path_mover[depth] = to_move
            if node_i[k, N_EDGES] == 0:
                if node_i[k, N_TERMINAL]:
                    finished = True
                    break
                # The seat to move has no slide: it passes.
                to_move = to_move % 4 + 1
                child = node_i[k, N_PASS]
                made = child < 0
                if made:
                    if depth_cap and depth >= depth_cap:
                        break  # at the cap: played out from here
                    child = _new_node(node_i, node_n, counts, to_move)
                    node_i[k, N_PASS] = child
                path_edge[depth] = -1
                path_item[depth] = child
                depth += 1
                if made:
                    break  # a new node: played out from here
                k = child
                continue
            if depth == 0 and forced >= 0:
                j = forced  # sequential halving gives the root slide (``Mcts._halve``)
            else:
                j = _select_edge(
                    k, node_i, node_n, edge_f, edge_n, c_puct if to_move == me else c_other,
                    fpu if to_move == me else fpu_other, edge_i, mast_w, mast_n, mast_visits,
                    split_i, split_w, split_value,
                )  # fmt: skip
            s = _choose_split(
                j, edge_i, edge_n, split_i, split_w, counts, c_split, pw_base, pw_c, pw_alpha
            )
            split = split_i[s, S_SIZE]
            sheep[edge_i[j, E_CELL]] -= split
            dst = edge_i[j, E_DST]
            owner[dst] = to_move
            sheep[dst] = split
            to_move = to_move % 4 + 1
            path_edge[depth] = j
            path_item[depth] = s
            depth += 1
            child = split_i[s, S_CHILD]
            if child < 0:
                if not (depth_cap and depth >= depth_cap):
                    split_i[s, S_CHILD] = _new_node(node_i, node_n, counts, to_move)
                break
            k = child
        if depth > counts[3]:
            counts[3] = depth
        if finished:
            score = _final_scores(owner, cells, nb_off, nb_cells, pw)
            played = 0
        else:
            z = rng[0] + np.uint64(_GOLDEN)
            rng[0] = z
            # The cells of the descent's last slide and of each seat's (passes are not
            # moves): only the pairs' values (``nst``) read them.
            last[:] = -1
            if mast_n.shape[1] > n:
                for i in range(depth):
                    if path_edge[i] >= 0:
                        _moved(last, path_mover[i], edge_i[path_edge[i], E_DST])
            score, played, _ = _scores(
                owner[:n], sheep, to_move, root_done, first, ray_off, ray_cells, nb_off,
                nb_cells, cells, pw, ar_off, ar_cells, seat_eps, samples, splits, seat_splits,
                cutoff, np.int64(z >> np.uint64(1)), stream, turns,  # type: ignore[arg-type]
                mast_w, mast_n, last, own,
            )  # fmt: skip
        r = _rewards(score, partner, margin, cells.shape[0], points_table)
        if paranoia:
            _paranoid(r, partner, me, paranoia)
        if mast_n.shape[0] > 0:
            _learn_cells(
                r, depth, path_edge, path_mover, edge_i, to_move, played, turns, mast_w,
                mast_n, n, own, last,
            )  # fmt: skip
        node_n[0] += 1
        for i in range(depth):
            j = path_edge[i]
            item = path_item[i]
            if j < 0:
                node_n[item] += 1
                continue
            reward = r[path_mover[i] - 1]
            edge_n[j] += 1
            edge_f[j, 1] += reward
            split_i[item, S_N] += 1
            split_w[item] += reward
            top = edge_i[j, E_TOP]
            if item != top and split_i[item, S_N] > split_i[top, S_N]:
                edge_i[j, E_TOP] = item
            child = split_i[item, S_CHILD]
            if child >= 0:
                node_n[child] += 1
        done += 1
    return done


# ------------------------------------------------------------------- the driver
START_EDGES = 1 << 20
"""The slides a tree has room for at first (about 110 MB with its nodes and splits,
touched only as used): about a 3 s search in game 1's opening."""
MAX_EDGES = 1 << 23
"""The slides, or the nodes, a tree may hold (about 500 MB with the splits): a
search that fills them stops there (millions of iterations, beyond a 3 s move)."""


class CompiledTree:
    """One search's compiled tree below ``root``, a Python node already expanded
    (its edges, priors and restrictions are the search's root slides): ``run``
    iterates, ``sync_root`` writes the root slides' statistics back into ``root``'s
    edges, where ``Mcts.best`` and the workers' ``root_stats`` read them."""

    def __init__(
        self,
        state: GameState,
        root: Node,
        params: MctsParams,
        policy: PlayoutPolicy,
        split_rules: Mapping[int, str],
        seed: int,
        edges: int = 0,
    ) -> None:
        """``edges``: the edge rows to start with (0: enough for most 1 s searches
        before the first ``grow``)."""
        assert root.edges is not None
        setting = state.setting
        self.root = root
        self.edges: list[Edge] = root.edges
        self.tables = tables_of(state.geometry)
        self.root_owner = np.array(state.owner, np.int64)
        self.root_sheep = np.array(state.sheep, np.int64)
        self.root_done = np.array(state.done, np.bool_)
        self.config = np.array(
            [
                params.c_puct, params.fpu, params.c_split, params.pw_c, params.pw_alpha,
                params.prior_temperature, params.margin, params.paranoia, params.mast_visits,
                params.fpu_other, params.other_c_puct, params.split_value,
                params.other_prior_temperature, *params.prior_weights, *params.other_prior_weights,
            ],
            np.float64,
        )  # fmt: skip
        widest = 8 * setting.sheep + 8
        self.ints = np.array(
            [
                params.pw_base, params.tree_depth, policy.samples, policy.split_code,
                policy.cutoff, state.to_move, widest, -1, int(params.nst_context == "own"),
            ],
            np.int64,
        )  # fmt: skip
        self.seat_rules = np.zeros(5, np.int64)
        for seat, name in split_rules.items():
            self.seat_rules[seat] = SPLIT_RULES.index(name)
        self.seat_splits = seat_array(policy.seat_splits)
        self.seat_eps = epsilon_array(policy)
        self.partner = np.array([0] + [setting.partner(s) or 0 for s in (1, 2, 3, 4)], np.int64)
        self.points = np.array(PLACE_POINTS, np.float64)
        # Room for a 3 s search, allocated but not touched: the pages are the
        # system's until an iteration writes them, and a copy to grow (tens of
        # milliseconds at this size) stays the rare case it should be near a deadline.
        edges = max(edges or START_EDGES, 2 * widest + len(root.edges))
        nodes = max(edges // 4, 16)
        self.node_i = np.empty((nodes, NODE_COLS), np.int32)
        self.node_n = np.zeros(nodes, np.int64)
        self.edge_i = np.empty((edges, EDGE_COLS), np.int32)
        self.edge_f = np.empty((edges, 2), np.float64)
        self.edge_n = np.zeros(edges, np.int64)
        self.split_i = np.empty((2 * edges, SPLIT_COLS), np.int32)
        self.split_w = np.zeros(2 * edges, np.float64)
        self.counts = np.zeros(5, np.int64)
        self.rng = np.array([seed & (2**64 - 1)], np.uint64)
        self.stream = np.empty(0, np.float64)
        cells = len(state.owner)
        mast = params.mast and min(policy.epsilons[1:]) < 1.0
        self.turns = np.empty((4 * (cells + 2) if mast else 0, 3), np.int64)
        # With ``nst`` each row holds the cells' values, then every pair's (``_nst_value``).
        width = cells + cells * cells if params.nst else cells
        self.mast_w = np.zeros((5, width) if mast else (0, 0), np.float64)
        self.mast_n = np.zeros((5, width) if mast else (0, 0), np.int64)
        # Node 0 is the root, its edges the Python root's.
        _new_node(self.node_i, self.node_n, self.counts, state.to_move)
        self.node_i[0, N_FIRST] = 0
        self.node_i[0, N_EDGES] = len(self.edges)
        self.node_i[0, N_TERMINAL] = int(root.terminal)
        index = {key: k for k, key in enumerate(DIRECTION_KEYS)}
        for j, e in enumerate(self.edges):
            self.edge_i[j, :E_HEAD] = (e.cell, e.dst, index[e.direction], e.count, e.area)
            self.edge_f[j] = (e.prior, 0.0)
            head = tail = -1
            for sp in e.splits:
                s = _new_split(self.split_i, self.split_w, self.counts, sp.split)
                if tail >= 0:
                    self.split_i[tail, S_NEXT] = s
                else:
                    head = s
                tail = s
            self.edge_i[j, E_HEAD : E_TOP + 1] = (head, tail, len(e.splits), e.cands == [], head)
        self.counts[1] = len(self.edges)

    @property
    def expanded(self) -> int:
        return int(self.counts[4])

    @property
    def depth(self) -> int:
        return int(self.counts[3])

    def run(self, iterations: int) -> int:
        """Up to ``iterations`` iterations; the number done. Fewer means the arrays
        were full: ``grow`` them and go on."""
        done = _run(
            self.root_owner, self.root_sheep, self.root_done, self.tables, self.config,
            self.ints, self.seat_rules, self.seat_splits, self.seat_eps, self.partner, self.points,
            self.node_i, self.node_n, self.edge_i, self.edge_f, self.edge_n, self.split_i,
            self.split_w, self.counts, self.rng, iterations, self.stream, self.turns,
            self.mast_w, self.mast_n,
        )  # fmt: skip
        return int(done)

    def force(self, edge: int) -> None:
        """Every iteration from now takes root slide ``edge`` (an index of ``root.edges``)
        and the tree policy below it; -1 gives the root back to the tree policy."""
        self.ints[FORCED] = edge

    def grow(self) -> bool:
        """Double the arrays that are full (nodes, slides or splits); False when the
        slides or the nodes would pass ``MAX_EDGES``."""
        full = _full(
            self.node_i.shape[0], self.edge_i.shape[0], self.split_i.shape[0], self.counts,
            int(self.ints[6]), len(self.root_owner),
        )  # fmt: skip
        groups = (
            (1, ("node_i", "node_n")),
            (2, ("edge_i", "edge_f", "edge_n")),
            (4, ("split_i", "split_w")),
        )
        if 2 * max(self.edge_i.shape[0], self.node_i.shape[0]) > MAX_EDGES and full & 3:
            return False
        for bit, names in groups:
            if full & bit:
                for name in names:
                    a = getattr(self, name)
                    setattr(self, name, np.concatenate([a, np.zeros_like(a)]))
        return True

    def carry_mast(self, mast_w: Any, mast_n: Any, visits: int) -> None:
        """Start this search's MAST tables from an earlier search's of the same game
        (``mast_w``, ``mast_n``; ``MctsParams.mast_carry``): each seat's learned value of
        each cell kept, its visits cut to at most ``visits``, so that early playouts
        play by what the last search learned and this search's own visits soon
        outweigh it. Nothing when this tree has no MAST tables or another board's."""
        if self.mast_n.shape != mast_n.shape or self.mast_n.shape[0] == 0:
            return
        kept = np.minimum(mast_n, visits)
        self.mast_n[:] = kept
        self.mast_w[:] = np.where(mast_n > 0, mast_w * kept / np.maximum(mast_n, 1), 0.0)

    def sync_root(self) -> None:
        """The root's visits and its slides' statistics, from the arrays into ``root``."""
        sync_roots(self.root, [self])


def sync_roots(root: Node, trees: Sequence[CompiledTree]) -> None:
    """The root statistics of ``trees`` (searches below the same root slides, each
    in its own world in game 3), summed into ``root``: its visits, each slide's
    visits and value, and each split size's (in the order the first tree opened
    them, then the others')."""
    assert root.edges is not None
    root.n = sum(int(t.node_n[0]) for t in trees)
    for j, e in enumerate(root.edges):
        e.n, e.w = 0, 0.0
        by_size: dict[int, Split] = {}
        for t in trees:
            e.n += int(t.edge_n[j])
            e.w += float(t.edge_f[j, 1])
            split_i, split_w = t.split_i, t.split_w
            s = int(t.edge_i[j, E_HEAD])
            while s >= 0:
                size = int(split_i[s, S_SIZE])
                sp = by_size.get(size)
                if sp is None:
                    sp = by_size[size] = Split(size)
                sp.n += int(split_i[s, S_N])
                sp.w += float(split_w[s])
                s = int(split_i[s, S_NEXT])
        e.splits = list(by_size.values())
        e.top = max(e.splits, key=lambda sp: sp.n)


def compile_tree() -> None:
    """Compile (or load from numba's cache) the tree: a short search on a start."""
    from state.boardgen import random_geometry
    from state.playout import random_placement
    from state.settings import get_setting
    from strategies.mcts import MctsParams
    from strategies.mcts_tree import expand

    setting = get_setting(1)
    rng = random.Random(0)
    state = GameState(setting, random_geometry(setting, 1))
    random_placement(state, rng)
    root = Node(state.to_move, state.hash)
    expand(root, state, 2.0)
    tree = CompiledTree(state, root, MctsParams(), PlayoutPolicy(0.3, 3), {}, 1)
    tree.run(8)
    tree.sync_root()
