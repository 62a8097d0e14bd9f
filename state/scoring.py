"""Scores from scratch (the reference the incremental regions are tested against),
ranks and tournament points."""

from __future__ import annotations

from collections.abc import Sequence

from state.geometry import Geometry
from state.regions import region_value
from state.settings import PLAYERS, GameSetting

PLACE_POINTS = (5.0, 3.0, 2.0, 1.0)


def flood_region_sizes(geometry: Geometry, owner: Sequence[int], player: int) -> list[int]:
    """Sizes of the player's 4-connected regions by flood fill, largest first."""
    seen = [False] * len(owner)
    sizes: list[int] = []
    for start in geometry.cells:
        if owner[start] != player or seen[start]:
            continue
        seen[start] = True
        stack = [start]
        size = 0
        while stack:
            c = stack.pop()
            size += 1
            for nb in geometry.neighbours[c]:
                if owner[nb] == player and not seen[nb]:
                    seen[nb] = True
                    stack.append(nb)
        sizes.append(size)
    return sorted(sizes, reverse=True)


def exact_score_of_sizes(sizes: Sequence[int]) -> float:
    return sum(region_value(s) for s in sizes)


def flood_scores(geometry: Geometry, owner: Sequence[int]) -> list[int]:
    """Rounded score of seats 1..4 by flood fill."""
    return [
        round(exact_score_of_sizes(flood_region_sizes(geometry, owner, p))) for p in range(1, 5)
    ]


def ranked_results(setting: GameSetting, scores: Sequence[float]) -> list[float]:
    """What ranks the seats (index 0 is seat 1): the scores, or in a team setting
    (game 4) the average of each seat's and its partner's score."""
    out: list[float] = []
    for seat in PLAYERS:
        own = float(scores[seat - 1])
        partner = setting.partner(seat)
        out.append(own if partner is None else (own + scores[partner - 1]) / 2)
    return out


def tournament_points(results: Sequence[float]) -> list[float]:
    """Points 5/3/2/1 by place; tied seats share the points of the places they span.

    ``results`` are what is ranked, in seat order: the rounded scores, or in
    game 4 the pair averages.
    """
    order = sorted(range(len(results)), key=lambda i: -results[i])
    points = [0.0] * len(results)
    place = 0
    while place < len(order):
        end = place
        while end + 1 < len(order) and results[order[end + 1]] == results[order[place]]:
            end += 1
        share = sum(PLACE_POINTS[place : end + 1]) / (end - place + 1)
        for k in range(place, end + 1):
            points[order[k]] = share
        place = end + 1
    return points


def ranks(results: Sequence[float]) -> list[int]:
    """1-based place of each seat; tied seats get the best place they span."""
    return [1 + sum(1 for other in results if other > r) for r in results]
