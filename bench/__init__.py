"""``battlesheep bench``: measurements of speed and strength, each printing ``name=value``.

One module per target: ``engine`` (the state's playouts, move generation and
ingest), ``belief`` (game 3's hidden-count estimates), ``priors`` (how well the
tree's priors predict each seat's slides), ``value`` (how well a leaf's value,
one playout or an evaluation, predicts how a game ends), ``strength`` (points per
game against fields of yardsticks, through the tournament runner), ``client``
(the client's own cost per turn over TCP), ``arena`` (the server under load)
and ``tournament`` (games per second of the runner).
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
from collections.abc import Iterator, Mapping

GAME_LOGGERS = ("arena", "client")
"""The loggers of the game loop's seats and referee: one line per turn, off in benches."""


def quiet_games() -> None:
    """Benchmarks print figures, not the INFO line of every turn of the games they play."""
    for name in GAME_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def plain(value: float) -> str:
    """A figure as a plain number (no exponent): whole numbers bare, large ones to one
    decimal, small ones to four significant digits."""
    number = float(value)
    if number.is_integer():
        return str(int(number))
    if abs(number) >= 100:
        return f"{number:.1f}"
    text = f"{number:.4g}"
    if "e" in text:
        text = f"{number:.12f}".rstrip("0")
    return text


def print_figures(figures: Mapping[str, float | str]) -> None:
    """Benchmarks print one ``name=value`` line per figure (a word, such as a kernel's
    name, as it is)."""
    for name, value in figures.items():
        print(f"{name}={value if isinstance(value, str) else plain(value)}")


HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
"""A CPU hog: burns one core until its time is up (it ends by itself)."""


@contextlib.contextmanager
def cpu_hogs(count: int, seconds: float) -> Iterator[None]:
    """``count`` processes burning a core each while the block runs (at most ``seconds``)."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", HOG.format(seconds=seconds)]) for _ in range(count)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
