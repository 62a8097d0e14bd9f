"""Pieces every searching strategy shares: determinization, rewards, cheap evaluation
and split guesses (the playouts are the kernel's: ``strategies.kernel``).

Everything here works on a ``GameState`` by make/unmake and leaves it as it found it.
"""

from __future__ import annotations

from collections.abc import Sequence

from state.belief import guess_counts
from state.game import UNKNOWN, GameState
from state.geometry import FREE, free_dirs
from state.scoring import ranked_results, tournament_points
from state.settings import PLAYERS, GameSetting

# --------------------------------------------------------------- game 3: hidden counts


def determinize(state: GameState, seat: int) -> GameState:
    """A state whose hidden counts (game 3) are filled in with a guess; the state itself
    when nothing is hidden.

    The guess is the reference agent's, ``state.belief.guess_counts``: each
    opponent's sheep not accounted for by its known stacks spread evenly over its
    hidden stacks (at least 1 each).
    """
    sheep = state.sheep
    if not any(sheep[c] == UNKNOWN for p in PLAYERS for c in state.stacks[p]):
        return state
    counts: dict[int, int] = {}
    for p in PLAYERS:
        counts.update(guess_counts(state, p))
    return state.with_counts(counts)


# ------------------------------------------------------------------------ rewards


def final_results(state: GameState) -> list[float]:
    """What ranks the seats: rounded scores, or the pair averages in game 4."""
    return ranked_results(state.setting, state.scores())


def rewards(state: GameState, margin: float) -> list[float]:
    """Per-seat reward (index 0 is seat 1) of a finished game: see ``score_rewards``."""
    return score_rewards(state.setting, state.exact_scores(), margin)


def score_rewards(setting: GameSetting, scores: Sequence[float], margin: float) -> list[float]:
    """Per-seat reward (index 0 is seat 1) of a game that ended with these exact scores:
    rank points scaled to [0, 1] plus a small score-margin term, so that among equal
    ranks a bigger lead is preferred. In game 4 the ranking is by pair average, so
    partners share it."""
    results = ranked_results(setting, [round(s) for s in scores])
    points = tournament_points(results)
    mean = sum(results) / 4
    scale = margin / setting.cells
    return [(points[i] - 1.0) * 0.25 + (results[i] - mean) * scale for i in range(4)]


def paranoid_rewards(
    setting: GameSetting, r: Sequence[float], me: int, weight: float
) -> list[float]:
    """``r`` (per seat, index 0 is seat 1) with each other seat's reward moved by
    ``weight`` towards our loss (``1 - r[me]``): 0 leaves max^n (every seat for itself),
    1 is paranoid (every other seat plays against us). Our partner (game 4) shares
    our reward already and keeps it."""
    ours = r[me - 1]
    team = (me, setting.partner(me))
    keep = 1.0 - weight
    loss = weight * (1.0 - ours)
    return [x if i + 1 in team else keep * x + loss for i, x in enumerate(r)]


# ------------------------------------------------------------------- local geometry


def only_move(state: GameState, slides: Sequence[tuple[int, int, int]]) -> bool:
    """Whether ``slides`` (``state.slides()``) leave a single legal move: one slide of a
    stack of 2, which splits off 1. Nothing to search; the strategies play it at once."""
    return len(slides) == 1 and state.sheep[slides[0][0]] == 2


def area_split(state: GameState, cell: int, dst: int) -> int:
    """A split guess: sheep in proportion to the room around the destination versus
    the room left around the source (both counted after the slide)."""
    count = state.sheep[cell]
    if count <= 2:
        return 1
    owner = state.owner
    rays = state.geometry.rays
    owner[dst] = -2  # occupied for the count, restored below
    room_src = free_dirs(owner, rays[cell])
    room_dst = free_dirs(owner, rays[dst])
    owner[dst] = FREE
    if room_dst == 0:
        return 1
    if room_src == 0:
        return count - 1
    m = round(count * room_dst / (room_src + room_dst))
    return min(count - 1, max(1, m))


