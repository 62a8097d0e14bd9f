"""Windows player programs on Linux and macOS: started through Wine.

The course hands out its sample players as Windows executables, and students'
agents often end up as ``.exe`` files too. Off Windows a player program is
recognised as one by its header (``MZ``, then the ``PE`` signature), not by
its name, and started as ``wine PROGRAM ARGS``: quiet (``WINEDEBUG=-all``), in
the project's own prefix under the user's cache (created once, then reused),
with the executable's folder as its working directory as the course server
does. Wine's 32-bit half is a separate install on Debian: a 32-bit (PE32)
program is only started where a 32-bit probe runs, because 64-bit-only Wine
runs it as a silent exit 0, a player that never connects.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from strategies.base import ConfigError

logger = logging.getLogger(__name__)

PeKind = Literal["PE32", "PE32+"]
"""32-bit (PE32) or 64-bit (PE32+) Windows executable, from the optional header's magic."""

_MAGIC: dict[int, PeKind] = {0x10B: "PE32", 0x20B: "PE32+"}
_READY = ".battlesheep-ready"
"""Marker file: the prefix was created to the end (``wineboot -i`` succeeded)."""
_OVERRIDES = "mscoree=d;mshtml=d"
"""No Mono or Gecko install prompts in a prefix for console programs."""

INSTALL_WINE = (
    "install Wine (Debian/Ubuntu: sudo apt-get install wine wine64; "
    "macOS: brew install --cask wine-stable)"
)
INSTALL_WINE32 = (
    "install Wine's 32-bit part (Debian/Ubuntu: sudo dpkg --add-architecture i386 && "
    "sudo apt-get update && sudo apt-get install wine32:i386; macOS: brew install --cask "
    "wine-stable, Wine 8 or later, with Rosetta 2 on Apple silicon), then run "
    "battlesheep wine-check"
)


def pe_kind(path: str | os.PathLike[str]) -> PeKind | None:
    """``"PE32"`` or ``"PE32+"`` for a Windows executable, None for anything else."""
    try:
        with open(path, "rb") as f:
            dos = f.read(64)
            if len(dos) < 64 or dos[:2] != b"MZ":
                return None
            (offset,) = struct.unpack_from("<I", dos, 0x3C)
            f.seek(offset)
            # "PE\0\0", the 20-byte COFF header, then the optional header's magic.
            head = f.read(26)
    except OSError:
        return None
    if len(head) < 26 or head[:4] != b"PE\0\0":
        return None
    (magic,) = struct.unpack_from("<H", head, 24)
    return _MAGIC.get(magic)


def needs_wine(program: str) -> PeKind | None:
    """The PE kind of ``program`` when it has to go through Wine here (never on Windows)."""
    if os.name == "nt" or not os.path.isfile(program):
        return None
    return pe_kind(program)


def cache_dir() -> Path:
    """The user's cache folder: ~/Library/Caches on macOS, $XDG_CACHE_HOME or ~/.cache."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"


def prefix_path() -> Path:
    """The project's own Wine prefix (not the user's ~/.wine)."""
    return cache_dir() / "battlesheep" / "wine"


def find_wine(kind: PeKind) -> str | None:
    """``wine`` from PATH, or ``wine64`` for a 64-bit program if that is all there is."""
    return shutil.which("wine") or (shutil.which("wine64") if kind == "PE32+" else None)


def wine_env(prefix: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES=_OVERRIDES)
    return env


@contextlib.contextmanager
def _locked(prefix: Path) -> Iterator[None]:
    """One process at a time creates the prefix (parallel tournament workers)."""
    import fcntl  # POSIX only, as Wine is

    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / "wine.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def prefix_ready(prefix: Path | None = None) -> bool:
    return ((prefix or prefix_path()) / _READY).is_file()


def prepare_prefix(wine: str, prefix: Path | None = None) -> float:
    """Create the prefix once (``wineboot -i``); seconds it took, 0 if it was ready."""
    prefix = prefix or prefix_path()
    with _locked(prefix):
        if prefix_ready(prefix):
            return 0.0
        logger.debug("creating the Wine prefix %s", prefix)
        start = time.monotonic()
        proc = _run_wine(wine, prefix, "wineboot", "-i", timeout=300)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise ConfigError(
                f"{wine} wineboot -i failed (exit {proc.returncode}) for the prefix {prefix}: "
                f"{last}"
            )
        (prefix / _READY).write_text(f"{wine}\n")
        return time.monotonic() - start


def _run_wine(
    wine: str, prefix: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [wine, *args],
            env=wine_env(prefix),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"cannot run {wine} {' '.join(args)}: {exc}") from None


@functools.cache
def runs_32bit(wine: str, prefix: Path) -> bool:
    """Whether this Wine runs 32-bit programs: its 32-bit cmd.exe exits with the code given."""
    return (
        _run_wine(wine, prefix, "C:\\windows\\syswow64\\cmd.exe", "/c", "exit", "7").returncode == 7
    )


def warm_start(wine: str, prefix: Path) -> float:
    """Seconds Wine takes to start and end a console program in the ready prefix."""
    start = time.monotonic()
    _run_wine(wine, prefix, "cmd.exe", "/c", "exit", "0")
    return time.monotonic() - start


def wine_for(program: str, kind: PeKind) -> str:
    """The Wine that runs ``program`` here, its prefix ready; ConfigError saying what is missing."""
    bits = "32-bit" if kind == "PE32" else "64-bit"
    wine = find_wine(kind)
    if wine is None:
        if kind == "PE32" and shutil.which("wine64"):
            raise ConfigError(f"{program} is a {bits} Windows program: {INSTALL_WINE32}")
        raise ConfigError(
            f"{program} is a {bits} Windows program and Wine is not on PATH: {INSTALL_WINE}"
        )
    prefix = prefix_path()
    prepare_prefix(wine, prefix)
    if kind == "PE32" and not runs_32bit(wine, prefix):
        raise ConfigError(
            f"{program} is a {bits} Windows program and {wine} runs 64-bit programs only: "
            f"{INSTALL_WINE32}"
        )
    return wine


@dataclass(frozen=True)
class Launch:
    """How a player's argv is started: the argv itself, its working directory, environment."""

    argv: list[str]
    cwd: Path | None = None
    env: dict[str, str] | None = None


