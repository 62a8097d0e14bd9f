"""``battlesheep match``, ``bench arena`` and the real sample players against the server."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from arena.config import ConfigError
from arena.match import ci95, parse_entrants, seating, tally
from arena.results import read_results
from tests.arena_support import TEMPLATE

BATTLESHEEP = [sys.executable, "-m", "battlesheep"]


def test_seating_rotates_every_entrant_through_every_seat() -> None:
    seats_of = {e: sorted(seating(k).index(e) for k in range(4)) for e in range(4)}
    assert all(s == [0, 1, 2, 3] for s in seats_of.values())
    assert seating(4) == seating(0)


def test_ci95() -> None:
    assert math.isnan(ci95([3.0]))
    assert ci95([1.0, 1.0, 1.0]) == 0
    # n = 2, t = 12.706: half-width = 12.706 * stdev / sqrt(2)
    assert ci95([1.0, 5.0]) == pytest.approx(12.706 * 2.8284271 / 1.4142136)
    assert ci95([float(i % 2) for i in range(100)]) == pytest.approx(1.96 * 0.50252 / 10, 1e-3)


def test_seat_specs() -> None:
    entrants = parse_entrants("random,greedy:seed=3,cmd:prog {port},cmd:team=77:other", 1.0)
    assert [e.team for e in entrants] == [101, 102, 103, 77]
    assert entrants[1].command[-4:] == ["--param", "seed=3", "--time-limit", "1"]
    assert entrants[3].command == "other"
    with pytest.raises(ConfigError, match="unknown strategy"):
        parse_entrants("random,nosuch,random,random", 1.0)
    with pytest.raises(ConfigError, match="4 comma-separated"):
        parse_entrants("random,random", 1.0)


def test_match_with_template_and_sample_players(tmp_path: Path) -> None:
    template = f"cmd:{sys.executable} {TEMPLATE} {{team}} {{port}} --game {{game}}"
    results = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [
            *BATTLESHEEP,
            "match",
            "--game",
            "1",
            "--games",
            "4",
            "--jobs",
            "2",
            "--seed",
            "3",
            "--seats",
            f"{template},{template} --seed 5,random,greedy",
            "--time-limit",
            "1.0",
            "--results",
            str(results),
            "--player-logs",
            str(tmp_path / "logs"),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    rows = read_results(results)
    assert sorted(r.index for r in rows) == [0, 1, 2, 3]
    for row in rows:
        k = row.index
        assert row.seed == 3  # one board, played from all four seats
        assert row.teams == [101 + e for e in seating(k)]
        assert row.late == [0, 0, 0, 0] and row.illegal == [0, 0, 0, 0]
        assert row.disconnects == [0, 0, 0, 0]
    assert len({json.dumps(r.final_map) for r in rows}) > 1  # real, different games
    entrants = parse_entrants(f"{template},{template} --seed 5,random,greedy", 1.0)
    stats = tally(entrants, rows)
    assert all(len(s.points) == 4 for s in stats)
    assert sum(sum(s.points) for s in stats) == 44
    table = proc.stdout
    assert "points/game" in table and "greedy" in table and "random" in table


def test_sample_players_play_every_setting_via_serve(tmp_path: Path) -> None:
    """`battlesheep play` and `battlesheep sample` processes, started from input.txt."""
    lines = []
    commands = [
        "play --strategy random",
        "sample random",
        "sample greedy",
        "sample random",
    ]
    for team, command in zip((1, 2, 3, 4), commands, strict=True):
        lines += [str(team), f"{sys.executable} -m battlesheep {command}"]
        lines[-1] += " --game {game} --port {port} --team {team} --time-limit 1"
    (tmp_path / "input.txt").write_text("\n".join(lines) + "\n")
    results = tmp_path / "r.jsonl"
    for game in (2, 3):
        proc = subprocess.run(
            [
                *BATTLESHEEP,
                "serve",
                "--players",
                "input.txt",
                "--port",
                "0",
                "--game",
                str(game),
                "--time-limit",
                "1.0",
                "--results",
                str(results),
                "--seed",
                str(game),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert "winner" in proc.stdout
    rows = read_results(results)
    assert [r.game for r in rows] == [2, 3]
    for row in rows:
        assert row.illegal == [0, 0, 0, 0] and row.late == [0, 0, 0, 0]
        assert row.disconnects == [0, 0, 0, 0] and row.absent == [0, 0, 0, 0]
        assert row.moves > 20


def test_bench_arena_prints_its_figures() -> None:
    proc = subprocess.run(
        [*BATTLESHEEP, "bench", "arena", "--games", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    figures = dict(line.split("=", 1) for line in proc.stdout.split())
    assert float(figures["games_per_s"]) > 0
    assert float(figures["server_overhead_ms_p99"]) > 0
