"""The ``battlesheep`` command line as a user runs it: a fresh Python process; and
whether the processes a test started have ended (Linux's ``/proc``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BATTLESHEEP = (sys.executable, "-m", "battlesheep")


def battlesheep(
    *argv: str,
    timeout: float = 120,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m battlesheep ARGV...`` run to its end in ``cwd`` with ``env`` (the
    test's own when None): its output captured as text, its stdin closed (no command
    may wait on a terminal), ``check`` raising on a non-zero exit."""
    return subprocess.run(
        [*BATTLESHEEP, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=check,
        stdin=subprocess.DEVNULL,
    )


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def eventually_dead(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive after waiting up to ``timeout`` seconds for them to end."""
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
