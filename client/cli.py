"""``battlesheep play`` and ``battlesheep sample``: one seat on a course-protocol server."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Coroutine
from typing import Any

from client.clock import DEFAULT_MARGIN, DEFAULT_TIME_LIMIT, TimeLimits
from client.errors import ClientError, ExitCode
from client.mqtt import MqttOptions, play_mqtt
from client.session import GameSession, GameSummary
from client.tcp import ConnectOptions, play_tcp
from client.ws import WsOptions, play_ws
from protocol.endpoints import Endpoint, parse_endpoint
from state.settings import get_setting
from strategies.base import ConfigError, Strategy
from strategies.params import load_agent_params
from strategies.registry import DEFAULT_STRATEGY, STRATEGIES, make_strategy, parse_params

log = logging.getLogger("client")

SAMPLE_STRATEGIES = ("random", "greedy")
TRANSPORTS = ("tcp", "ws", "mqtt")
DEFAULT_URLS = {
    "tcp": "tcp://127.0.0.1:8887",
    "ws": "ws://127.0.0.1:8765/",
    "mqtt": "mqtt://127.0.0.1:1883/local",
}


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless it says it itself or has none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "default" in text
            or not action.option_strings
            or action.default in (None, False, argparse.SUPPRESS)
            or isinstance(action, argparse._HelpAction)
        ):
            return text
        return f"{text} (default: %(default)s)".lstrip()


class Parser(argparse.ArgumentParser):
    """The parser of every ``battlesheep`` command and of the built agents."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)


TEAM_MAX = 2**31 - 1
"""Team ids go on the wire as a signed 32-bit integer; the course's are positive."""


def team_id(text: str) -> int:
    """An argparse type: a course team id, a whole number from 1 to ``TEAM_MAX``."""
    try:
        team = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"team id must be a whole number, not {text!r}") from None
    if not 1 <= team <= TEAM_MAX:
        raise argparse.ArgumentTypeError(f"team id must be from 1 to {TEAM_MAX}, not {team}")
    return team


def register(sub: Any) -> None:
    play: argparse.ArgumentParser = sub.add_parser(
        "play", help="play one game on a course-protocol server (TCP, WebSocket or MQTT)"
    )
    play.add_argument(
        "--strategy",
        default=None,
        choices=sorted(STRATEGIES),
        help="the agent's strategy (default: the --params-file's, else"
        f" {DEFAULT_STRATEGY}, the strongest available)",
    )
    play.add_argument(
        "--params-file",
        metavar="FILE",
        help="a parameter file (params/agent1.toml): strategy, parameters and margin;"
        " --strategy, --param and --margin given here win",
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
    p.add_argument("--team", type=team_id, default=1, help="team id sent on connect (default 1)")
    p.add_argument(
        "--transport",
        choices=TRANSPORTS,
        help="tcp (the course's binary protocol), ws (WebSocket) or mqtt (through a broker);"
        " default: the scheme of --url, else tcp",
    )
    p.add_argument(
        "--url",
        metavar="URL",
        help="tcp://host:port, ws://host:port/path or mqtt://[user:password@]host:port/match"
        f" (defaults: {', '.join(DEFAULT_URLS.values())}; tcp uses --host/--port without it)",
    )
    p.add_argument(
        "--token",
        default=os.environ.get("BATTLESHEEP_TOKEN"),
        help="the arena's shared secret for ws and mqtt (default: $BATTLESHEEP_TOKEN)",
    )
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
        default=None,
        metavar="S",
        help="seconds of the limit kept back for the reply to get out (default: the"
        f" --params-file's margin, else {DEFAULT_MARGIN}, capped at a quarter of the limit)",
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


def _endpoint(args: argparse.Namespace) -> tuple[str, Endpoint | None]:
    """The transport and its parsed URL (None: TCP on --host/--port); ConfigError if bad."""
    if args.url is None:
        transport = args.transport or "tcp"
        if transport == "tcp":
            return transport, None
        return transport, parse_endpoint(DEFAULT_URLS[transport])
    try:
        endpoint = parse_endpoint(args.url)
    except ValueError as exc:
        raise ConfigError(f"--url {exc}") from None
    if args.transport is not None and args.transport != endpoint.scheme:
        raise ConfigError(f"--transport {args.transport} does not fit --url {args.url}")
    return endpoint.scheme, endpoint


def run_play(args: argparse.Namespace) -> int:
    return _run(args, args.strategy)


def run_sample(args: argparse.Namespace) -> int:
    return _run(args, args.sample_strategy)


def agent_setup(args: argparse.Namespace, strategy_name: str | None) -> tuple[Strategy, TimeLimits]:
    """The strategy and the time limits of ``play`` (``sample``: no parameter file)."""
    params: dict[str, Any] = {}
    wanted = None
    if getattr(args, "params_file", None):
        agent = load_agent_params(args.params_file)
        strategy_name = strategy_name or agent.strategy
        params.update(agent.params_for(strategy_name))
        wanted = agent.margin
    params.update(parse_params(args.param))
    strategy = make_strategy(strategy_name or DEFAULT_STRATEGY, params)
    try:
        limits = TimeLimits.for_limit(args.time_limit, args.margin, wanted=wanted)
    except ValueError as exc:
        raise ConfigError(f"--time-limit/--margin: {exc}") from None
    return strategy, limits


def _connection(
    args: argparse.Namespace, session: GameSession, transport: str, endpoint: Endpoint | None
) -> tuple[str, Coroutine[Any, Any, GameSummary]]:
    """Where the session plays and the coroutine that plays it over its transport."""
    play: Coroutine[Any, Any, GameSummary]
    if transport == "tcp":
        host = args.host if endpoint is None else endpoint.host
        port = args.port if endpoint is None else endpoint.port
        where = f"{host}:{port}"
        play = play_tcp(
            session,
            ConnectOptions(
                host=host,
                port=port,
                team=args.team,
                connect_for=args.connect_for,
                reconnect_for=args.reconnect_for,
            ),
        )
    elif transport == "ws":
        where = args.url or DEFAULT_URLS["ws"]
        play = play_ws(
            session,
            WsOptions(
                url=where,
                team=args.team,
                token=args.token,
                connect_for=args.connect_for,
                reconnect_for=args.reconnect_for,
            ),
        )
    else:
        assert endpoint is not None
        where = endpoint.url
        play = play_mqtt(
            session,
            MqttOptions(
                url=args.url or DEFAULT_URLS["mqtt"],
                team=args.team,
                token=args.token,
                connect_for=args.connect_for,
                reconnect_for=args.reconnect_for,
            ),
        )
    return where, play


def _run(args: argparse.Namespace, strategy_name: str | None) -> int:
    strategy, limits = agent_setup(args, strategy_name)
    transport, endpoint = _endpoint(args)
    session = GameSession(get_setting(args.game), strategy, limits)
    where, play = _connection(args, session, transport, endpoint)
    log.info(
        "team %s plays game %s as %s on %s over %s (limit %.2f s, margin %.2f s)",
        args.team,
        args.game,
        strategy.name,
        where,
        transport,
        limits.time_limit,
        limits.margin,
    )
    try:
        summary = asyncio.run(play)
    except ClientError as exc:
        log.error("%s", exc)
        return exc.exit_code
    print(summary.line(), flush=True)
    return ExitCode.OK
