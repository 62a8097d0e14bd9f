"""Brings the browser the viewer's tests drive (tests/test_viewer.py); `make test` runs it first.

A Chromium already here (/usr/bin/chromium, or ``chromium`` on PATH) is used as it is. Else,
as root with apt-get, Debian's ``chromium`` package is installed; else (or if that failed)
Playwright's own build (``python -m playwright install chromium``). When none can be had it
says so in one line and exits 0: the viewer's tests then skip with their reason (in CI they
fail, tests/conftest.py).

    .venv/bin/python -m tests.provision_browser
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SYSTEM_CHROMIUM = "/usr/bin/chromium"
INSTALL_TIMEOUT = 900.0


def system_chromium() -> str | None:
    """The machine's own Chromium, or None."""
    if Path(SYSTEM_CHROMIUM).exists():
        return SYSTEM_CHROMIUM
    return shutil.which("chromium")


def _run(command: list[str]) -> tuple[bool, str]:
    """Runs command; (whether it succeeded, its last line of output)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=env,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    error = next((line for line in lines if line.startswith(("Error", "E:"))), None)
    return done.returncode == 0, error or (lines[-1] if lines else f"exit {done.returncode}")


def _apt_install() -> str:
    """Installs Debian's chromium; '' when it is there, else why not."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")):
        return "not root with apt-get"
    print("browser: apt-get install chromium (for the viewer's tests)", flush=True)
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        ok, last = _run(command)
        if not ok:
            return f"{' '.join(command)} failed: {last}"
    return "" if system_chromium() else "apt-get installed no /usr/bin/chromium"


def _playwright_install() -> str:
    """Installs Playwright's own Chromium (a no-op if it has it); '' on success, else why not."""
    ok, last = _run([sys.executable, "-m", "playwright", "install", "chromium"])
    return "" if ok else f"playwright install chromium failed: {last}"


def provision() -> str:
    """Makes a Chromium available; returns a one-line account of what it did or why it could not."""
    found = system_chromium()
    if found:
        return f"browser: {found}"
    apt = _apt_install()
    if not apt:
        return f"browser: installed Debian's chromium ({system_chromium()})"
    playwright = _playwright_install()
    if not playwright:
        return "browser: Playwright's own Chromium"
    return f"browser: none ({apt}; {playwright}): the viewer's tests will skip"


if __name__ == "__main__":
    print(provision())
