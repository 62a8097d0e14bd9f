"""Course agent builds: a single-file zipapp, a PyInstaller executable, a submission.

- ``build_zipapp``: ``dist/team<ID>_agent<N>``, a shiv zipapp. A plain
  ``python -m zipapp`` archive cannot hold pydantic-core (a compiled
  extension cannot be imported from inside a zip), so shiv (LinkedIn's, well
  kept) packs the project's client packages and the runtime dependencies and
  unpacks them on the first run into ``~/.shiv`` (``SHIV_ROOT`` elsewhere).
  It needs only a Python interpreter of the same version and platform as the
  build (the dependencies' wheels are the build machine's).
- ``build_exe``: the same entry point frozen by PyInstaller ``--onefile``, an
  executable for the platform it is built on (on Windows the course's ``.exe``).
- ``assemble_submission``: the executable and a zip of the source files,
  named ``team<ID>_agent<N>...``, in ``dist/submission/``.

Both builds run ``client.agent_entry`` with the parameter file's options
and ``--game N --team ID`` baked in.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

from arena.results import GameResult
from client.clock import TimeLimits
from strategies.params import AgentParams, load_agent_params
from tournament.entrants import play_command
from tournament.runner import play_task
from tournament.schedule import GameTask

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CLIENT_PACKAGES = ("client", "protocol", "state", "strategies")
"""What ``battlesheep play`` imports of the project (checked by tests/test_builds.py)."""


EXE_EXCLUDES = (
    "numpy", "matplotlib", "PIL", "IPython", "pandas", "dask", "distributed",
    "tornado", "tkinter", "pytest", "hypothesis", "playwright",
)  # fmt: skip
"""Installed here for tests and tools, never imported by ``play``: PyInstaller's analysis
follows optional imports into them and would make the executable ten times larger."""


class BuildError(RuntimeError):
    """A build step failed; the message says which and why."""


def agent_name(team: int, agent: int) -> str:
    return f"team{team}_agent{agent}"


def default_params_file(agent: int) -> Path:
    return ROOT / "params" / f"agent{agent}.toml"


def baked_options(params: AgentParams, agent: int, team: int) -> list[str]:
    """The ``play`` options a build runs with: setting, team, strategy, parameters."""
    if params.game is not None and params.game != agent:
        logger.warning("parameter set is for game %s, built as agent %s", params.game, agent)
    return ["--game", str(agent), "--team", str(team), *params.play_args()]


def entry_script(options: list[str], name: str) -> str:
    return (
        f'"""{name}: the Battle Sheep agent with its parameter set built in."""\n\n'
        "import multiprocessing\n"
        "import sys\n\n"
        "from client.agent_entry import run\n\n"
        f"DEFAULTS = {options!r}\n\n\n"
        "def main() -> None:\n"
        "    multiprocessing.freeze_support()  # the search workers of a frozen executable\n"
        f"    sys.exit(run(DEFAULTS, prog={name!r}))\n\n\n"
        'if __name__ == "__main__":\n'
        "    main()\n"
    )


def runtime_requirements() -> list[str]:
    """The project's dependencies pinned to the versions installed here (the tested ones),
    and the ``fast`` extra's (the compiled playout kernel) where it is installed here."""
    with (ROOT / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    pinned = []
    for dep in project["dependencies"]:
        pinned.append(_installed_pin(dep) or dep)
    for dep in project["optional-dependencies"]["fast"]:
        pin = _installed_pin(dep)
        if pin is not None:
            pinned.append(pin)
    return pinned


def _installed_pin(dep: str) -> str | None:
    """``name==version`` of a requirement as installed here, or None."""
    name = re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0]
    try:
        return f"{name}=={importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return None


def exe_excludes() -> tuple[str, ...]:
    """``EXE_EXCLUDES``, less numpy where numba (the fast kernel, which needs it) is here."""
    if _installed_pin("numba") is None:
        return EXE_EXCLUDES
    return tuple(m for m in EXE_EXCLUDES if m != "numpy")


