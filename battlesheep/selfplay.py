"""In-process games between strategies, without the network: the measuring tool of the
strategy layer.

Each seat's strategy sees what its client would hold (the boards it was sent,
ingested turn by turn, other seats' counts hidden in game 3) and gets a
``Budget`` of the time limit; a seat with no legal
move passes without being asked, as on the course server. Games are played in
seat rotation on shared boards and spread over a process pool.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from state.boardgen import random_geometry
from state.game import GameState, IllegalMoveError, team_scores
from state.observe import ingest, placement_report, state_from_observation
from state.scoring import tournament_points
from state.settings import get_setting
from strategies.base import Budget, Strategy
from strategies.registry import make_strategy

log = logging.getLogger(__name__)

SeatSpec = tuple[str, dict[str, Any]]


@dataclass
class GameSpec:
    game: int
    board_seed: int
    seats: list[SeatSpec]  # seats 1..4
    time_limit: float
    seed: int = 0


@dataclass
class GameRecord:
    spec: GameSpec
    scores: list[int]
    points: list[float]
    # Per seat: the search figures (Budget.info plus time) of each of its moves.
    figures: list[list[dict[str, float]]] = field(default_factory=list)
    illegal: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    late: list[int] = field(default_factory=lambda: [0, 0, 0, 0])


class SeatViews:
    """What each seat's client would hold: its own state, brought up to date by ``ingest``
    from the boards it is sent (other seats' counts masked in game 3), and its strategy
    told what each board showed, exactly as ``client.session`` does."""

    def __init__(self, strategies: Sequence[Strategy]) -> None:
        self.strategies = strategies
        self.views: dict[int, GameState] = {}

    def board_for(self, truth: GameState, seat: int) -> GameState:
        board = truth.wire_map()
        view = self.views.get(seat)
        if view is None:
            view = state_from_observation(truth.setting, board, None, seat, to_move=seat)
            self.views[seat] = view
            report = placement_report(view)
        else:
            report = ingest(view, board, truth.wire_sheep(seat), seat)
        self.strategies[seat - 1].observe(view, report)
        # The strategy may search in place; the view must stay the client's record.
        return view.copy()


def play_game(spec: GameSpec, grace: float = 0.1) -> GameRecord:
    """One full game; a move later than ``time_limit + grace`` is counted as late
    (and still played, since the machine's load is not the strategy's fault)."""
    setting = get_setting(spec.game)
    state = GameState(setting, random_geometry(setting, spec.board_seed))
    strategies = []
    for k, (name, params) in enumerate(spec.seats):
        params = dict(params)
        params.setdefault("seed", spec.seed * 4 + k)
        strat = make_strategy(name, params)
        strat.new_game(setting, k + 1)
        strategies.append(strat)
    record = GameRecord(spec, [], [], figures=[[], [], [], []])
    views = SeatViews(strategies)
    idle = 0
    while state.placing:
        seat = state.to_move
        budget = Budget.seconds(spec.time_limit)
        cell = strategies[seat - 1].place(views.board_for(state, seat), budget)
        try:
            state.place(cell)
        except IllegalMoveError:
            log.warning("seat %d placed illegally on %s", seat, cell)
            record.illegal[seat - 1] += 1
            state.place(random.Random(spec.seed).choice(state.initial_positions()))
    while idle < 4:
        seat = state.to_move
        if not state.has_moves(seat):
            state.apply_pass() if not state.done[seat] else state.skip_turn()
            idle += 1
            continue
        idle = 0
        budget = Budget.seconds(spec.time_limit)
        t0 = time.monotonic()
        move = strategies[seat - 1].move(views.board_for(state, seat), budget)
        used = time.monotonic() - t0
        if used > spec.time_limit + grace:
            record.late[seat - 1] += 1
        figures = dict(budget.info)
        figures["time_used"] = used
        record.figures[seat - 1].append(figures)
        try:
            if move is None:
                raise IllegalMoveError("no move returned although one exists")
            state.apply(move)
        except IllegalMoveError as exc:
            log.warning("seat %d: illegal move %s: %s", seat, move, exc)
            record.illegal[seat - 1] += 1
            state.skip_turn()
    record.scores = state.scores()
    results = team_scores(record.scores) if setting.teams else [float(s) for s in record.scores]
    record.points = tournament_points(results)
    return record


def rotations(main: SeatSpec, others: Sequence[SeatSpec]) -> list[list[SeatSpec]]:
    """The four seatings of one board: ``main`` in each seat, the others in order."""
    out = []
    for k in range(4):
        rest = list(others[k % len(others) :]) + list(others[: k % len(others)])
        seats = [*rest[:k], main, *rest[k:]]
        out.append(seats[:4])
    return out


def match_specs(
    game: int,
    main: SeatSpec,
    others: Sequence[SeatSpec],
    games: int,
    time_limit: float,
    seed: int,
) -> list[tuple[int, GameSpec]]:
    """(main's seat, spec) for ``games`` games, in blocks of four seatings per board."""
    rng = random.Random(seed)
    out: list[tuple[int, GameSpec]] = []
    while len(out) < games:
        board = rng.getrandbits(32)
        for k, seats in enumerate(rotations(main, others)):
            if len(out) >= games:
                break
            out.append((k + 1, GameSpec(game, board, seats, time_limit, rng.getrandbits(31))))
    return out


def pair_specs(
    game: int,
    main: SeatSpec,
    other: SeatSpec,
    games: int,
    time_limit: float,
    seed: int,
) -> list[tuple[int, GameSpec]]:
    """Game 4, a pair of ``main`` against a pair of ``other``: (a main seat, spec) for
    ``games`` games, each board played twice, the main pair in seats 1 & 3 then 2 & 4."""
    rng = random.Random(seed)
    out: list[tuple[int, GameSpec]] = []
    while len(out) < games:
        board = rng.getrandbits(32)
        for first in (1, 2):
            if len(out) >= games:
                break
            seats = [main if (k - first) % 2 == 0 else other for k in range(1, 5)]
            out.append((first, GameSpec(game, board, seats, time_limit, rng.getrandbits(31))))
    return out


def _run(spec: GameSpec) -> GameRecord:
    return play_game(spec)


def play_many(specs: Iterable[GameSpec], jobs: int) -> list[GameRecord]:
    specs = list(specs)
    if jobs <= 1:
        return [play_game(s) for s in specs]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(_run, specs, chunksize=1)


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its normal-approximation 95% interval."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return mean, math.inf
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, 1.96 * math.sqrt(var / n)


def summarize(records: Sequence[GameRecord], seats: Sequence[int]) -> dict[str, float]:
    """Points per game of the seat the main strategy sat in, and its search figures."""
    points = [r.points[s - 1] for r, s in zip(records, seats, strict=True)]
    scores = [float(r.scores[s - 1]) for r, s in zip(records, seats, strict=True)]
    mean, half = mean_ci95(points)
    out = {
        "games": float(len(records)),
        "points_per_game": mean,
        "ci95_low": mean - half,
        "ci95_high": mean + half,
        "score_per_game": sum(scores) / max(1, len(scores)),
        "late_moves": float(sum(r.late[s - 1] for r, s in zip(records, seats, strict=True))),
        "illegal_moves": float(sum(r.illegal[s - 1] for r, s in zip(records, seats, strict=True))),
    }
    if records and get_setting(records[0].spec.game).teams:
        # Partners share the pair's points: above the mean of 2.75 is a win.
        wins = [1.0 if p > 2.75 else 0.5 if p == 2.75 else 0.0 for p in points]
        rate, half = mean_ci95(wins)
        out.update(
            {"pair_win_rate": rate, "win_ci95_low": rate - half, "win_ci95_high": rate + half}
        )
    figures = [f for r, s in zip(records, seats, strict=True) for f in r.figures[s - 1]]
    if figures:
        for key in ("iterations", "nodes", "depth", "ab_depth", "ab_nodes", "time_used"):
            vals = [f[key] for f in figures if key in f]
            if vals:
                out[f"{key}_per_move"] = sum(vals) / len(vals)
        used = [f["time_used"] for f in figures]
        out["time_used_max"] = max(used)
        out["moves"] = float(len(figures))
    return out
