"""The viewer's command-line glue: ``serve --http HOST:PORT`` and ``replay FILE --open``."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import webbrowser
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from arena.config import ServerConfig
from arena.replay import read_replay
from arena.viewer.server import ViewerServer, parse_hostport
from arena.viewer.stream import replay_messages
from strategies.base import ConfigError

T = TypeVar("T")


def hostport(text: str) -> tuple[str, int]:
    try:
        return parse_hostport(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--http",
        type=hostport,
        metavar="HOST:PORT",
        help="serve the match viewer here (a web page showing the games live), e.g. 127.0.0.1:8080",
    )
    p.add_argument(
        "--http-linger",
        type=float,
        default=0.0,
        metavar="S",
        help="keep the viewer up this many seconds after the last game",
    )


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--open", action="store_true", help="show it in the browser viewer")
    p.add_argument(
        "--http",
        type=hostport,
        default=("127.0.0.1", 0),
        metavar="HOST:PORT",
        help="where --open serves the page (default 127.0.0.1 and a free port)",
    )
    p.add_argument("--no-browser", action="store_true", help="with --open: only print the URL")


async def watched(
    args: argparse.Namespace,
    config: ServerConfig,
    games: Callable[[ServerConfig], Awaitable[T]],
) -> T:
    """Run ``games(config)``, with the viewer following them when ``--http`` was given."""
    if args.http is None:
        return await games(config)
    host, port = args.http
    async with ViewerServer(host, port) as viewer:
        print(f"viewer: {viewer.url}", file=sys.stderr, flush=True)
        result = await games(config.model_copy(update={"listener": viewer}))
        if args.http_linger > 0:
            print(f"viewer stays up for {args.http_linger:g} s", file=sys.stderr, flush=True)
            await asyncio.sleep(args.http_linger)
    return result


def _can_open_browser() -> bool:
    # Without a display, webbrowser falls back to text browsers that take over the terminal.
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


async def _serve_replay(messages: list[dict[str, object]], args: argparse.Namespace) -> None:
    host, port = args.http
    async with ViewerServer(host, port, messages) as viewer:
        print(f"viewer: {viewer.url}  (Ctrl-C stops it)", flush=True)
        if not args.no_browser and _can_open_browser():
            webbrowser.open(viewer.url)
        await asyncio.Event().wait()


def run_replay_open(args: argparse.Namespace) -> int:
    messages = replay_messages(read_replay(args.file), Path(args.file).name)  # or ReplayError
    try:
        asyncio.run(_serve_replay(messages, args))
    except OSError as exc:
        host, port = args.http
        where = f"{host}:{port}"
        raise ConfigError(f"cannot serve the viewer on {where}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        pass
    return 0
