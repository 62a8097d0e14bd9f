"""``bench value``: positions of real games, what each seat got in the end, and how well
a playout, the hand-set evaluation and a fitted one predicted it."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from bench.value import Sample, fit, load, report
from state.geometry import FREE
from state.settings import SETTINGS
from strategies.base import ConfigError
from strategies.common import SEAT_FEATURES, score_rewards, seat_features
from tests.cli_support import battlesheep
from tests.test_kernel import position


def test_seat_features_count_movable_and_boxed_in_sheep() -> None:
    state = position(1, 11, 0)
    cell = state.stacks[1][0]
    assert state.sheep[cell] == 16
    start = seat_features(state)
    assert len(start) == 4 and all(len(f) == len(SEAT_FEATURES) for f in start)
    score, movable, stuck, open_dirs, room, potential = start[0]
    assert score == pytest.approx(1.0) and movable == 15 and stuck == 0
    assert open_dirs == sum(
        1 for ray in state.geometry.rays[cell] if ray and state.owner[ray[0]] == FREE
    )
    assert potential == min(movable, room) and room > 0
    # Seat 1 boxed in: its 15 movable sheep are stuck for good, it has no room.
    for ray in state.geometry.rays[cell]:
        if ray and state.owner[ray[0]] == FREE:
            state.owner[ray[0]] = 2
            state.sheep[ray[0]] = 1
    assert not state.slides(1)
    score, movable, stuck, open_dirs, room, potential = seat_features(state)[0]
    assert (movable, stuck, open_dirs, room, potential) == (0, 15, 0, 0.0, 0)


def sample(board: int, features: list[list[float]], scores: list[float]) -> Sample:
    return Sample(
        game=1,
        board=board,
        strategies=["a", "b", "c", "d"],
        to_move=1 + board % 4,
        progress=(board % 7) / 7,
        features=features,
        one_playout=[0.25, 0.25, 0.25, 0.25],
        playouts=[0.25, 0.25, 0.25, 0.25],
        evaluated=[0.25, 0.25, 0.25, 0.25],
        territory=[0.25, 0.25, 0.25, 0.25],
        final=score_rewards(SETTINGS[1], scores, 0.05),
        final_scores=scores,
        wire_map=[],
        wire_sheep=[],
    )


def test_rows_hold_the_seats_features_with_the_progress_and_place_the_mover() -> None:
    features = [[float(10 * s + k) for k in range(len(SEAT_FEATURES))] for s in range(4)]
    s = sample(5, features, [30.0, 20.0, 10.0, 5.0])
    width = len(SEAT_FEATURES)
    assert s.to_move == 2 and s.progress == pytest.approx(5 / 7)
    row = s.row(2)
    assert row[:width] == features[2]
    assert row[width : 2 * width] == pytest.approx([x * 5 / 7 for x in features[2]])
    # The mover (seat 2) is in place 0 after itself, seat 1 in place 3.
    assert s.row(1)[2 * width :] == [1.0, 0.0, 0.0, 0.0]
    assert s.row(0)[2 * width :] == [0.0, 0.0, 0.0, 1.0]


def test_the_fit_finds_scores_the_samples_follow_and_leans_on_it_alone() -> None:
    """Final scores made by known weights of the rows are found again (up to the ridge);
    the one playout here says nothing, so the mix takes the fitted model alone."""
    rng = random.Random(3)
    truth = [rng.uniform(0.2, 2.0) for _ in range(2 * len(SEAT_FEATURES))] + [5.0, 3.0, 2.0, 1.0]
    samples = []
    for board in range(60):
        features = [[rng.uniform(0, 20) for _ in SEAT_FEATURES] for _ in range(4)]
        s = sample(board, features, [0.0] * 4)
        scores = [sum(w * x for w, x in zip(truth, s.row(k), strict=True)) for k in range(4)]
        samples.append(sample(board, features, scores))
    weights = fit(samples)
    for s in samples:
        for k in range(4):
            guess = sum(w * x for w, x in zip(weights, s.row(k), strict=True))
            assert guess == pytest.approx(s.final_scores[k], rel=0.02)
    figures = report(samples, playouts=1)
    assert float(figures["fitted_mse"]) < 0.01 < float(figures["one_playout_mse"])
    assert figures["mix_fitted_weight"] == 1.0
    assert float(figures["fitted_winner_share"]) > 0.9
    assert float(figures["test_positions"]) + float(figures["train_positions"]) == 60


def test_the_report_needs_boards_to_train_and_to_test_on() -> None:
    even = [sample(2, [[1.0] * len(SEAT_FEATURES)] * 4, [0.25] * 4)]
    with pytest.raises(ConfigError, match="even and on odd boards"):
        report(even, playouts=1)


def test_a_line_that_is_not_a_sample_is_named(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"board": 1}\n')
    with pytest.raises(ConfigError, match=r"samples.jsonl:1: not a sample"):
        load([path])


def bench_value(*args: str) -> subprocess.CompletedProcess[str]:
    return battlesheep("bench", "value", *args, timeout=600)


def bench(*args: str) -> dict[str, str]:
    run = bench_value(*args)
    assert run.returncode == 0, run.stderr
    return dict(line.split("=", 1) for line in run.stdout.splitlines())


def test_bench_value_keeps_every_position_of_its_games_and_reads_them_again(
    tmp_path: Path,
) -> None:
    samples = tmp_path / "samples.jsonl"
    seats = "random,random,random,random"
    common = ("--game", "1", "--seats", seats, "--playouts", "4", "--samples", str(samples))
    figures = bench(*common, "--games", "2", "--seed", "7")
    kept = [json.loads(line) for line in samples.read_text().splitlines()]
    assert int(figures["positions"]) == len(kept) > 40
    assert {s["board"] for s in kept} == {7, 8}
    for s in kept:
        # Everything a game ends with is the same at each of its positions, the seat
        # that won has the best reward, and no reward is out of [0, 1] by more than the
        # margin's share.
        final = s["final"]
        assert final == next(k["final"] for k in kept if k["board"] == s["board"])
        rounded = [round(x) for x in s["final_scores"]]
        assert rounded[final.index(max(final))] == max(rounded)
        assert all(-0.1 < r < 1.1 for r in final + s["one_playout"] + s["playouts"])
        assert 0.0 <= s["progress"] <= 1.0
    # Each sample's position rebuilds to the features it was measured on.
    for s in load([samples])[::10]:
        state = s.state()
        assert state.to_move == s.to_move
        rebuilt = [x for f in seat_features(state) for x in f]
        assert rebuilt == pytest.approx([x for f in s.features for x in f])
    predictors = ("one_playout", "playouts", "evaluate", "territory", "fitted")
    mixes = [f"{m}_{p}" for m in ("mix", "mean_mix") for p in predictors[2:]]
    for key in (*predictors, *mixes):
        assert 0.0 <= float(figures[f"{key}_mse"]) < 1.0
        assert 0.0 <= float(figures[f"{key}_winner_share"]) <= 1.0
    # A second run adds its games to the file; the report reads them all.
    more = bench(*common, "--games", "1", "--seed", "9")
    assert int(more["positions"]) > len(kept)
    assert int(more["games"]) == 3
    again = bench(*common, "--games", "0")
    assert again["positions"] == more["positions"] and again["fitted_mse"] == more["fitted_mse"]
    # Other playouts on the same positions: the positions rebuilt from the file value
    # the same by the evaluations (the same weights), not by the playouts.
    other = bench(*common, "--games", "0", "--param", "epsilon=1")
    assert other["positions"] == again["positions"]
    assert other["evaluate_mse"] == again["evaluate_mse"]
    assert other["territory_mse"] == again["territory_mse"]
    assert other["playouts_mse"] != again["playouts_mse"]


def test_bench_value_names_a_parameter_it_does_not_know(tmp_path: Path) -> None:
    run = bench_value("--games", "0", "--samples", str(tmp_path / "none"), "--param", "bogus=3")
    assert run.returncode != 0 and "unknown parameter 'bogus'" in run.stderr


def test_bench_value_refuses_game_3() -> None:
    run = bench_value("--game", "3")
    assert run.returncode != 0
    assert "invalid choice: 3" in run.stderr
