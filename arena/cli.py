"""``battlesheep serve`` and ``battlesheep replay``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from arena import wine
from arena.config import (
    InputFile,
    ServeOptions,
    ServerConfig,
    command_argv,
    default_input,
    read_input_file,
)
from arena.lobby import Lobby
from arena.players import PlayerLogs, ProcessPlayer, add_log_arguments, kill_running
from arena.referee import GameRecord
from arena.replay import read_replay, replay_lines, write_replay
from arena.results import GameResult, append_result, course_lines
from arena.server import GamePlan, game_seeds, serve_games, serve_open
from arena.viewer import cli as viewer_cli
from protocol.endpoints import parse_endpoint
from strategies.base import ConfigError

T = TypeVar("T")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="count", default=0, help="debug logging")
    p.add_argument("--log-file", metavar="PATH", help="server log to a file instead of stderr")


def register(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="local match server: start the players of input.txt and play",
        description="Play games the course's way: start the four player programs of "
        "input.txt, seat them by the team id they send, and play.",
    )
    serve.add_argument(
        "--players",
        metavar="input.txt",
        help="the course's file (default: the project's agent against three sample players)",
    )
    serve.add_argument("--game", type=int, choices=[1, 2, 3, 4], help="overrides input.txt")
    serve.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8887, help="0 picks a free port ({port})")
    serve.add_argument("--games", type=int, default=1, help="games played one after another")
    serve.add_argument("--time-limit", type=float, default=3.0, help="seconds per move")
    serve.add_argument(
        "--seed", type=int, help="board seed of the first game, then +1 each (default: random)"
    )
    serve.add_argument("--record", metavar="DIR", help="write a replay file per game here")
    serve.add_argument("--results", metavar="FILE", help="append one JSON line per game")
    add_log_arguments(serve)
    serve.add_argument(
        "--allow-absent",
        action="store_true",
        help="play on when a seat never connects (its turns are lost) and still exit 0",
    )
    serve.add_argument("--connect-timeout", type=float, default=20.0)
    serve.add_argument(
        "--listen",
        action="append",
        default=[],
        metavar="URL",
        help="tcp://host:port, ws://host:port/path or mqtt://[user:password@]host:port/match"
        " (repeatable; players may use any of them in one game). With --listen and without"
        " --players no programs are started: the first four team ids to connect are seated"
        " in ascending order",
    )
    serve.add_argument(
        "--token",
        default=os.environ.get("BATTLESHEEP_TOKEN"),
        help="shared secret WebSocket and MQTT players must send in their hello"
        " (default: $BATTLESHEEP_TOKEN)",
    )
    viewer_cli.add_serve_arguments(serve)
    _common(serve)
    serve.set_defaults(func=run_serve)
    _register_tools(sub)


def _register_tools(sub: Any) -> None:
    """``wine-check`` and ``replay``."""
    check = sub.add_parser(
        "wine-check",
        help="prepare Wine for Windows players (.exe) and say what it runs",
        description="Find Wine, create the project's Wine prefix (once: it takes seconds) and "
        "report whether 32-bit programs run; with PROGRAMs, check that each one can be "
        "started. serve does the same for the Windows programs of input.txt before its game.",
    )
    check.add_argument("programs", nargs="*", metavar="PROGRAM")
    check.set_defaults(func=run_wine_check)

    replay = sub.add_parser(
        "replay", help="print a recorded game turn by turn, or show it in the browser (--open)"
    )
    replay.add_argument("file", metavar="FILE")
    replay.add_argument("--no-boards", action="store_true", help="moves only")
    viewer_cli.add_replay_arguments(replay)
    replay.set_defaults(func=run_replay)


def _quiet(args: argparse.Namespace) -> None:
    """Without -v the server logs warnings only: faults, intruders, lost turns."""
    if not args.verbose:
        logging.getLogger("arena").setLevel(logging.WARNING)


def _listen_config(args: argparse.Namespace) -> tuple[str, int, tuple[str, ...], bool]:
    """(TCP host, TCP port, other listener URLs, whether TCP listens) from --listen."""
    if not args.listen:
        return args.bind, args.port, (), True
    endpoints = [parse_endpoint(url) for url in args.listen]
    tcp = [e for e in endpoints if e.scheme == "tcp"]
    if len(tcp) > 1:
        raise ConfigError("--listen: give at most one tcp:// URL")
    others = tuple(url for url, e in zip(args.listen, endpoints, strict=True) if e.scheme != "tcp")
    if tcp:
        return tcp[0].host, tcp[0].port, others, True
    return args.bind, args.port, others, bool(args.players)


def _serve_options(args: argparse.Namespace, game: int) -> ServeOptions:
    """``serve``'s options and its server's configuration, validated (ConfigError if not)."""
    try:
        return _options(args, game)
    except ValidationError as exc:
        err = exc.errors()[0]
        option = str(err["loc"][-1]).replace("_", "-")
        raise ConfigError(f"--{option}: {str(err['msg']).removeprefix('Value error, ')}") from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _options(args: argparse.Namespace, game: int) -> ServeOptions:
    host, port, listen, tcp = _listen_config(args)
    return ServeOptions(
        game=game,
        games=args.games,
        seed=args.seed,
        server=ServerConfig(
            host=host,
            port=port,
            time_limit=args.time_limit,
            connect_timeout=args.connect_timeout,
            listen=listen,
            token=args.token,
            tcp=tcp,
        ),
    )


def run_serve(args: argparse.Namespace) -> int:
    _quiet(args)
    if args.listen and not args.players:
        return run_open(args)
    players = read_input_file(args.players) if args.players else default_input()
    game = args.game if args.game is not None else players.game
    if game is None:
        raise ConfigError(f"{args.players} has no 9th line with the setting; give --game")
    options = _serve_options(args, game)
    _prepare_wine(players)
    if not args.players:
        print("player 1 is the project's agent (battlesheep play); players 2-4 are the sample")
        print("players random, greedy and random (battlesheep sample)")
    logs = PlayerLogs(args.player_logs, "battlesheep-players-", args.keep_logs)
    teams = players.teams
    plans = [
        GamePlan(
            game=options.game,
            seed=seed,
            teams=teams,
            players=[
                ProcessPlayer(
                    entry.command,
                    team=entry.team,
                    game=options.game,
                    log_path=logs.path / f"game{k + 1}-seat{seat}-team{entry.team}.log",
                    cwd=players.base_dir,
                    time_limit=options.server.time_limit,
                )
                for seat, entry in enumerate(players.players, start=1)
            ],
            index=k,
        )
        for k, seed in enumerate(game_seeds(options.seed, options.games))
    ]
    config = options.server
    on_game = _game_reporter(args, options.games)

    def on_listening(lobby: Lobby) -> None:
        where = ", ".join(lobby.addresses())
        print(f"listening on {where}; player logs in {logs.path}", file=sys.stderr, flush=True)

    why_keep: str | None = "serve did not end cleanly"
    try:
        code = _run(
            args,
            config,
            lambda watched: serve_games(teams, plans, watched, on_game, on_listening),
        )
        started = [p for plan in plans for p in plan.players if isinstance(p, ProcessPlayer)]
        why_keep = _why_keep_logs(code, started)
    finally:
        if note := logs.close(why_keep):
            print(note, file=sys.stderr)
    return code


def _why_keep_logs(code: int, players: list[ProcessPlayer]) -> str | None:
    """Why the players' logs of a run are worth keeping (None: they are not)."""
    if code != 0:
        return "a seat never took part" if code == 1 else "serve did not end cleanly"
    failed = sorted({f"team {p.team}" for p in players if p.failed})
    return f"{', '.join(failed)} failed" if failed else None


