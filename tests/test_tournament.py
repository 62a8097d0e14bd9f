"""``battlesheep tournament`` end to end: real servers, real player processes, real Dask.

The entrants are seeded random players, so a game's result depends only on its
board seed and seating: the same tournament must give the same games whatever
runs them (one worker, two workers, interrupted and resumed, a Dask cluster).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arena.results import GameResult
from tests.cli_support import BATTLESHEEP, alive, battlesheep, eventually_dead
from tournament.entrants import parse_entrants
from tournament.run import Tournament, read_results_file
from tournament.runner import LocalRunner
from tournament.schedule import Schedule

Game = GameResult
Reference = tuple[dict[int, Game], str]
ENTRANTS = ["random:seed=1", "random:seed=2"]
GAMES = 6  # one round: the six arrangements of two seats each
# Far above what a random player needs: a move late only because the machine is loaded
# would lose a turn and change a game, and the runs below must agree game for game.
TIME_LIMIT = 5.0
COMMON = ["--games", str(GAMES), "--seed", "40", "--time-limit", f"{TIME_LIMIT:g}"]


def tournament(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return battlesheep("tournament", *args, timeout=timeout)


def games_of(path: Path) -> dict[int, Game]:
    header, games = read_results_file(path)
    assert header is not None and "tournament" in header
    assert len({g.index for g in games}) == len(games), "a game was recorded twice"
    return {g.index: g for g in games}


def outcome(game: Game) -> tuple[Any, ...]:
    return (game.seed, tuple(game.entrants or ()), tuple(game.scores), tuple(game.points))


def standings_rows(stdout: str) -> list[str]:
    """The table rows of the report (the title has timings, the rows must not differ)."""
    return [line for line in stdout.splitlines() if line.startswith("│")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    path = tmp_path_factory.mktemp("ref") / "results.jsonl"
    run = tournament(*ENTRANTS, *COMMON, "--jobs", "2", "--results", str(path))
    assert run.returncode == 0, run.stderr
    return games_of(path), run.stdout


def test_totals_are_right(reference: Reference) -> None:
    games, stdout = reference
    assert sorted(games) == list(range(GAMES))
    for game in games.values():
        assert sum(game.points) == pytest.approx(11)  # 5+3+2+1, ties share their places
        for i in range(4):  # tied results get equal points
            for j in range(4):
                if game.results[i] == game.results[j]:
                    assert game.points[i] == game.points[j]
        assert sorted(game.seats or []) == [0, 0, 1, 1]
    assert f"points given: {11 * GAMES} in {GAMES} games" in stdout
    seats = [line for line in standings_rows(stdout) if "random:seed" in line][:2]
    assert all(re.search(rf"│\s+{2 * GAMES}\s+│", row) for row in seats), seats
    assert "pairwise" in stdout


def test_interrupted_run_resumes_to_the_same_table_with_one_job(
    reference: Reference, tmp_path: Path
) -> None:
    path = tmp_path / "results.jsonl"
    argv = [*BATTLESHEEP, "tournament", *ENTRANTS, *COMMON, "--jobs", "1"]
    proc = subprocess.Popen(
        [*argv, "--results", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # Ctrl-C reaches the whole group, workers included
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= 3:  # header + 2 games
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "--resume" in stdout
    kept = games_of(path)
    assert 2 <= len(kept) < GAMES
    before = path.read_text().splitlines()

    again = tournament(*ENTRANTS, *COMMON, "--jobs", "1", "--results", str(path), "--resume")
    assert again.returncode == 0, again.stderr
    assert f"({GAMES - len(kept)} played now" in again.stdout  # finished games not replayed
    assert path.read_text().splitlines()[: len(before)] == before
    resumed = games_of(path)
    ref_games, ref_stdout = reference
    assert sorted(resumed) == list(range(GAMES))
    assert {k: outcome(g) for k, g in resumed.items()} == {
        k: outcome(g) for k, g in ref_games.items()
    }
    assert standings_rows(again.stdout) == standings_rows(ref_stdout)

    mismatch = tournament(*ENTRANTS, *COMMON[:-1], "0.4", "--results", str(path), "--resume")
    assert mismatch.returncode == 2 and "different tournament" in mismatch.stderr


def test_sprt_stops_on_a_clearly_stronger_entrant(tmp_path: Path) -> None:
    plot = tmp_path / "sprt.png"
    # A never connects (its seats lose every turn); B is a random player.
    run = tournament(
        "absent=cmd:true",
        "random:seed=3",
        "--sprt",
        "0,50",
        "--sprt-min-games",
        "4",
        "--games",
        "40",
        "--seed",
        "7",
        "--time-limit",
        "0.5",
        "--jobs",
        "2",
        "--plot",
        str(plot),
    )
    assert run.returncode == 0, run.stderr
    assert "H1 accepted: random:seed=3 is better than absent" in run.stdout
    llrs = [float(x) for x in re.findall(r"LLR ([-+][\d.]+) in", run.stderr)]
    assert llrs and llrs[-1] >= 2.94  # log((1 - beta) / alpha), reported as it went
    played = int(re.search(r"(\d+) games \(", run.stdout).group(1))  # type: ignore[union-attr]
    assert played < 40
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_api_run_without_results_file_matches_jobs(reference: Reference) -> None:
    """The library path (as tune uses it) with one worker process gives the same games."""
    import tempfile

    entrants = parse_entrants(ENTRANTS, TIME_LIMIT)
    with tempfile.TemporaryDirectory() as logs:
        schedule = Schedule(tuple(entrants), 1, 40, TIME_LIMIT, log_dir=logs)
        runner = LocalRunner(1)
        try:
            result = Tournament(schedule, 2).run(runner)
        finally:
            runner.close()
    ref_games, _ = reference
    assert [outcome(g) for g in result.results] == [outcome(ref_games[k]) for k in (0, 1)]


def test_dask_cluster_started_by_the_test_plays_the_same_games(
    reference: Reference, tmp_path: Path
) -> None:
    """A local cluster started here; one worker busy with a game is killed mid-run, and
    its game is played again elsewhere, giving the same tournament."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    try:
        path = tmp_path / "cluster.jsonl"
        logs = tmp_path / "logs"
        argv = [*BATTLESHEEP, "tournament", *ENTRANTS, *COMMON, "--results", str(path)]
        argv += ["--player-logs", str(logs)]
        proc = subprocess.Popen(
            [*argv, "--cluster", cluster.scheduler_address],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        killed = None
        deadline = time.monotonic() + 60
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy and not list(logs.glob("game*.log")):
                busy = []  # let the first game get its players going first
            if busy:
                pids = client.run(os.getpid, workers=[busy[0]])
                killed = pids[busy[0]]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.2)
        stdout, stderr = proc.communicate(timeout=120)
        assert killed is not None, "no worker was ever busy"
        assert proc.returncode == 0, stderr
        games = games_of(path)
        ref_games, ref_stdout = reference
        assert {k: outcome(g) for k, g in games.items()} == {
            k: outcome(g) for k, g in ref_games.items()
        }
        assert standings_rows(stdout) == standings_rows(ref_stdout)
        # A game killed after its players started was started again (its log appended to);
        # none twice more.
        starts = [p.read_text().count("# arena:") for p in logs.glob("game*-seat1-*.log")]
        assert len(starts) == GAMES and max(starts) <= 2 and starts.count(2) <= 1, starts
    finally:
        client.close()
        cluster.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_killed_run_leaves_no_worker_behind(tmp_path: Path) -> None:
    """The process that started a ``LocalRunner`` is killed outright (SIGKILL, no
    ``close()``): its worker processes end by themselves instead of waiting on their call
    queue for ever."""
    script = tmp_path / "run.py"
    script.write_text(
        "import os, time\n"
        "from tournament.runner import LocalRunner\n"
        "if __name__ == '__main__':\n"
        "    runner = LocalRunner(2)\n"
        "    pids = {runner.pool.submit(os.getpid).result() for _ in range(8)}\n"
        "    print(*sorted(pids), flush=True)\n"
        "    time.sleep(600)\n"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        assert proc.stdout is not None
        workers = [int(pid) for pid in proc.stdout.readline().split()]
        assert workers and all(alive(pid) for pid in workers)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert eventually_dead(workers, 60) == []  # a bound on the wait, not a measure of speed