def _run(argv: list[str], what: str) -> None:
    logger.info("%s: %s", what, " ".join(argv))
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def copy_sources(target: Path) -> None:
    """The client's packages (the agent entry is ``client.agent_entry``), without caches."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in CLIENT_PACKAGES:
        shutil.copytree(ROOT / package, target / package, ignore=ignore, dirs_exist_ok=True)


def build_zipapp(params_file: Path, agent: int, team: int, out_dir: Path) -> Path:
    params = load_agent_params(params_file)
    name = agent_name(team, agent)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / name
    with tempfile.TemporaryDirectory(prefix="battlesheep-build-") as tmp:
        site = Path(tmp) / "site"
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*pip, "--target", str(site), *runtime_requirements()], "installing dependencies")
        copy_sources(site)
        (site / "battlesheep_agent.py").write_text(
            entry_script(baked_options(params, agent, team), name)
        )
        _run(
            [
                sys.executable, "-m", "shiv", "--site-packages", str(site),
                "-e", "battlesheep_agent:main", "-o", str(out),
                "-p", "/usr/bin/env python3", "--reproducible", "--compressed",
            ],
            "shiv",
        )  # fmt: skip
    out.chmod(0o755)
    return out


def build_exe(params_file: Path, agent: int, team: int, out_dir: Path, work: Path) -> Path:
    try:
        importlib.metadata.version("pyinstaller")
    except importlib.metadata.PackageNotFoundError:
        raise BuildError("make exe needs PyInstaller: pip install 'battlesheep[exe]'") from None
    params = load_agent_params(params_file)
    name = agent_name(team, agent)
    work.mkdir(parents=True, exist_ok=True)
    script = work / f"{name}.py"
    script.write_text(entry_script(baked_options(params, agent, team), name))
    _run(
        [
            sys.executable, "-m", "PyInstaller", "--onefile", "--noconfirm",
            "--log-level", "WARN", "--name", name, "--distpath", str(out_dir),
            "--workpath", str(work / "work"), "--specpath", str(work),
            "--paths", str(ROOT),
            *(arg for module in exe_excludes() for arg in ("--exclude-module", module)),
            str(script),
        ],
        "PyInstaller",
    )  # fmt: skip
    exe = out_dir / (name + (".exe" if sys.platform == "win32" else ""))
    if not exe.exists():
        raise BuildError(f"PyInstaller reported success but {exe} is missing")
    return exe


def source_zip(params_file: Path, agent: int, team: int, out_dir: Path) -> Path:
    """The source files the course collects next to the executable."""
    name = agent_name(team, agent)
    params = load_agent_params(params_file)
    out = out_dir / f"{name}_source.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in CLIENT_PACKAGES:
            for path in sorted((ROOT / package).rglob("*.py")):
                zf.write(path, f"{name}/{path.relative_to(ROOT)}")
        zf.writestr(f"{name}/{name}.py", entry_script(baked_options(params, agent, team), name))
        zf.write(params_file, f"{name}/params/{params_file.name}")
        for extra in ("pyproject.toml", "README.md"):
            if (ROOT / extra).exists():
                zf.write(ROOT / extra, f"{name}/{extra}")
    return out


def check_game(
    executable: Path, agent: int, team: int, time_limit: float, logs: Path
) -> GameResult:
    """One game of the built agent in seat 1 against three random sample players."""
    sample = play_command("random", {}, time_limit)
    task = GameTask(
        index=0,
        game=agent,
        seed=agent,
        seats=(0, 1, 2, 3),
        names=("submission", "random-2", "random-3", "random-4"),
        commands=(check_command(executable, time_limit), sample, sample, sample),
        teams=(team, team + 1, team + 2, team + 3),
        time_limit=time_limit,
        connect_timeout=60.0,
        log_dir=str(logs),
    )
    return play_task(task)


def check_command(executable: Path, time_limit: float) -> tuple[str, ...]:
    """The built agent's command line in the check game (its margin: ``TimeLimits.for_limit``)."""
    margin = TimeLimits.for_limit(time_limit).margin
    command: tuple[str, ...] = (str(executable.resolve()), "--host", "{host}", "--port", "{port}")
    return (*command, "--time-limit", f"{time_limit:g}", "--margin", repr(margin))


def check_problems(result: GameResult, seat: int = 1) -> list[str]:
    """What went wrong for ``seat`` in a check game (empty: a clean game)."""
    i = seat - 1
    problems = [
        f"{key}={getattr(result, key)[i]}"
        for key in ("illegal", "late", "disconnects", "absent", "protocol_errors")
        if getattr(result, key)[i]
    ]
    if not result.moves:
        problems.append("no moves were played")
    return problems
