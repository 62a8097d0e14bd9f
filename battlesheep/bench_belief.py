"""``battlesheep bench belief``: how well game-3 hidden counts are estimated.

Game-3 games are played in-process by the given seats (the truth, counts
included, is kept); each seat's view is then replayed observation by
observation through ``ingest`` and the belief, and the error of the estimate
of every other seat's stacks is compared with the published reference's
guess (a seat's total over its number of stacks). The split-size prior is
learned from separate training games of the same seats.
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass
from typing import Any

from battlesheep.cli import print_figures
from state.belief import Belief, SplitPrior
from state.boardgen import random_geometry
from state.game import GameState, Move
from state.observe import Action, ingest, state_from_observation
from state.settings import PLAYERS, get_setting
from strategies.base import Budget
from strategies.registry import make_strategy, parse_seat


@dataclass
class GameRecord:
    seed: int
    # (seat, cell, split, direction); split 0 marks a placement, cell -1 a pass.
    plays: list[tuple[int, int, int, int]]


def play_record(seed: int, seats: list[str], move_time: float) -> GameRecord:
    setting = get_setting(3)
    truth = GameState(setting, random_geometry(setting, seed))
    players = []
    for i, spec in enumerate(seats):
        name, params = parse_seat(spec)
        player = make_strategy(name, {"seed": seed * 4 + i, **params})
        player.new_game(setting, i + 1)
        players.append(player)
    plays: list[tuple[int, int, int, int]] = []
    while truth.placing or not truth.is_terminal():
        seat = truth.to_move
        player = players[seat - 1]
        if truth.placing:
            cell = player.place(truth.copy(), Budget.seconds(move_time))
            truth.place(cell)
            plays.append((seat, cell, 0, 0))
            continue
        view = truth.copy()
        move = player.move(view, Budget.seconds(move_time)) if truth.has_moves(seat) else None
        if move is None:
            truth.apply_pass()
            plays.append((seat, -1, 0, 0))
        else:
            truth.apply(move)
            plays.append((seat, *move))
    return GameRecord(seed, plays)


def observed_splits(record: GameRecord) -> list[tuple[int, int]]:
    """(stack size, split) of every move, read off the truth: the prior's training data."""
    setting = get_setting(3)
    truth = GameState(setting, random_geometry(setting, record.seed))
    out = []
    for _seat, cell, split, direction in record.plays:
        if split == 0:
            truth.place(cell) if cell >= 0 else truth.apply_pass()
            continue
        out.append((truth.sheep[cell], split))
        truth.apply(Move(cell, split, direction))
    return out


def errors_of_view(
    record: GameRecord, viewer: int, prior: SplitPrior, samples: int
) -> list[tuple[float, float, int]]:
    """Per observation of ``viewer``: summed |median - truth|, |uniform guess - truth|, stacks."""
    setting = get_setting(3)
    truth = GameState(setting, random_geometry(setting, record.seed))
    mine: GameState | None = None
    belief = Belief(setting, viewer, prior=prior)
    rng = random.Random(record.seed)
    out: list[tuple[float, float, int]] = []
    for seat, cell, split, direction in record.plays:
        if seat == viewer and cell >= 0:  # the viewer was sent a board (not on a pass)
            board, sheep = truth.wire_map(), truth.wire_sheep()
            if mine is None:
                mine = state_from_observation(setting, board, None, viewer, to_move=viewer)
                belief.update(
                    Action(s, "place", c) for s in PLAYERS if s < viewer for c in mine.stacks[s]
                )
            else:
                belief.update(ingest(mine, board, sheep, viewer).actions)
            if not mine.placing:
                draws = [belief.sample(rng) for _ in range(samples)]
                err_b = err_u = 0.0
                n = 0
                for p in PLAYERS:
                    if p == viewer:
                        continue
                    guess = setting.sheep / len(mine.stacks[p])
                    for c in mine.stacks[p]:
                        err_b += abs(statistics.median(d[c] for d in draws) - truth.sheep[c])
                        err_u += abs(guess - truth.sheep[c])
                        n += 1
                out.append((err_b, err_u, n))
        if split == 0:
            truth.place(cell) if cell >= 0 else truth.apply_pass()
        else:
            truth.apply(Move(cell, split, direction))
    return out


def bench_belief(games: int, seats: list[str], move_time: float, samples: int) -> dict[str, float]:
    training = [play_record(10_000 + i, seats, move_time) for i in range(max(4, games // 2))]
    learned = SplitPrior.fit([p for r in training for p in observed_splits(r)], 16)
    uniform = SplitPrior.uniform(16)
    totals = {"learned": [0.0, 0.0, 0], "uniform": [0.0, 0.0, 0]}
    observations = 0
    for i in range(games):
        record = play_record(i, seats, move_time)
        for viewer in PLAYERS:
            for key, prior in (("learned", learned), ("uniform", uniform)):
                rows = errors_of_view(record, viewer, prior, samples)
                for err_b, err_u, n in rows:
                    totals[key][0] += err_b
                    totals[key][1] += err_u
                    totals[key][2] += n
                if key == "learned":
                    observations += len(rows)
    stacks = max(1.0, float(totals["learned"][2]))
    mae_uniform_guess = totals["learned"][1] / stacks
    mae_learned = totals["learned"][0] / stacks
    mae_uniform_prior = totals["uniform"][0] / stacks
    return {
        "games": float(games),
        "observations": float(observations),
        "stack_estimates": stacks,
        "mae_reference_guess": mae_uniform_guess,
        "mae_belief_uniform_prior": mae_uniform_prior,
        "mae_belief_learned_prior": mae_learned,
        "ratio_learned_to_reference": mae_learned / max(mae_uniform_guess, 1e-9),
    }


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "belief", help="game 3: error of hidden-count estimates against the reference's guess"
    )
    p.add_argument("--games", type=int, default=20)
    p.add_argument(
        "--seats",
        default="greedy,greedy,random,greedy",
        help="four comma-separated strategies (name:key=value) that play the games",
    )
    p.add_argument("--move-time", type=float, default=0.2, help="seconds per move of the seats")
    p.add_argument("--samples", type=int, default=64, help="posterior draws per observation")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    seats = [s.strip() for s in args.seats.split(",")]
    if len(seats) != 4:
        raise SystemExit(f"--seats needs four strategies, got {len(seats)}: {args.seats!r}")
    print_figures(bench_belief(args.games, seats, args.move_time, args.samples))
    return 0
