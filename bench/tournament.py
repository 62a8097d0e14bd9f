"""``battlesheep bench tournament``: tournament throughput with one worker and with all cores.

Random players (``battlesheep play`` subprocesses, as a tournament runs them)
play the same seeded games first with ``--jobs 1``, then with one job per
core, so the scaling of the worker processes is visible. Figures:
``games_per_s_jobs1``, ``games_per_s`` (all cores), ``jobs``, ``speedup``.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from typing import Any

from tournament.entrants import parse_entrants
from tournament.run import Tournament
from tournament.runner import default_jobs, make_runner
from tournament.schedule import Schedule


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tournament", help="tournament games per second, one worker and all cores"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--games", type=int, default=24, help="games to play")
    p.add_argument("--time-limit", type=float, default=0.5, help="seconds per move")
    p.add_argument("--jobs", type=int, default=default_jobs(), help="the 'all cores' run's jobs")
    p.add_argument("--seed", type=int, default=1, help="the first board's seed")
    p.add_argument("--cluster", nargs="?", const="", metavar="ADDRESS", help="use Dask")
    p.set_defaults(func=run)


def games_per_s(args: argparse.Namespace, jobs: int) -> float:
    entrants = parse_entrants([f"r{i}=random:seed={i}" for i in range(4)], args.time_limit)
    with tempfile.TemporaryDirectory(prefix="battlesheep-bench-") as logs:
        schedule = Schedule(tuple(entrants), args.game, args.seed, args.time_limit, log_dir=logs)
        runner = make_runner(jobs, args.cluster or None, args.cluster is not None)
        try:
            started = time.monotonic()
            outcome = Tournament(schedule, args.games).run(runner)
            elapsed = time.monotonic() - started
        finally:
            runner.close()
    return len(outcome.results) / elapsed


def run(args: argparse.Namespace) -> int:
    from bench import print_figures

    for name in ("arena", "client", "distributed"):
        logging.getLogger(name).setLevel(logging.WARNING)
    one = games_per_s(args, 1)
    many = games_per_s(args, args.jobs)
    print_figures(
        {
            "games_per_s_jobs1": one,
            "games_per_s": many,
            "jobs": args.jobs,
            "speedup": many / one if one > 0 else 0.0,
        }
    )
    return 0
