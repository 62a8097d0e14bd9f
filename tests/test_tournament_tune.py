"""``battlesheep tune``: SPSA with real games writes a valid, changed parameter file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from strategies.params import load_agent_params
from tests.cli_support import battlesheep


def test_tune_plays_iterations_and_writes_the_estimate(tmp_path: Path) -> None:
    params = tmp_path / "uct.toml"
    # max_iterations keeps each move instant: the games, not the search, are under test.
    params.write_text(
        'strategy = "uct"\n[params]\nexploration = 0.7\nmax_iterations = 5\nseed = 1\n'
    )
    space = tmp_path / "space.toml"
    space.write_text("[exploration]\nmin = 0.1\nmax = 2.0\nstep = 0.3\n")
    out = tmp_path / "tuned.toml"
    run = battlesheep(
        *("tune", "--params", str(params), "--space", str(space), "--out", str(out)),
        *("--iterations", "2", "--games-per-iteration", "2", "--time-limit", "0.5"),
        *("--seed", "3", "--jobs", "2"),
    )
    assert run.returncode == 0, run.stderr
    results = [float(x) for x in re.findall(r"result ([-+][\d.]+)", run.stdout)]
    assert len(results) == 2 and all(-1 <= r <= 1 for r in results)
    plus = re.findall(
        r"plus \{'exploration': ([\d.]+)\} minus \{'exploration': ([\d.]+)\}", run.stdout
    )
    # The first perturbation is one step either side of the start.
    assert sorted(float(x) for x in plus[0]) == [0.4, 1.0]
    tuned = load_agent_params(out)
    assert tuned.strategy == "uct" and tuned.params["max_iterations"] == 5
    assert 0.1 <= float(tuned.params["exploration"]) <= 2.0
    assert f"written to {out}" in run.stdout


def test_tune_rejects_a_space_outside_the_strategy(tmp_path: Path) -> None:
    params = tmp_path / "uct.toml"
    params.write_text('strategy = "uct"\n')
    space = tmp_path / "space.toml"
    space.write_text("[time_fraction]\nmin = 0.5\nmax = 1.5\nstep = 0.1\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "battlesheep",
            "tune",
            "--params",
            str(params),
            "--space",
            str(space),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "space.toml" in run.stderr and "time_fraction" in run.stderr and "<= 1" in run.stderr
