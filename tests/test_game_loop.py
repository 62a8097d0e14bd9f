"""The one game loop: in-process seats are client sessions judged by the arena's referee,
and many games of any kind go through the tournament's schedule and runner."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from arena.local import play_local
from arena.referee import Event, GameRecord
from arena.replay import positions, read_replay
from arena.results import GameResult, result_of
from bench.games import random_game
from bench.strength import field_lineup, results_file, summarize
from state.game import UNKNOWN, GameState, Move
from state.observe import IngestReport
from state.scoring import flood_scores
from strategies.base import Budget
from strategies.baselines import RandomStrategy
from strategies.parallel import available_cores
from strategies.registry import make_strategy
from tests.cli_support import battlesheep
from tournament.entrants import builtin_entrant
from tournament.schedule import Schedule, arrangements


def players(*names: str) -> list[Any]:
    return [make_strategy(name, {"seed": k}) for k, name in enumerate(names)]


@pytest.mark.parametrize("game", [1, 2, 3, 4])
def test_an_in_process_game_is_played_to_the_end_by_the_referee(game: int) -> None:
    played = play_local(game, 5, players("greedy", "random", "greedy", "random"), 1.0)
    record = played.record
    state = record.state
    assert state.is_terminal() and not record.stalled
    assert [s.illegal + s.late + s.absent for s in record.stats] == [0, 0, 0, 0]
    assert state.scores() == flood_scores(state.geometry, state.owner)
    result = result_of(record)
    assert sum(result.points) == pytest.approx(11.0)
    # Every seat's moves were asked for, answered and recorded with the search figures.
    for seat in range(1, 5):
        moves = [e for e in record.events if e.seat == seat and e.kind == "move"]
        assert len(played.figures[seat - 1]) == len(moves) > 0


class Keeper(RandomStrategy):
    """Plays at random and keeps every board it is shown."""

    name = "keeper"

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.views: list[GameState] = []

    def observe(self, state: GameState, report: IngestReport) -> None:
        self.views.append(state.copy())


class Watcher(Keeper):
    """Keeps every board it is shown, and answers with an illegal placement."""

    name = "watcher"

    def place(self, state: GameState, budget: Budget) -> int:
        return -5

    def move(self, state: GameState, budget: Budget) -> Move | None:
        return Move(-1, 1, 2)


def test_in_process_seats_see_what_a_client_sees_and_never_send_an_illegal_reply() -> None:
    watcher = Watcher({"seed": 1})
    played = play_local(3, 9, [watcher, *players("random", "random", "random")], 1.0)
    # Game 3: the seat's own view never shows another seat's count.
    others = [
        view.sheep[c] for view in watcher.views for seat in (2, 3, 4) for c in view.stacks[seat]
    ]
    assert others and all(count == UNKNOWN for count in others)
    # What the strategy got wrong, the session's legal fallback answered.
    assert played.record.stats[0].illegal == 0
    placed = [e for e in played.record.events if e.seat == 1 and e.kind == "place"]
    assert placed[0].outcome == "ok"
    assert sum(1 for e in played.record.events if e.seat == 1 and e.kind == "move") > 0


def test_a_revealed_seat_sees_every_count_in_game_3_and_the_others_do_not() -> None:
    blind, seeing = Keeper({"seed": 1}), Keeper({"seed": 2})
    played = play_local(3, 9, [blind, seeing, *players("random", "random")], 1.0, reveal=(2,))
    assert played.record.state.is_terminal()
    assert len(seeing.views) >= 3 and len(blind.views) >= 3
    for view in seeing.views:
        for seat in (1, 2, 3, 4):
            counts = [view.sheep[c] for c in view.stacks[seat]]
            assert UNKNOWN not in counts
            assert not counts or sum(counts) == 16
    others = [v.sheep[c] for v in blind.views for seat in (2, 3, 4) for c in v.stacks[seat]]
    assert others and all(count == UNKNOWN for count in others)


def test_revealed_entrants_are_the_seats_they_sit_in_each_game() -> None:
    from strategies.base import ConfigError

    measured = builtin_entrant("hybrid", "hybrid", {}, 1.0)
    entrants, lineup = field_lineup("uct", 3, measured, 1.0)
    schedule = Schedule(tuple(entrants), 3, 1, 1.0, "field", lineup=lineup, local=True, reveal=(0,))
    schedule.check()
    for index in range(8):
        task = schedule.task(index)
        assert task.reveal == (task.seats.index(0) + 1,)
    with pytest.raises(ConfigError, match="in-process"):
        Schedule(tuple(entrants), 3, 1, 1.0, "field", lineup=lineup, reveal=(0,)).check()
    proc = _bench("strength", "--game", "1", "--reveal")
    assert proc.returncode == 2 and "game 1 hides none" in proc.stderr


class Granted(RandomStrategy):
    """Plays at random and keeps the seconds each choice was granted."""

    name = "granted"

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.grants: list[float] = []

    def place(self, state: GameState, budget: Budget) -> int:
        self.grants.append(budget.deadline - budget.started)
        return super().place(state, budget)

    def move(self, state: GameState, budget: Budget) -> Move | None:
        self.grants.append(budget.deadline - budget.started)
        return super().move(state, budget)


def test_in_process_seats_think_by_their_own_clocks_under_the_referees_limit() -> None:
    from strategies.base import ConfigError

    seats = [Granted({"seed": k}) for k in range(4)]
    played = play_local(1, 7, seats, 1.0, clocks=(1.0, 0.2, 0.2, 0.2))
    assert played.record.state.is_terminal()
    assert [s.late + s.illegal for s in played.record.stats] == [0, 0, 0, 0]
    # A grant is counted from when the choice began, so it is never above the clock; the
    # long seat was granted more than the short clock at least once in its many choices.
    assert all(0 < g <= 0.2 for seat in seats[1:] for g in seat.grants)
    assert len(seats[0].grants) > 3 and max(seats[0].grants) > 0.2
    # A seat may not think for longer than the referee allows, nor for no time.
    for clocks in [(1.0, 2.0, 1.0, 1.0), (1.0, 0.0, 1.0, 1.0), (1.0, 1.0)]:
        with pytest.raises(ConfigError):
            play_local(1, 7, players("random", "random", "random", "random"), 1.0, clocks=clocks)


def test_a_field_clock_reaches_the_tasks_of_in_process_games_only() -> None:
    from dataclasses import replace

    from strategies.base import ConfigError

    measured = builtin_entrant("greedy", "greedy", {}, 3.0)
    entrants, lineup = field_lineup("random,random,random", 1, measured, 1.0)
    schedule = Schedule(tuple(entrants), 1, 1, 3.0, "field", lineup=lineup, local=True)
    schedule.check()
    for index in range(4):
        task = schedule.task(index)
        assert task.time_limit == 3.0
        assert task.clocks == tuple(3.0 if e == 0 else 1.0 for e in task.seats)
        # The field's player commands carry the field's clock too.
        for e, command in zip(task.seats, task.commands, strict=True):
            assert command[-2:] == ("--time-limit", "3" if e == 0 else "1")
    assert replace(schedule, local=False).task(0).clocks == ()
    slow = builtin_entrant("slow", "greedy", {}, 5.0)
    with pytest.raises(ConfigError, match="'slow' thinks for 5 s"):
        replace(schedule, entrants=(*entrants, slow)).check()


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.over: GameRecord | None = None

    def game_started(self, *args: object) -> None:
        pass

    def turn_played(self, event: Event, state: GameState) -> None:
        self.events.append(event)

    def game_over(self, record: GameRecord) -> None:
        self.over = record


def test_the_same_listener_watches_in_process_games() -> None:
    recorder = Recorder()
    played = play_local(
        1, 4, players("random", "random", "random", "random"), 1.0, listener=recorder
    )
    assert recorder.over is played.record
    assert recorder.events == played.record.events


def test_demo_shows_a_game_of_the_seats_asked_for_to_its_points() -> None:
    """``battlesheep demo`` in a fresh process, a seat on the fast kernel among them:
    every turn printed, the final scores and the points (5, 3, 2, 1 shared on ties)."""
    proc = battlesheep(
        "demo", "--seed", "3", "--time-limit", "0.3",
        "--seats", "flatmc:playouts=1,greedy,random,random", timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "game 1, seed 3" in out and "turn 1: seat 1 moves" in out
    assert "final:" in out
    points = json.loads(out.rsplit("points:", 1)[1].strip())
    assert sorted(points, reverse=True)[0] >= 4.0 and sum(points) == pytest.approx(11.0)
    bad = battlesheep("demo", "--seats", "random,random")
    assert bad.returncode == 2 and "--seats needs 4 strategies, not 2" in bad.stderr


def test_bench_games_come_from_the_game_loop() -> None:
    watched = random_game(1, 3, seat=2)
    assert watched.boards and watched.positions
    assert all(not p.placing and p.has_moves() for p in watched.positions)
    assert random_game(1, 3, seat=2).boards == watched.boards  # seeded: the same game


def test_field_lineups_put_the_measured_entrant_in_every_seat() -> None:
    measured = builtin_entrant("hybrid", "hybrid", {}, 1.0)
    entrants, lineup = field_lineup("uct", 1, measured, 1.0)
    assert lineup == (0, 1, 1, 1) and [e.strategy for e in entrants] == ["hybrid", "uct"]
    rounds = arrangements(len(entrants), "field", lineup)
    assert sorted(a.index(0) for a in rounds) == [0, 1, 2, 3]
    entrants, lineup = field_lineup("mixed", 1, measured, 1.0)
    assert lineup == (0, 1, 2, 3) and len(entrants) == 4
    entrants, lineup = field_lineup("pair-uct", 4, measured, 1.0)
    rounds = arrangements(len(entrants), "field", lineup)
    assert rounds == [(0, 1, 0, 1), (1, 0, 1, 0)]


def test_match_seating_is_the_round_robin_of_four() -> None:
    # Game k: entrant e in seat (e + k) % 4, on the board of round k // 4.
    rounds = arrangements(4, "round-robin")
    for k, seats in enumerate(rounds):
        assert [seats.index(e) for e in range(4)] == [(e + k) % 4 for e in range(4)]


def test_in_process_schedules_refuse_programs() -> None:
    from strategies.base import ConfigError
    from tournament.entrants import parse_entrant

    entrants = (builtin_entrant("a", "random", {}, 1.0), parse_entrant("cmd:prog", 1.0))
    with pytest.raises(ConfigError, match="cannot play in-process"):
        Schedule(entrants, 1, 1, 1.0, local=True).check()


def _result(seats: list[int], points: list[float], late: int = 0, game: int = 4) -> GameResult:
    """A recorded in-process game of a field (the measured entrant is 0)."""
    played = play_local(game, 1, players("random", "random", "random", "random"), 1.0)
    search = [
        {"moves": 10.0, "iterations": 100.0, "time_used": 0.5, "time_used_max": 0.9}
        | {"time_used_median": 0.6}
    ] * 4
    result = result_of(played.record, 0, search).with_entrants(["m", "f"] * 2, seats)
    return result.model_copy(update={"points": points, "late": [late, 0, 0, 0]})


def test_strength_summary_of_the_measured_seat() -> None:
    results = [
        _result([0, 1, 0, 1], [4.0, 1.5, 4.0, 1.5]),
        _result([1, 0, 1, 0], [4.0, 1.5, 4.0, 1.5], late=1),
    ]
    figures = summarize(results, 4)
    assert figures["pair_win_rate"] == 0.5
    assert figures["points_per_game"] == 2.75
    assert figures["late_moves"] == 0  # the late seat was the other pair's
    assert figures["iterations_per_move"] == 100.0 and figures["moves"] == 20
    assert figures["time_used_median"] == 0.6
    # The field is the other pair: seats 2 and 4 of the first game, 1 and 3 of the second.
    field = [results[0].scores[1], results[0].scores[3], results[1].scores[0]]
    field.append(results[1].scores[2])
    assert figures["field_score_per_game"] == pytest.approx(sum(field) / 4)


def test_strength_summary_counts_places_and_points_by_turn_order() -> None:
    # The measured entrant (0) sits first, second, third and fourth to move in turn.
    rows = [
        ([0, 1, 1, 1], [5.0, 3.0, 2.0, 1.0], [1, 2, 3, 4]),
        ([1, 0, 1, 1], [3.0, 5.0, 2.0, 1.0], [2, 1, 3, 4]),
        ([1, 1, 0, 1], [5.0, 3.0, 1.0, 2.0], [1, 2, 4, 3]),
        ([1, 1, 1, 0], [5.0, 2.0, 1.0, 3.0], [1, 3, 4, 2]),
    ]
    results = [
        _result(seats, points, game=1).model_copy(update={"ranks": ranks})
        for seats, points, ranks in rows
    ]
    figures = summarize(results, 1)
    assert figures["points_per_game"] == 3.5
    assert [figures[f"place{k}_share"] for k in (1, 2, 3, 4)] == [0.5, 0.25, 0.0, 0.25]
    assert [figures[f"seat{k}_points"] for k in (1, 2, 3, 4)] == [5.0, 5.0, 1.0, 3.0]
    # A seat the measured entrant never sat in has no figure (not a zero).
    assert "seat4_points" not in summarize(results[:3], 1)


def test_strength_summary_says_what_the_cells_lost_by_being_split() -> None:
    # Seat 1 (measured) holds 3 cells in two regions (2 + 1: 3.38, rounded 3), seat 2 3
    # cells in one (3.95, rounded 4), seats 3 and 4 a cell each.
    final_map = [[-1] * 12 for _ in range(12)]
    for row, col, seat in ((0, 0, 1), (0, 1, 1), (5, 5, 1), (2, 0, 2), (2, 1, 2), (2, 2, 2)):
        final_map[row][col] = seat
    final_map[8][8], final_map[9][9] = 3, 4
    exact = [2**1.25 + 1, 3**1.25, 1.0, 1.0]
    result = _result([0, 1, 1, 1], [3.0, 5.0, 1.5, 1.5], game=1).model_copy(
        update={"final_map": final_map, "exact_scores": exact, "scores": [3, 4, 1, 1]}
    )
    figures = summarize([result], 1)
    assert figures["cells_per_game"] == 3
    assert figures["field_cells_per_game"] == pytest.approx(5 / 3)
    assert figures["region_loss_per_game"] == pytest.approx(3**1.25 - 2**1.25 - 1)
    assert figures["field_region_loss_per_game"] == pytest.approx(0.0)
    # As one region seat 1 would have rounded to 4 and shared first place with seat 2.
    assert figures["one_region_points_per_game"] == 4.0
    assert figures["points_per_game"] == 3.0


def test_strength_summary_says_how_often_the_score_hit_its_ceiling() -> None:
    # Game 1's ceiling is 32 (16 cells in one region). In the first game the measured
    # seat (1) and a seat of the field (3) both reach it and share first place; in the
    # second the measured seat (now 2) reaches it alone; in the third nobody does.
    def game(seats: list[int], scores: list[int], points: list[float]) -> GameResult:
        result = _result(seats, points, game=1)
        return result.model_copy(update={"scores": scores})

    results = [
        game([0, 1, 1, 1], [32, 20, 32, 17], [4.0, 2.0, 4.0, 1.0]),
        game([1, 0, 1, 1], [31, 32, 25, 17], [3.0, 5.0, 2.0, 1.0]),
        game([1, 1, 0, 1], [31, 25, 30, 17], [5.0, 2.0, 3.0, 1.0]),
    ]
    figures = summarize(results, 1)
    assert figures["perfect_share"] == pytest.approx(2 / 3)
    assert figures["field_perfect_share"] == pytest.approx(1 / 3)
    # First alone only in the second game: the first shared it, the third was second.
    assert figures["first_alone_share"] == pytest.approx(1 / 3)


def _figures(stdout: str) -> dict[str, str]:
    return dict(line.split("=") for line in stdout.splitlines() if "=" in line)


def _bench(*argv: str) -> subprocess.CompletedProcess[str]:
    """``battlesheep bench ARGV...`` in a fresh process (``battlesheep``)."""
    return battlesheep("bench", *argv)


def test_bench_strength_keeps_its_games_and_resumes_them(tmp_path: Path) -> None:
    argv = [
        *("strength", "--strategy", "greedy"),
        *("--field", "random,random,random", "--games", "4", "--time-limit", "0.5"),
        *("--jobs", "1", "--seed", "3", "--results", str(tmp_path)),
    ]

    def bench(*extra: str) -> subprocess.CompletedProcess[str]:
        return _bench(*argv, *extra)

    first = bench()
    assert first.returncode == 0, first.stderr
    kept = tmp_path / "game1-random+random+random.jsonl"
    lines = kept.read_text().splitlines()
    assert len(lines) == 5 and "tournament" in json.loads(lines[0])
    assert [json.loads(line)["index"] for line in lines[1:]] == [0, 1, 2, 3]
    # Run again on the same file without --resume: refused, the file named, nothing lost.
    again = bench()
    assert again.returncode != 0 and str(kept) in again.stderr and "--resume" in again.stderr
    assert kept.read_text().splitlines() == lines
    # The last game torn (a run killed while writing it): --resume plays that one only.
    kept.write_text("\n".join(lines[:4]) + "\n" + lines[4][:40])
    resumed = bench("--resume")
    assert resumed.returncode == 0, resumed.stderr
    figures = _figures(resumed.stdout)
    assert figures["random+random+random.played"] == "1"
    assert figures["random+random+random.games"] == "4"
    assert kept.read_text().splitlines()[:4] == lines[:4]
    # Nothing left to play: the same games reported again.
    report = bench("--resume")
    assert report.returncode == 0, report.stderr
    again_figures = _figures(report.stdout)
    assert again_figures["random+random+random.played"] == "0"
    for key in ("games", "points_per_game", "score_per_game", "place1_share"):
        key = f"random+random+random.{key}"
        assert again_figures[key] == figures[key]


def test_bench_strength_records_a_replay_of_every_game(tmp_path: Path) -> None:
    field = "random,random,random"
    proc = _bench(
        *("strength", "--strategy", "greedy", "--field", field, "--games", "4"),
        *("--time-limit", "0.5", "--jobs", "1", "--seed", "7"),
        *("--results", str(tmp_path / "res"), "--record", str(tmp_path / "rec")),
    )
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / "rec" / "game1-random+random+random"
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [f"game{i}-seed7.msgpack" for i in (1, 2, 3, 4)]
    kept = (tmp_path / "res" / "game1-random+random+random.jsonl").read_text().splitlines()
    games = [json.loads(line) for line in kept[1:]]
    for path, game in zip(files, games, strict=True):
        replay = read_replay(path)
        # The replay is the game of the results line: its seats' scores and points, and
        # every placement and move, replayed by the rules, end on its final map.
        assert (replay.seed, replay.scores, replay.points) == (7, game["scores"], game["points"])
        placed = [e.seat for e in replay.events if e.kind == "place"]
        assert placed == [1, 2, 3, 4]
        *_, (_, state) = positions(replay)
        assert state.is_terminal()
        n = state.geometry.size
        owners = [[state.owner[x * n + y] for y in range(n)] for x in range(n)]
        assert owners == replay.final_map == game["final_map"]


def test_results_files_are_named_by_game_and_field() -> None:
    assert results_file(None, 1, "uct") is None
    assert results_file("out", 2, "flatmc") == Path("out/game2-flatmc.jsonl")
    # A seat spec's path does not make a folder of its own.
    named = results_file("out", 1, "params/agent1.toml+uct+uct")
    assert named == Path("out/game1-params_agent1.toml+uct+uct.jsonl")


def test_bench_strength_resume_needs_the_results_folder() -> None:
    proc = refused_bench("--resume")
    assert proc.returncode != 0 and "--results" in proc.stderr


def test_bench_strength_command_plays_through_the_runner(tmp_path: Path) -> None:
    proc = _bench(
        *("strength", "--strategy", "greedy", "--field", "random,random,random"),
        *("--games", "4", "--time-limit", "0.5", "--jobs", "1"),
    )
    assert proc.returncode == 0, proc.stderr
    figures = _figures(proc.stdout)
    assert figures["random+random+random.games"] == "4"
    assert float(figures["random+random+random.points_per_game"]) > 2.75
    assert figures["random+random+random.illegal_moves"] == "0"


def _measured(line: dict[str, Any], key: str) -> float:
    """The measured strategy's (entrant 0's) figure in a results file's game line."""
    return float(line[key][line["seats"].index(0)])


