"""``battlesheep match``, ``bench arena`` and the real sample players against the server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena.results import read_results
from client.clock import DEFAULT_MARGIN
from strategies.base import ConfigError
from tests.arena_support import TEMPLATE
from tests.cli_support import BATTLESHEEP, battlesheep
from tournament.cli import seat_entrants
from tournament.run import read_results_file
from tournament.schedule import seat_teams
from tournament.standings import standings


def test_seat_specs() -> None:
    entrants = seat_entrants("random,greedy:seed=3,cmd:prog {port},cmd:team=77:other", 1.0)
    assert [e.name for e in entrants][:2] == ["1:random", "2:greedy:seed=3"]
    assert [e.team for e in entrants] == [None, None, None, 77]
    command = list(entrants[1].command)
    assert command[command.index("--param") + 1] == "seed=3"
    # One play command line for match and tournament: the same margin for the same limit.
    assert command[-4:] == ["--margin", repr(DEFAULT_MARGIN), "--time-limit", "1"]
    assert entrants[3].command == "other"
    # Seat teams: 101..104 by seat, unless an entrant sends a fixed one.
    assert seat_teams(entrants, (3, 0, 1, 2)) == (77, 102, 103, 104)
    with pytest.raises(ConfigError, match="unknown strategy"):
        seat_entrants("random,nosuch,random,random", 1.0)
    with pytest.raises(ConfigError, match="4 comma-separated"):
        seat_entrants("random,random", 1.0)
    # Commands with commas: seats split by ';'.
    entrants = seat_entrants("cmd:a 1,2;random;random;random", 1.0)
    assert entrants[0].command == "a 1,2"


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
    header, rows = read_results_file(results)
    assert header is not None and header["tournament"]["format"] == "round-robin"
    assert sorted(r.index for r in rows) == [0, 1, 2, 3]
    for row in rows:
        k = row.index
        assert row.seed == 3  # one board, played from all four seats
        assert row.seats == [(s - k) % 4 for s in range(4)]  # entrant e in seat (e + k) % 4
        assert row.teams == [101, 102, 103, 104]
        assert row.late == [0, 0, 0, 0] and row.illegal == [0, 0, 0, 0]
        assert row.disconnects == [0, 0, 0, 0]
    assert len({json.dumps(r.final_map) for r in rows}) > 1  # real, different games
    names = [e.name for e in seat_entrants(f"{template},{template} --seed 5,random,greedy", 1.0)]
    rows_by_entrant = standings(names, rows)
    assert all(len(s.points) == 4 for s in rows_by_entrant)
    assert sum(sum(s.points) for s in rows_by_entrant) == pytest.approx(44)
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
    proc = battlesheep("bench", "arena", "--games", "3", check=True)
    figures = dict(line.split("=", 1) for line in proc.stdout.split())
    assert float(figures["games_per_s"]) > 0
    assert float(figures["server_overhead_ms_p99"]) > 0