def windows_program(program: str, cwd: Path | None = None) -> tuple[str, PeKind] | None:
    """The path and PE kind of ``program`` (a path relative to ``cwd`` or a name on PATH)
    when it is a Windows executable that needs Wine here; None otherwise."""
    path = _program_path(program, cwd)
    kind = needs_wine(path) if path else None
    return (path, kind) if path and kind else None


def launch_for(argv: Sequence[str], cwd: Path | None = None) -> Launch:
    """``argv`` as is, or through Wine when its program is a Windows executable.

    A Windows program runs in its own folder, as the course server starts it.
    ConfigError if Wine (or its 32-bit part) is missing.
    """
    found = windows_program(argv[0], cwd)
    if found is None:
        return Launch(list(argv), cwd)
    program, kind = found
    wine = wine_for(argv[0], kind)
    exe = Path(program).resolve()
    return Launch([wine, str(exe), *argv[1:]], exe.parent, wine_env(prefix_path()))


def _program_path(program: str, cwd: Path | None) -> str | None:
    """The file the OS would start: a path relative to ``cwd``, a bare name from PATH."""
    if os.sep in program or (os.altsep and os.altsep in program):
        return program if cwd is None or os.path.isabs(program) else str(cwd / program)
    return shutil.which(program)


def check_report(programs: Sequence[str] = ()) -> Iterator[str]:
    """``battlesheep wine-check``: Wine found, the prefix made, what it runs; line by line.

    ConfigError at the end when Wine is missing or a given program cannot run here.
    """
    wine = find_wine("PE32+")
    if wine is None:
        raise ConfigError(f"Wine is not on PATH: {INSTALL_WINE}")
    version = _run_wine(wine, prefix_path(), "--version").stdout.strip()
    yield f"wine: {wine} ({version or 'version unknown'})"
    prefix = prefix_path()
    if not prefix_ready(prefix):
        yield f"creating the prefix {prefix} (once; it takes seconds)..."
    took = prepare_prefix(wine, prefix)
    state = f"created in {took:.1f} s" if took else "ready"
    yield f"prefix: {prefix} {state}; a console program starts in {warm_start(wine, prefix):.1f} s"
    bits32 = runs_32bit(wine, prefix)
    if not bits32:  # 32-bit Wine installed after the prefix was made: bring its half in
        _run_wine(wine, prefix, "wineboot", "-u", timeout=300)
        runs_32bit.cache_clear()
        bits32 = runs_32bit(wine, prefix)
    yield "32-bit programs: " + ("run" if bits32 else f"do not run: {INSTALL_WINE32}")
    failed = []
    for program in programs:
        kind = pe_kind(program)
        if kind is None:
            yield f"{program}: not a Windows executable (started as it is)"
            continue
        try:
            wine_for(program, kind)
            yield f"{program}: {kind}, runs through {wine}"
        except ConfigError as exc:
            failed.append(str(exc))
    if failed:
        raise ConfigError("; ".join(failed))
