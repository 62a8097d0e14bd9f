"""``battlesheep bench strength``: the main strategy against fields of yardsticks.

A field is three seat specs, played with the measured strategy in every seat of
each board. Game 3 needs nothing special (every seat sees only its own counts;
``uct`` fills the rest with the reference's uniform guess). In game 4 the seat
opposite the measured strategy is its partner: ``uct`` is then the main agent
with a ``uct`` partner against two ``uct``, and ``pair-uct`` a pair of the
measured strategy against a pair of ``uct``; both report the pair's win rate.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from battlesheep.cli import print_figures
from battlesheep.selfplay import SeatSpec, match_specs, pair_specs, play_many, summarize
from strategies.params import load_agent_params
from strategies.registry import DEFAULT_STRATEGY, make_strategy, parse_params, parse_seat

FIELDS: dict[str, list[str]] = {
    "greedy": ["greedy"] * 3,
    "seedlike": ["seedlike"] * 3,
    "uct": ["uct"] * 3,
    "mixed": ["greedy", "seedlike", "uct"],
}
# Game 4 only: a pair of the measured strategy against a pair of this seat spec.
PAIR_FIELDS: dict[str, str] = {"pair-uct": "uct", "pair-seedlike": "seedlike"}
DEFAULT_FIELDS: dict[int, list[str]] = {3: ["uct"], 4: ["uct", "pair-uct"]}


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "strength",
        help="points per game of a strategy against greedy, seedlike, uct and a mixed field",
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--games", type=int, default=8, help="games per field (multiples of 4)")
    p.add_argument("--time-limit", type=float, default=1.0, help="seconds per move")
    p.add_argument("--jobs", type=int, default=2, help="games played at once")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strategy", default=None, help="the measured strategy (default: the main)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--params-file", default=None, help="TOML file of parameters")
    p.add_argument(
        "--field",
        action="append",
        default=None,
        metavar="FIELD",
        help="greedy, seedlike, uct, mixed, pair-uct (game 4), or three seat specs joined "
        "by ',' (e.g. 'hybrid:ab_fraction=0,uct,uct'); repeatable; default: all four "
        "(game 3: uct; game 4: uct and pair-uct)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    name = args.strategy or DEFAULT_STRATEGY
    params: dict[str, Any] = {}
    if args.params_file:
        params.update(load_agent_params(args.params_file).params_for(name))
    params.update(parse_params(args.param))
    make_strategy(name, params)  # fail early on a bad parameter
    main: SeatSpec = (name, params)
    fields = args.field or DEFAULT_FIELDS.get(args.game, list(FIELDS))
    for fld in fields:
        if fld in PAIR_FIELDS:
            if args.game != 4:
                raise SystemExit(f"field {fld!r} is a team field: it needs --game 4")
            other = parse_seat(PAIR_FIELDS[fld])
            planned = pair_specs(args.game, main, other, args.games, args.time_limit, args.seed)
        else:
            specs_text = FIELDS.get(fld) or fld.split(",")
            if len(specs_text) != 3:
                raise SystemExit(f"field {fld!r}: need three seat specs, not {len(specs_text)}")
            others = [parse_seat(s) for s in specs_text]
            planned = match_specs(args.game, main, others, args.games, args.time_limit, args.seed)
        t0 = time.monotonic()
        records = play_many([s for _seat, s in planned], args.jobs)
        figures = summarize(records, [seat for seat, _s in planned])
        figures["wall_s"] = time.monotonic() - t0
        label = fld.replace(",", "+").replace(":", "_").replace("=", "")
        print(f"# {name} vs {fld}, game {args.game}, {args.time_limit} s per move")
        print_figures({f"{label}.{k}": v for k, v in figures.items()})
    return 0