def test_bench_strength_pairs_a_run_with_a_baseline_game_by_game(tmp_path: Path) -> None:
    field = ("--field", "random,random,random", "--games", "4", "--time-limit", "0.5")

    def bench(strategy: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return _bench("strength", "--strategy", strategy, *field, "--jobs", "1", *extra)

    base, other = tmp_path / "base", tmp_path / "other"
    first = bench("greedy", "--seed", "3", "--results", str(base))
    assert first.returncode == 0, first.stderr
    second = bench("random", "--seed", "3", "--results", str(other), "--baseline", str(base))
    assert second.returncode == 0, second.stderr
    figures = {k.split(".", 1)[1]: float(v) for k, v in _figures(second.stdout).items()}
    name = "game1-random+random+random.jsonl"
    games = [
        {g["index"]: g for g in map(json.loads, (folder / name).read_text().splitlines()[1:])}
        for folder in (other, base)
    ]
    points = [_measured(games[0][i], "points") - _measured(games[1][i], "points") for i in range(4)]
    scores = [_measured(games[0][i], "scores") - _measured(games[1][i], "scores") for i in range(4)]
    assert figures["paired_games"] == 4
    assert figures["paired_points_diff"] == pytest.approx(sum(points) / 4, abs=1e-3)
    assert figures["paired_score_diff"] == pytest.approx(sum(scores) / 4, abs=1e-3)
    assert figures["paired_points_sd"] == pytest.approx(statistics.stdev(points), abs=1e-3)
    assert figures["paired_score_sd"] == pytest.approx(statistics.stdev(scores), abs=1e-3)
    assert figures["paired_points_ci95_low"] <= figures["paired_points_diff"]
    assert figures["paired_points_diff"] <= figures["paired_points_ci95_high"]

    # Other boards: refused before a game is played.
    refused = [bench("random", "--seed", "4", "--baseline", str(base))]
    # A kept run against another field (its header hand-edited): refused too.
    lines = (base / name).read_text().splitlines()
    header = json.loads(lines[0])
    command = header["tournament"]["entrants"][1]["command"]
    command[command.index("random")] = "greedy"
    (base / name).write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    refused.append(bench("random", "--seed", "3", "--baseline", str(base)))
    says = ["with seed 3, this run with 4", "another field"]
    for proc, text in zip(refused, says, strict=True):
        assert proc.returncode == 2 and "--baseline" in proc.stderr and text in proc.stderr
        assert "points_per_game" not in proc.stdout

    # A kept game whose board differs from this run's game of that index: named.
    edited = json.loads(lines[1]) | {"seed": 99}
    (base / name).write_text("\n".join([lines[0], json.dumps(edited), *lines[2:]]) + "\n")
    again = ("--results", str(other), "--resume", "--baseline", str(base))
    proc = bench("random", "--seed", "3", *again)
    assert proc.returncode == 2 and f"game {edited['index']} had seed 99" in proc.stderr


def test_bench_strength_reads_its_baseline_at_the_end_of_the_run(tmp_path: Path) -> None:
    """A baseline not there when the run starts (a run started beside it) is not refused:
    it is read when the run ends, over the games it holds then; one still missing then is
    an error after the run's own figures, and the run's games are kept."""
    field = ("--field", "random,random,random", "--games", "3", "--time-limit", "0.5")
    argv = ["strength", "--strategy", "random", *field, "--jobs", "1", "--seed", "5"]

    # Its own --results folder as the baseline: empty at the start, its 3 games at the end.
    run = tmp_path / "run"
    proc = _bench(*argv, "--results", str(run), "--baseline", str(run))
    assert proc.returncode == 0, proc.stderr
    assert "is not there yet" in proc.stderr
    figures = {k.split(".", 1)[1]: float(v) for k, v in _figures(proc.stdout).items()}
    assert figures["games"] == 3 and figures["paired_games"] == 3
    assert figures["paired_points_diff"] == 0 and figures["paired_score_diff"] == 0

    # A baseline that never comes: this run's figures, then the error naming the file.
    kept, nowhere = tmp_path / "kept", tmp_path / "nowhere"
    proc = _bench(*argv, "--results", str(kept), "--baseline", str(nowhere))
    assert proc.returncode == 2
    name = "game1-random+random+random.jsonl"
    assert f"{nowhere / name} does not exist, at the end of the run either" in proc.stderr
    assert "random+random+random.points_per_game" in proc.stdout
    assert "paired_games" not in proc.stdout
    assert len((kept / name).read_text().splitlines()) == 1 + 3


def test_bench_pool_reports_runs_on_other_boards_as_one(tmp_path: Path) -> None:
    """``bench pool``: finished runs of one setup on other boards are reported over all
    their games, and with a baseline each, their paired differences pooled game by game;
    runs of other setups or fields, or a baseline of other boards, are refused by name."""
    field = ("--field", "random,random,random", "--games", "4", "--time-limit", "0.5")

    runs: dict[tuple[str, int], Path] = {}
    for strategy in ("greedy", "random"):
        for seed in (3, 7):
            runs[strategy, seed] = tmp_path / f"{strategy}{seed}"
            argv = ["strength", "--strategy", strategy, *field, "--jobs", "1"]
            proc = _bench(*argv, "--seed", str(seed), "--results", str(runs[strategy, seed]))
            assert proc.returncode == 0, proc.stderr
    name = "game1-random+random+random.jsonl"

    def lines(folder: Path) -> dict[int, dict[str, Any]]:
        return {
            g["index"]: g for g in map(json.loads, (folder / name).read_text().splitlines()[1:])
        }

    ours = [lines(runs["greedy", s]) for s in (3, 7)]
    bases = [lines(runs["random", s]) for s in (3, 7)]
    points = [_measured(g, "points") for games in ours for g in games.values()]
    diffs = [
        _measured(games[i], "points") - _measured(base[i], "points")
        for games, base in zip(ours, bases, strict=True)
        for i in games
    ]
    pooled = _bench(
        *("pool", str(runs["greedy", 3]), str(runs["greedy", 7] / name)),
        *("--baseline", str(runs["random", 3]), "--baseline", str(runs["random", 7])),
    )
    assert pooled.returncode == 0, pooled.stderr
    figures = {k: float(v) for k, v in _figures(pooled.stdout).items()}
    assert figures["pooled.games"] == 8 and figures["pooled.runs"] == 2
    assert (figures["run1.seed"], figures["run2.seed"]) == (3, 7)
    assert figures["pooled.points_per_game"] == pytest.approx(sum(points) / 8, abs=1e-3)
    assert figures["pooled.paired_games"] == 8
    assert figures["pooled.paired_points_diff"] == pytest.approx(sum(diffs) / 8, abs=1e-3)
    assert figures["pooled.paired_points_sd"] == pytest.approx(statistics.stdev(diffs), abs=1e-3)
    low, high = figures["pooled.paired_points_ci95_low"], figures["pooled.paired_points_ci95_high"]
    assert low <= figures["pooled.paired_points_diff"] <= high
    # Without baselines: the runs' own figures only.
    alone = _bench("pool", str(runs["greedy", 3]), str(runs["greedy", 7]))
    assert alone.returncode == 0, alone.stderr
    assert "pooled.points_per_game" in alone.stdout and "paired" not in alone.stdout

    g3, g7, r3, r7 = (str(runs[k]) for k in sorted(runs))
    # A run that saw every count (its header hand-edited) is not one setup with the rest.
    kept = (runs["greedy", 7] / name).read_text().splitlines()
    header = json.loads(kept[0])
    header["tournament"]["reveal"] = [0]
    revealed = tmp_path / "revealed.jsonl"
    revealed.write_text("\n".join([json.dumps(header), *kept[1:]]) + "\n")
    refused = {
        "with reveal [0]": _bench("pool", g3, str(revealed)),
        "another setup than run": _bench("pool", g3, r7),
        "with seed 3, this run with 7": _bench("pool", g7, "--baseline", r3),
        "give one per run": _bench("pool", g3, g7, "--baseline", r3),
        "holds none": _bench("pool", str(tmp_path)),
        "does not exist": _bench("pool", str(tmp_path / "nowhere")),
    }
    for text, proc in refused.items():
        assert proc.returncode == 2 and text in proc.stderr, (text, proc.stderr)
        assert "pooled." not in proc.stdout


def test_bench_strength_against_a_field_on_another_clock(tmp_path: Path) -> None:
    """``--field-time-limit``: the field's seats on their own clock, the referee's limit
    the longer one; paired with a run of the same field at the field's clock (what the
    measured strategy's extra time is worth), and never pooled with one whose field
    played on another clock."""
    argv = ["strength", "--strategy", "greedy", "--field", "random,random,random"]
    argv += ["--games", "4", "--jobs", "1", "--seed", "3"]
    base, longer, both = tmp_path / "base", tmp_path / "longer", tmp_path / "both"
    proc = _bench(*argv, "--time-limit", "0.25", "--results", str(base))
    assert proc.returncode == 0, proc.stderr
    proc = _bench(
        *argv, "--time-limit", "0.5", "--field-time-limit", "0.25",
        *("--results", str(longer), "--baseline", str(base)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "0.5 s per move (the field 0.25 s)" in proc.stdout
    figures = {k.split(".", 1)[1]: float(v) for k, v in _figures(proc.stdout).items()}
    assert figures["paired_games"] == 4 and figures["late_moves"] == 0
    name = "game1-random+random+random.jsonl"
    header = json.loads((longer / name).read_text().splitlines()[0])["tournament"]
    assert header["time_limit"] == 0.5
    clocks = [e["command"][-1] for e in header["entrants"]]
    assert clocks == ["0.5", "0.25"]
    # The same measured setup against the field at 0.5 s is another setup to pool.
    proc = _bench(*argv, "--time-limit", "0.5", "--results", str(both))
    assert proc.returncode == 0, proc.stderr
    proc = _bench("pool", str(longer), str(both))
    assert proc.returncode == 2 and "the field on another clock" in proc.stderr
    proc = _bench(*argv, "--field-time-limit", "0")
    assert proc.returncode == 2 and "--field-time-limit must be positive" in proc.stderr


def refused_bench(*extra: str) -> subprocess.CompletedProcess[str]:
    """``bench strength`` of four games of the main strategy, one at a time, with
    ``extra``: for the options it refuses before a game is played."""
    return _bench("strength", "--jobs", "1", "--games", "4", *extra)


def test_bench_strength_refuses_more_searches_than_cores() -> None:
    """Worker processes of the measured agent in games played at once would take time
    from each other's seats: more of them than cores is refused, with the fix."""
    workers = available_cores()  # with the search thread: one more than the cores
    proc = refused_bench("--param", f"workers={workers}")
    assert proc.returncode == 2, proc.stderr
    assert f"workers={workers} would search on {workers + 1} processes" in proc.stderr
    assert "use --jobs" in proc.stderr


def test_bench_strength_on_a_dask_cluster_plays_the_games_the_local_runner_plays(
    tmp_path: Path,
) -> None:
    """``--cluster ADDRESS``: the same boards, seats and seeded players as with local
    worker processes, so the same games, kept and resumable as before."""
    distributed = pytest.importorskip("distributed")
    argv = [
        *("strength", "--strategy", "greedy"),
        *("--field", "random,random,random", "--games", "4", "--time-limit", "0.5"),
        *("--seed", "3"),
    ]
    name = "game1-random+random+random.jsonl"

    def games(folder: Path) -> dict[int, tuple[Any, ...]]:
        lines = (folder / name).read_text().splitlines()[1:]
        out = {}
        for game in map(json.loads, lines):
            out[game["index"]] = (game["seats"], game["points"], game["scores"], game["moves"])
        return out

    local = _bench(*argv, "--jobs", "1", "--results", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        on_dask = [*argv, "--cluster", cluster.scheduler_address]
        proc = _bench(*on_dask, "--results", str(tmp_path / "dask"))
        assert proc.returncode == 0, proc.stderr
        figures = _figures(proc.stdout)
        assert figures["random+random+random.games"] == "4"
        assert figures["random+random+random.illegal_moves"] == "0"
        assert games(tmp_path / "dask") == games(tmp_path / "local")
        # The last game dropped from the file: --resume plays that one on the cluster.
        kept = tmp_path / "dask" / name
        lines = kept.read_text().splitlines()
        kept.write_text("\n".join(lines[:4]) + "\n")
        resumed = _bench(*on_dask, "--results", str(tmp_path / "dask"), "--resume")
        assert resumed.returncode == 0, resumed.stderr
        assert _figures(resumed.stdout)["random+random+random.played"] == "1"
        assert games(tmp_path / "dask") == games(tmp_path / "local")
    finally:
        cluster.close()


def test_bench_strength_on_a_cluster_refuses_search_processes() -> None:
    """A Dask worker is a daemonic process, which may not start the measured agent's
    search workers: refused before a game is played, saying why."""
    proc = refused_bench("--param", "workers=1", "--cluster", "tcp://127.0.0.1:9")
    assert proc.returncode == 2, proc.stderr
    assert "--cluster with workers=1" in proc.stderr and "workers=0" in proc.stderr
    assert "points_per_game" not in proc.stdout


def test_bench_figures_are_plain_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import print_figures

    print_figures({"a": 131312.5, "b": 2.0, "c": 0.000012345, "d": 3.14159, "e": 1e12 + 0.5})
    lines = capsys.readouterr().out.split()
    assert lines == ["a=131312.5", "b=2", "c=0.000012345", "d=3.142", "e=1000000000000.5"]


@pytest.mark.parametrize("command", ["serve", "match", "tournament", "play", "bench strength"])
def test_every_option_with_a_default_shows_it(command: str) -> None:
    from battlesheep.cli import build_parser

    parser = build_parser()
    for name in command.split():
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    text = " ".join(parser.format_help().split())
    for option in ("--time-limit", "--games", "--port", "--seed"):
        action = next((a for a in parser._actions if option in a.option_strings), None)
        if action is None:
            continue
        start = text.index(f"{option} {action.metavar or action.dest.upper()} ")
        assert "default" in text[start : start + 200], (command, option)
