"""``battlesheep build`` and ``submission``: the course agents (``tournament.build``)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from client.cli import team_id
from client.errors import report
from tournament.build import (
    BuildError,
    agent_name,
    build_exe,
    build_zipapp,
    check_game,
    check_problems,
    default_params_file,
    source_zip,
)
from tournament.cli import quiet


def _agent_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", type=int, choices=[1, 2, 3, 4], required=True, help="game setting")
    p.add_argument("--team", type=team_id, required=True, help="the team id the agent sends")
    p.add_argument("--params", metavar="FILE", help="parameter file (default params/agent<N>.toml)")
    p.add_argument("--out-dir", default="dist", metavar="DIR")
    p.add_argument("-v", "--verbose", action="count", default=0)


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "build", help="build a course agent with its parameter set baked in (zipapp, or --exe)"
    )
    _agent_options(p)
    p.add_argument("--exe", action="store_true", help="a PyInstaller executable, not a zipapp")
    p.set_defaults(func=main_build)

    s: argparse.ArgumentParser = sub.add_parser(
        "submission",
        help="executable + sources for the course in DIR/submission/, checked by one game",
    )
    _agent_options(s)
    s.add_argument(
        "--check-time-limit", type=float, default=1.0, help="seconds per move of the check game"
    )
    s.set_defaults(func=main_submission)


def _params_file(args: argparse.Namespace) -> Path:
    return Path(args.params) if args.params else default_params_file(args.agent)


def main_build(args: argparse.Namespace) -> int:
    out_dir = Path(args.out_dir)
    try:
        if args.exe:
            work = Path("build") / "pyinstaller"
            path = build_exe(_params_file(args), args.agent, args.team, out_dir, work)
        else:
            path = build_zipapp(_params_file(args), args.agent, args.team, out_dir)
    except BuildError as exc:
        return report("battlesheep", str(exc))
    print(f"built {path} ({path.stat().st_size // 1024} KiB); run it: {path} [play options]")
    return 0


def main_submission(args: argparse.Namespace) -> int:
    quiet(args)
    target = Path(args.out_dir) / "submission"
    target.mkdir(parents=True, exist_ok=True)
    params = _params_file(args)
    try:
        exe = build_exe(params, args.agent, args.team, target, Path("build") / "pyinstaller")
        sources = source_zip(params, args.agent, args.team, target)
    except BuildError as exc:
        return report("battlesheep", str(exc))
    logs = Path(tempfile.mkdtemp(prefix=f"battlesheep-{agent_name(args.team, args.agent)}-"))
    # Seat 1 is expected to send the team id baked into the build, as on the course server.
    result = check_game(exe, args.agent, args.team, args.check_time_limit, logs)
    print(
        f"check game (setting {args.agent}, {args.check_time_limit:g} s/move): scores"
        f" {result.scores}, points {result.points}; logs in {logs}"
    )
    problems = check_problems(result)
    if problems:
        # Nothing that failed its check may look like a submission: move it aside.
        failed = target.with_name("submission-failed")
        shutil.rmtree(failed, ignore_errors=True)
        target.rename(failed)
        return report(
            "battlesheep",
            f"the submission did not play a clean game: {', '.join(problems)};"
            f" the build is kept in {failed}, not in {target}",
        )
    print(f"submission in {target}: {exe.name}, {sources.name}")
    return 0
