"""Initial placement by evaluation: room to expand, distance from opponents, the shape
of the free area, then playouts from the best few cells while the time allows."""

from __future__ import annotations

import random
import time

from state.game import GameState
from state.geometry import FREE
from strategies.base import Budget
from strategies.common import score_rewards
from strategies.kernel import PlayoutKernel, PlayoutPolicy


def static_placement_scores(state: GameState) -> dict[int, float]:
    """A score per free border cell (higher is better), from the position alone.

    Long free rays mean room to slide; many free cells close by mean an area to
    grow into; distance from placed opponents means less contest, and in game 4
    distance from the partner (weighted more) means the pair does not share its room.
    """
    owner = state.owner
    geometry = state.geometry
    n = geometry.size
    me = state.to_move
    ally = state.setting.partner(me)
    others = [
        c for p in (1, 2, 3, 4) if p not in (me, ally) for c in state.stacks[p] if owner[c] == p
    ]
    # Game 4: room shared with the partner is room the pair already has.
    partner = state.stacks[ally] if ally else []
    out: dict[int, float] = {}
    for cell in state.initial_positions():
        rays_room = 0
        for ray in geometry.rays[cell]:
            k = 0
            for c in ray:
                if owner[c] != FREE or k >= 5:
                    break
                k += 1
            rays_room += k
        x, y = divmod(cell, n)
        local = 0
        for dx in range(-2, 3):
            for dy in range(-2, 3):
                cx, cy = x + dx, y + dy
                if 0 <= cx < n and 0 <= cy < n and owner[cx * n + cy] == FREE:
                    local += 1
        dist = 8
        for c in others:
            ox, oy = divmod(c, n)
            dist = min(dist, max(abs(ox - x), abs(oy - y)))
        near = 8
        for c in partner:
            ox, oy = divmod(c, n)
            near = min(near, max(abs(ox - x), abs(oy - y)))
        out[cell] = 1.0 * rays_room + 0.6 * local + 1.5 * min(dist, 5) + 2.0 * min(near, 5)
    return out


def choose_placement(
    state: GameState,
    budget: Budget,
    rng: random.Random,
    time_fraction: float,
    candidates: int,
    kernel: PlayoutKernel,
    policy: PlayoutPolicy,
    margin: float,
) -> int:
    """The placement cell: the static best at once, then playouts from the best
    ``candidates`` cells (others place by the static score, with some noise) for
    ``time_fraction`` of the remaining time, highest mean reward wins."""
    scores = static_placement_scores(state)
    ranked = sorted(scores, key=lambda c: -scores[c])
    best = ranked[0]
    budget.offer_placement(best)
    top = ranked[: max(1, candidates)]
    if len(top) == 1 or time_fraction <= 0:
        return best
    me = state.to_move
    stop_at = time.monotonic() + max(0.0, budget.remaining()) * time_fraction
    total = {c: 0.0 for c in top}
    visits = {c: 0 for c in top}
    rounds = 0
    while not budget.expired() and time.monotonic() < stop_at:
        for cell in top:
            state.place(cell)
            placed = 1
            while state.placing:
                s = static_placement_scores(state)
                order = sorted(s, key=lambda c: -s[c])
                state.place(order[rng.randrange(min(3, len(order)))])
                placed += 1
            final = kernel.scores(state, policy, rng)
            total[cell] += score_rewards(state.setting, final, margin)[me - 1]
            visits[cell] += 1
            for _ in range(placed):
                state.undo()
            if budget.expired():
                break
        rounds += 1
    if rounds == 0:
        return best
    spread = (max(scores.values()) - min(scores.values())) or 1.0
    best = max(
        top,
        key=lambda c: (
            total[c] / max(1, visits[c]) + 0.05 * (scores[c] - scores[ranked[0]]) / spread
        ),
    )
    budget.offer_placement(best)
    budget.info.update({"placement_playouts": float(sum(visits.values()))})
    return best
