"""The ``battlesheep`` command line as a user runs it: a fresh Python process."""

from __future__ import annotations

import subprocess
import sys
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
