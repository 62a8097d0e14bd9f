"""``--plot FILE``: standings with their intervals, and an SPRT's log-likelihood ratio.

matplotlib is an optional extra (``pip install 'battlesheep[plot]'``); it is
imported only here, with the non-interactive Agg backend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from strategies.base import ConfigError
from tournament.standings import Standing
from tournament.stats import Sprt


def _finite(x: float, fallback: float) -> float:
    return x if math.isfinite(x) else fallback


def plot_tournament(
    path: Path,
    rows: Sequence[Standing],
    sprt: Sprt | None = None,
    llr_history: Sequence[tuple[int, float]] = (),
) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'battlesheep[plot]'") from None
    ordered = sorted(rows, key=lambda r: r.elo.mean)
    panels = 3 if sprt is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 0.5 * len(rows) + 3))
    y = list(range(len(ordered)))
    labels = [r.name for r in ordered]

    elo = [r.elo.mean for r in ordered]
    low = [r.elo.mean - _finite(r.elo.low, r.elo.mean) for r in ordered]
    high = [_finite(r.elo.high, r.elo.mean) - r.elo.mean for r in ordered]
    axes[0].errorbar(elo, y, xerr=[low, high], fmt="o", capsize=4)
    axes[0].axvline(0, color="grey", linewidth=0.8)
    axes[0].set_yticks(y, labels)
    axes[0].set_xlabel("Elo (95% bootstrap interval)")
    axes[0].set_title("ratings")

    points = [r.points_interval for r in ordered]
    means = [p.mean for p in points]
    p_low = [p.mean - _finite(p.low, p.mean) for p in points]
    p_high = [_finite(p.high, p.mean) - p.mean for p in points]
    axes[1].errorbar(means, y, xerr=[p_low, p_high], fmt="s", capsize=4, color="tab:green")
    axes[1].axvline(2.75, color="grey", linewidth=0.8)  # 11 points shared by 4 seats
    axes[1].set_yticks(y, labels)
    axes[1].set_xlabel("tournament points per game (95% t interval)")
    axes[1].set_title("points")

    if sprt is not None:
        ax = axes[2]
        games = [g for g, _ in llr_history] or [0]
        values = [v for _, v in llr_history] or [0.0]
        ax.plot(games, values, color="tab:blue", label="LLR")
        ax.axhline(sprt.upper, color="tab:green", linestyle="--", label=f"H1 {sprt.upper:.2f}")
        ax.axhline(sprt.lower, color="tab:red", linestyle="--", label=f"H0 {sprt.lower:.2f}")
        ax.set_xlabel("games")
        ax.set_title(f"SPRT elo0={sprt.elo0:g} elo1={sprt.elo1:g}")
        ax.legend(loc="best")

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