def split_candidates(count: int, area: int) -> list[int]:
    """All split sizes of a stack, the promising ones first: the area guess, half,
    1 and count-1, then the rest by closeness to the area guess."""
    first: list[int] = []
    for m in (area, count // 2, 1, count - 1):
        if 1 <= m < count and m not in first:
            first.append(m)
    rest = sorted((m for m in range(1, count) if m not in first), key=lambda m: abs(m - area))
    return first + rest


# ---------------------------------------------------------------- cheap evaluation


class EvalWeights:
    """Weights of ``evaluate``; plain attributes so the hot path reads them fast."""

    __slots__ = ("mobility", "potential", "waste")

    def __init__(self, potential: float, waste: float, mobility: float) -> None:
        self.potential = potential
        self.waste = waste
        self.mobility = mobility


def evaluate(state: GameState, w: EvalWeights) -> list[float]:
    """An estimate of each seat's final score (index 0 is seat 1).

    Current score, plus the cells its movable sheep can still claim (at most the free
    area its live stacks touch, shared among the seats that touch the same free
    area), minus sheep stuck for good on stacks that can never move again, plus a
    little mobility.
    """
    return [
        score + w.potential * potential - w.waste * stuck + w.mobility * min(open_dirs, 8)
        for score, _, stuck, open_dirs, _, potential in seat_features(state)
    ]


SEAT_FEATURES = ("score", "movable", "stuck", "open", "room", "potential")
"""What ``seat_features`` measures of each seat, in order: its exact score now, the
sheep (all but one a stack) on its stacks with an open direction and on those boxed
in for good, its open slide directions, the free area its movable stacks touch (each
part shared evenly among the seats touching it) and ``evaluate``'s potential (the
smaller of movable sheep and room)."""


def seat_features(state: GameState) -> list[tuple[float, ...]]:
    """``SEAT_FEATURES`` of each seat (index 0 is seat 1): what ``evaluate`` adds up,
    term by term, for a learned evaluation to weigh (``bench value``)."""
    # Per seat: sheep on live stacks, sheep stuck for good, open directions, and
    # the free areas its live stacks touch.
    extra = [0, 0, 0, 0]
    waste = [0, 0, 0, 0]
    mob = [0, 0, 0, 0]
    areas_of: list[list[int]] = [[], [], [], []]
    # Per free area: its size, and the bit mask of seats whose live stacks touch it.
    sizes: list[int] = []
    touch: list[int] = []
    _survey_stacks(state, extra, waste, mob, areas_of, sizes, touch)
    exact = state.exact_scores()
    out: list[tuple[float, ...]] = []
    for i in range(4):
        room = _shared_room(areas_of[i], sizes, touch)
        movable = float(extra[i])
        out.append((exact[i], movable, float(waste[i]), float(mob[i]), room, min(movable, room)))
    return out


def _survey_stacks(
    state: GameState,
    extra: list[int],
    waste: list[int],
    mob: list[int],
    areas_of: list[list[int]],
    sizes: list[int],
    touch: list[int],
) -> None:
    """Fill ``evaluate``'s lists: each stack of more than one sheep is live (an open
    direction) or stuck for good; each free area a live stack opens onto is measured
    once and marked as touched by the stack's seat."""
    owner = state.owner
    sheep = state.sheep
    rays = state.geometry.rays
    label: dict[int, int] = {}  # free cell -> its area
    for p in PLAYERS:
        i = p - 1
        bit = 1 << i
        areas = areas_of[i]
        for cell in state.stacks[p]:
            count = sheep[cell]
            if count <= 1:
                continue
            live = False
            for ray in rays[cell]:
                if not ray:
                    continue
                c = ray[0]
                if owner[c] != FREE:
                    continue
                live = True
                mob[i] += 1
                a = label.get(c)
                if a is None:
                    a = len(sizes)
                    sizes.append(_label_free_area(c, a, label, owner, rays))
                    touch.append(0)
                if not touch[a] & bit:
                    touch[a] |= bit
                    areas.append(a)
            if live:
                extra[i] += count - 1
            else:
                waste[i] += count - 1


def _label_free_area(
    start: int,
    a: int,
    label: dict[int, int],
    owner: Sequence[int],
    rays: Sequence[Sequence[Sequence[int]]],
) -> int:
    """Label the free area of ``start`` (8-connected, as slides move) ``a``; its size."""
    label[start] = a
    stack = [start]
    size = 0
    while stack:
        x = stack.pop()
        size += 1
        for r in rays[x]:
            if r:
                y = r[0]
                if owner[y] == FREE and y not in label:
                    label[y] = a
                    stack.append(y)
    return size


def _shared_room(areas: Sequence[int], sizes: Sequence[int], touch: Sequence[int]) -> float:
    """The free cells of ``areas``, each area shared evenly among the seats touching it."""
    share = 0.0
    for a in areas:
        t = touch[a]
        share += sizes[a] / ((t & 1) + (t >> 1 & 1) + (t >> 2 & 1) + (t >> 3 & 1))
    return share


def relative_value(values: Sequence[float], seat: int, setting: GameSetting) -> float:
    """One number for ``seat`` from per-seat values: own (or pair) value minus the best
    opponent's, with a little of the mean of the others so that all of them count."""
    i = seat - 1
    partner = setting.partner(seat)
    if partner is not None:
        mine = (values[i] + values[partner - 1]) / 2
        a, b = (q - 1 for q in PLAYERS if q not in (seat, partner))
        theirs = (values[a] + values[b]) / 2
        return mine - theirs
    others = [values[j] for j in range(4) if j != i]
    return values[i] - 0.75 * max(others) - 0.25 * sum(others) / 3


# -------------------------------------------------------------------- move features


PRIOR_TERMS = ("gain", "stranded", "trapped", "squeezed", "room4", "room", "foes")
"""What ``slide_terms`` measures of a slide, in order (see there)."""
KEY_WEIGHTS: tuple[float, ...] = (1.0, -1.5, 1.0, -0.5, 0.3, 0.0, 0.0)
"""The hand-set weights of ``slide_key``'s terms: move ordering, and the tree's priors
by default (``MctsParams.prior_weights``)."""


def slide_terms(state: GameState, cell: int, dst: int, split: int) -> tuple[float, ...]:
    """What a slide of the player to move does, measured locally (``PRIOR_TERMS``).

    Looks at the board as the slide would leave it (only ``dst`` changes owner; the
    slide itself is not played, this is the expansion's hot path):

    - ``gain``: the exact score gained by taking ``dst``;
    - ``stranded``: sheep left on a stack that can never move again (at the source or
      at the destination), all but one of each;
    - ``trapped``: opponents' stacks next to ``dst`` that it boxes in for good, each
      ``min(sheep - 1, 8) + 2``;
    - ``squeezed`` (game 4): the partner's live stacks next to ``dst``, and the same
      measure of those it boxes in;
    - ``room4`` and ``room``: the directions a stack on ``dst`` could slide, at most 4
      and all;
    - ``foes``: opponents' live stacks next to ``dst`` (each loses a direction).
    """
    me = state.to_move
    owner = state.owner
    sheep = state.sheep
    rays = state.geometry.rays
    gain = state.regions.gain(dst, me, owner)
    count = sheep[cell]
    left = count if count == UNKNOWN else count - split
    owner[dst] = me  # taken for the counts below, freed again at the end
    stranded = 0
    if left > 1 and free_dirs(owner, rays[cell]) == 0:
        stranded += left - 1
    room = free_dirs(owner, rays[dst])
    if split > 1 and room == 0:
        stranded += split - 1
    trapped = 0
    squeezed = 0
    foes = 0
    ally = state.setting.partner(me) or me
    for ray in rays[dst]:
        if not ray:
            continue
        c = ray[0]
        o = owner[c]
        if o <= 0 or o == me or sheep[c] <= 1:
            continue
        if o != ally:
            foes += 1
            if free_dirs(owner, rays[c]) == 0:
                trapped += min(sheep[c] - 1, 8) + 2
        else:
            # Game 4: a cell next to the partner's live stack is room the pair had
            # anyway; trapping the partner costs the pair what trapping an opponent wins.
            squeezed += 1
            if free_dirs(owner, rays[c]) == 0:
                squeezed += min(sheep[c] - 1, 8) + 2
    owner[dst] = FREE
    return (gain, stranded, trapped, squeezed, min(room, 4), room, foes)


def slide_key(
    state: GameState, cell: int, dst: int, split: int, weights: Sequence[float] = KEY_WEIGHTS
) -> float:
    """Cheap local worth of a slide for the player to move (priors, move ordering): its
    terms (``slide_terms``) weighted by ``weights``."""
    return weigh(slide_terms(state, cell, dst, split), weights)


def weigh(terms: Sequence[float], weights: Sequence[float]) -> float:
    """A slide's key from its terms (``PRIOR_TERMS``' order): their sum by ``weights``
    (written out, not a generator: it is on the expansion's hot path)."""
    gain, stranded, trapped, squeezed, room4, room, foes = terms
    w = weights
    return (
        w[0] * gain + w[1] * stranded + w[2] * trapped + w[3] * squeezed
        + w[4] * room4 + w[5] * room + w[6] * foes
    )  # fmt: skip
