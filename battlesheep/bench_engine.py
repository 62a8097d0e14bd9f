"""``battlesheep bench engine``."""

from __future__ import annotations

import argparse
from typing import Any

from battlesheep.cli import print_figures
from state.bench import bench_engine


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "engine", help="random playouts, move generation, ingest"
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print_figures(bench_engine(args.game, args.seconds, args.seed))
    return 0
