"""``make agent1`` builds a single-file player that plays a full game against the arena."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from arena.results import GameResult
from strategies.kernel import fast_available
from strategies.parallel import available_cores
from tests.cli_support import battlesheep
from tournament.build import CLIENT_PACKAGES
from tournament.entrants import play_command
from tournament.runner import play_task
from tournament.schedule import GameTask

ROOT = Path(__file__).resolve().parent.parent
TEAM = 7


def base_python() -> str:
    """The interpreter outside the virtual environment: no project, no dependencies."""
    for name in ("python3", "python"):
        candidate = Path(sys.base_prefix) / "bin" / name
        if candidate.exists():
            return str(candidate)
    pytest.skip("no base interpreter found")


@pytest.fixture(scope="module")
def agent1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    run = subprocess.run(
        ["make", "--no-print-directory", "agent1", f"TEAM={TEAM}", f"DIST={dist}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    built = dist / f"team{TEAM}_agent1"
    assert built.is_file() and os.access(built, os.X_OK)
    return built


def test_client_packages_are_all_play_needs() -> None:
    """The build copies CLIENT_PACKAGES only: `play` must not import anything else of ours."""
    code = (
        "import sys, client.agent_entry, client.cli\n"
        "ours = {'battlesheep', 'arena', 'bench', 'tournament', *sys.argv[1:]}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & ours))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *CLIENT_PACKAGES],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert eval(out) == sorted(CLIENT_PACKAGES)


def test_built_agent_carries_the_fast_kernel(agent1: Path) -> None:
    """Where the ``fast`` extra is installed (always in CI), the zipapp carries numba."""
    if not fast_available():
        pytest.skip("numba is not installed here: the agent is built without it")
    with zipfile.ZipFile(agent1) as built:
        names = built.namelist()
    assert any(n.startswith("site-packages/numba/") for n in names)
    assert "site-packages/strategies/kernel/fast.py" in names


def test_built_agent_defaults_to_the_course_server(agent1: Path, tmp_path: Path) -> None:
    env = {**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")}
    # Nothing listens on 8887 for long in a test run; a short --connect-for ends it.
    run = subprocess.run(
        [base_python(), "-I", "-S", str(agent1), "--connect-for", "0.3"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert f"team {TEAM} plays game 1 as hybrid on 127.0.0.1:8887" in run.stderr, run.stderr


def play_built(
    agent: Path, tmp_path: Path, limit: float, seed: int, options: tuple[str, ...]
) -> tuple[GameResult, str]:
    """A game of game 1 of the built agent (seat 1, with ``options``) against three
    random players; its result and the agent's log."""
    player: tuple[str, ...] = (base_python(), "-I", "-S", str(agent), "--host", "{host}")
    player += ("--port", "{port}", "--time-limit", str(limit), *options)
    sample = play_command("random", {"seed": 5}, limit)
    task = GameTask(
        index=0,
        game=1,
        seed=seed,
        seats=(0, 1, 2, 3),
        names=("agent1", "r2", "r3", "r4"),
        commands=(player, sample, sample, sample),
        teams=(TEAM, 102, 103, 104),
        time_limit=limit,
        connect_timeout=90.0,  # the first run unpacks the zipapp
        log_dir=str(tmp_path / "logs"),
    )
    result = play_task(task)
    return result, next((tmp_path / "logs").glob("game1-seat1-*.log")).read_text()


def test_built_agent_plays_a_full_game(
    agent1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHIV_ROOT", str(tmp_path / "shiv"))
    # Half the clock as margin: under a full suite's load on two cores the referee once
    # saw a reply 0.15 s short of the limit arrive late; the test is of the built agent,
    # not of the machine's scheduling.
    result, log = play_built(agent1, tmp_path, 1.0, 11, ("--margin", "0.5"))
    assert f"team {TEAM} plays game 1 as hybrid" in log
    for key in ("illegal", "late", "absent", "disconnects", "protocol_errors"):
        assert getattr(result, key)[0] == 0, (key, result, log[-2000:])
    cells = sum(row.count(1) for row in result.final_map)
    assert cells >= 2 and result.scores[0] > 0  # it placed and moved
    assert not result.stalled


def test_built_agent_searches_on_every_core(
    agent1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """agent1.toml has ``workers=-1``: the zipapp's spawned search workers start (they
    find the unpacked packages on the parent's path) and join its searches. The Python
    kernel, so that the workers need not wait for a compile in a fresh SHIV_ROOT."""
    cores = available_cores()
    if cores < 2:
        pytest.skip("one core: the agent searches alone")
    monkeypatch.setenv("SHIV_ROOT", str(tmp_path / "shiv"))
    options = ("--param", "kernel=python", "--margin", "0.5")  # the margin: as above
    result, log = play_built(agent1, tmp_path, 1.0, 12, options)
    assert result.illegal[0] == 0 and result.late[0] == 0, log[-2000:]
    assert f" workers={cores - 1} " in log, log[-3000:]


@pytest.mark.parametrize("team", ["-3", "0", "2147483648", "seven"])
def test_build_and_play_refuse_a_team_id_the_wire_cannot_carry(team: str) -> None:
    for command in (["build", "--agent", "1", "--team", team], ["play", "--team", team]):
        proc = battlesheep(*command)
        assert proc.returncode == 2
        assert "team id must be" in proc.stderr and "Traceback" not in proc.stderr