def _prepare_wine(players: InputFile) -> None:
    """Windows programs in the seats: Wine found, its prefix made, 32-bit support checked,
    all before the game (ConfigError if one cannot run: no seat waits for a dead player)."""
    for seat, entry in enumerate(players.players, start=1):
        program = command_argv(entry.command, {}, players.base_dir)[0]
        if wine.windows_program(program, players.base_dir) is None:
            continue
        if not wine.prefix_ready():
            print(f"creating the Wine prefix {wine.prefix_path()} (once; takes seconds)...")
        try:
            wine.launch_for([program], players.base_dir)
        except ConfigError as exc:
            raise ConfigError(f"seat {seat} (team {entry.team}): {exc}") from None


def run_wine_check(args: argparse.Namespace) -> int:
    for line in wine.check_report(args.programs):
        print(line, flush=True)
    return 0


def _game_reporter(
    args: argparse.Namespace, games: int
) -> Callable[[GameRecord, GameResult], None]:
    """After each game: the course's result lines, and --results / --record files; then
    ``AbsentSeats`` if a seat never took part (without --allow-absent)."""

    def on_game(record: GameRecord, result: GameResult) -> None:
        if games > 1:
            print(f"game {result.index + 1} (setting {result.game}, seed {result.seed})")
        for line in course_lines(result):
            print(line)
        absent = [
            f"seat {seat} (team {team})"
            for seat, (team, stats) in enumerate(zip(result.teams, record.stats, strict=True), 1)
            if stats.connects == 0
        ]
        for seat in absent:
            print(f"{seat} never connected: its turns were lost")
        if args.results:
            append_result(args.results, result)
        if args.record:
            name = f"game{result.index + 1}-g{result.game}-seed{result.seed}.msgpack"
            write_replay(Path(args.record) / name, record, result)
        sys.stdout.flush()
        if absent and not args.allow_absent:
            raise AbsentSeats(f"{', '.join(absent)} never took part in game {result.index + 1}")

    return on_game


