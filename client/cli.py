"""``battlesheep play`` and ``battlesheep sample``: one seat on a course-protocol server."""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from client.errors import ClientError, ExitCode
from client.session import DEFAULT_MARGIN, DEFAULT_TIME_LIMIT, GameSession, TimeLimits
from client.tcp import ConnectOptions, play_tcp
from protocol import TeamId
from state.settings import get_setting
from strategies.base import ParameterError
from strategies.registry import DEFAULT_STRATEGY, STRATEGIES, make_strategy, parse_params

log = logging.getLogger("client")

SAMPLE_STRATEGIES = ("random", "greedy")


def register(sub: Any) -> None:
    play: argparse.ArgumentParser = sub.add_parser(
        "play", help="play one game on a course-protocol server (TCP)"
    )
    play.add_argument(
        "--strategy",
        default=DEFAULT_STRATEGY,
        choices=sorted(STRATEGIES),
        help=f"the agent's strategy (default: {DEFAULT_STRATEGY}, the strongest available)",
    )
    _add_common(play)
    play.set_defaults(func=run_play)

    sample: argparse.ArgumentParser = sub.add_parser(
        "sample", help="a course sample player (random or greedy) on a course-protocol server"
    )
    sample.add_argument("sample_strategy", choices=SAMPLE_STRATEGIES, metavar="{random,greedy}")
    _add_common(sample)
    sample.set_defaults(func=run_sample)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], required=True, help="game setting")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=8887)
    p.add_argument("--team", type=int, default=1, help="team id sent on connect (default 1)")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a strategy parameter (repeatable)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="S",
        help=f"the server's limit per reply in seconds (default {DEFAULT_TIME_LIMIT})",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=DEFAULT_MARGIN,
        metavar="S",
        help=f"seconds of the limit kept back for the reply to get out (default {DEFAULT_MARGIN})",
    )
    p.add_argument(
        "--connect-for",
        type=float,
        default=60.0,
        metavar="S",
        help="keep trying to reach the server this long at start (default 60)",
    )
    p.add_argument(
        "--reconnect-for",
        type=float,
        default=30.0,
        metavar="S",
        help="keep trying to reconnect this long after losing the connection (default 30)",
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="debug log (raw frames)")
    p.add_argument("--log-file", metavar="PATH", help="log to this file instead of stderr")


def _port(text: str) -> int:
    port = int(text)
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"port {port} is not in 1..65535")
    return port


def run_play(args: argparse.Namespace) -> int:
    return _run(args, args.strategy)


def run_sample(args: argparse.Namespace) -> int:
    return _run(args, args.sample_strategy)


def _run(args: argparse.Namespace, strategy_name: str) -> int:
    try:
        strategy = make_strategy(strategy_name, parse_params(args.param))
        limits = TimeLimits(args.time_limit, args.margin)
        TeamId(team_id=args.team)  # a 32-bit int, or the wire cannot carry it
    except (ParameterError, ValueError) as exc:
        log.error("%s", exc)
        return ExitCode.USAGE
    session = GameSession(get_setting(args.game), strategy, limits)
    options = ConnectOptions(
        host=args.host,
        port=args.port,
        team=args.team,
        connect_for=args.connect_for,
        reconnect_for=args.reconnect_for,
    )
    log.info(
        "team %s plays game %s as %s on %s:%s (limit %.2f s, margin %.2f s)",
        args.team,
        args.game,
        strategy_name,
        args.host,
        args.port,
        limits.time_limit,
        limits.margin,
    )
    try:
        summary = asyncio.run(play_tcp(session, options))
    except ClientError as exc:
        log.error("%s", exc)
        return exc.exit_code
    print(summary.line(), flush=True)
    return ExitCode.OK