def run_open(args: argparse.Namespace) -> int:
    """serve --listen without --players: seat four players started by hand, by team id."""
    if args.game is None:
        raise ConfigError("--game is needed when the players are not given by --players")
    options = _serve_options(args, args.game)
    config = options.server

    def on_listening(lobby: Lobby) -> None:
        where = ", ".join(lobby.addresses())
        print(
            f"listening on {where}; waiting for four players (seated by team id)",
            file=sys.stderr,
            flush=True,
        )

    on_game = _game_reporter(args, options.games)

    seeds = game_seeds(options.seed, options.games)
    return _run(
        args,
        config,
        lambda watched: serve_open(options.game, seeds, watched, on_game, on_listening),
    )


class AbsentSeats(Exception):
    """A seat never connected during a game (and --allow-absent was not given)."""


class Stopped(Exception):
    """serve was told to stop by a signal (SIGTERM, SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


async def _stoppable(games: Awaitable[T]) -> T:
    """Await ``games``; SIGTERM or SIGHUP cancels it, so that every ``finally`` on the way
    stops its players, then raises ``Stopped``. Later signals are ignored meanwhile."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def stop(signum: int) -> None:
        if not received:
            received.append(signum)
            task.cancel()

    handled: list[int] = []
    for signum in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError):  # Windows' event loops have none
            loop.add_signal_handler(signum, stop, signum)
            handled.append(signum)
    try:
        return await games
    except asyncio.CancelledError:
        if received:
            raise Stopped(received[0]) from None
        raise
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


def _run(
    args: argparse.Namespace,
    config: ServerConfig,
    games: Callable[[ServerConfig], Awaitable[list[GameResult]]],
) -> int:
    """Serve the games (watched by the viewer with --http): 0 when they were played,
    128 + the signal's number when a signal stopped them. Players never outlive it."""
    try:
        asyncio.run(_stoppable(viewer_cli.watched(args, config, games)))
    except Stopped as exc:
        print(f"serve: stopped by {exc}; its players are stopped", file=sys.stderr)
        return 128 + exc.signum
    except AbsentSeats as exc:
        print(f"serve: {exc}; no more games (--allow-absent plays on)", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.filename:  # a results, record or log path, not the socket
            raise ConfigError(f"cannot write {exc.filename}: {exc.strerror or exc}") from None
        where = f" on {config.host}:{config.port}" if config.tcp and not config.listen else ""
        raise ConfigError(f"cannot listen{where}: {exc.strerror or exc}") from None
    finally:
        if killed := kill_running():
            print(f"serve: killed {killed} players left running", file=sys.stderr)
    return 0


def run_replay(args: argparse.Namespace) -> int:
    if args.open:
        return viewer_cli.run_replay_open(args)
    replay = read_replay(args.file)  # a bad file: ReplayError, one line
    for line in replay_lines(replay, boards=not args.no_boards):
        print(line)
    return 0
