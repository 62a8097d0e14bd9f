"""Tournament pieces that need no game: parameter files, schedules, standings, SPSA, plots."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest

from arena.results import GameResult, result_line
from strategies.base import ConfigError
from strategies.params import dump_toml, load_agent_params
from tournament.entrants import Entrant, parse_entrant, parse_entrants
from tournament.plot import plot_tournament
from tournament.run import candidate_score, prepare_results_file, read_results_file
from tournament.schedule import Schedule, arrangements
from tournament.spsa import Spsa, load_space
from tournament.standings import pairwise, standings
from tournament.stats import Sprt

PARAMS = Path(__file__).resolve().parent.parent / "params"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- parameter files -------------------------------------------------------------------


@pytest.mark.parametrize("agent", [1, 2, 3, 4])
def test_course_parameter_sets_load(agent: int) -> None:
    params = load_agent_params(PARAMS / f"agent{agent}.toml")
    assert params.game == agent
    args = params.play_args()
    assert args[:2] == ["--strategy", params.strategy]


def test_example_files_load() -> None:
    a = load_agent_params(PARAMS / "examples" / "uct_a.toml")
    load_space(PARAMS / "examples" / "uct_space.toml", a)


def test_bad_value_names_file_key_and_range(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.toml", 'strategy = "hybrid"\n[params]\nab_fraction = 1.5\n')
    with pytest.raises(ConfigError) as err:
        load_agent_params(f)
    text = str(err.value)
    assert str(f) in text and "params.ab_fraction" in text and "0 <= float <= 1" in text


def test_unknown_keys_and_choices(tmp_path: Path) -> None:
    f = write(tmp_path / "x.toml", 'strategy = "hybrid"\n[params]\nc_pucct = 1.0\n')
    with pytest.raises(ConfigError, match=r"unknown key 'params.c_pucct'.*c_puct"):
        load_agent_params(f)
    f = write(tmp_path / "y.toml", 'strategy = "hybrid"\nspeed = 3\n')
    with pytest.raises(ConfigError, match=r"y.toml.*unknown key 'speed'"):
        load_agent_params(f)
    f = write(tmp_path / "z.toml", 'strategy = "hybrid"\n[params]\npolicy = "maxn"\n')
    with pytest.raises(ConfigError, match=r"one of 'brs', 'paranoid'"):
        load_agent_params(f)
    f = write(tmp_path / "s.toml", 'strategy = "deep-blue"\n')
    with pytest.raises(ConfigError, match=r"'deep-blue' is unknown; allowed: .*greedy"):
        load_agent_params(f)
    f = write(tmp_path / "g.toml", 'strategy = "uct"\ngame = 5\n')
    with pytest.raises(ConfigError, match=r"'game' = 5.*1 <= "):
        load_agent_params(f)
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_agent_params(write(tmp_path / "t.toml", "strategy = \n"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_agent_params(tmp_path / "missing.toml")


def test_yaml_and_toml_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    f = write(tmp_path / "a.yaml", "strategy: uct\nmargin: 0.2\nparams:\n  exploration: 1.1\n")
    a = load_agent_params(f)
    assert a.params == {"exploration": 1.1} and a.margin == 0.2
    again = write(tmp_path / "b.toml", dump_toml(a, "comment"))
    assert load_agent_params(again) == a


# --- entrants and schedules ------------------------------------------------------------


def test_entrant_specs(tmp_path: Path) -> None:
    e = parse_entrant("greedy:seed=3", 1.0)
    assert e.name == "greedy:seed=3" and "--param" in e.command and "seed=3" in e.command
    f = write(tmp_path / "mine.toml", 'strategy = "uct"\n[params]\nexploration = 0.9\n')
    e = parse_entrant(str(f), 1.0)
    assert e.name == "mine" and "exploration=0.9" in e.command
    e = parse_entrant(f"b={f}", 1.0)
    assert e.name == "b"
    e = parse_entrant("cmd:team=9:prog {port}", 1.0)
    assert e.team == 9 and e.command == "prog {port}"
    with pytest.raises(ConfigError, match="distinct names"):
        parse_entrants(["random", "random"], 1.0)
    with pytest.raises(ConfigError, match="unknown strategy"):
        parse_entrants(["random", "nosuch"], 1.0)
    with pytest.raises(ConfigError, match=r"mine2.toml.*exploration"):
        bad = write(tmp_path / "mine2.toml", 'strategy = "uct"\n[params]\nexploration = -1\n')
        parse_entrants(["random", str(bad)], 1.0)


@pytest.mark.parametrize("count", [2, 3, 4, 5])
def test_every_entrant_sits_in_every_seat_equally(count: int) -> None:
    per_round = arrangements(count)
    assert len(set(per_round)) == len(per_round)
    seats = Counter((e, s) for arr in per_round for s, e in enumerate(arr))
    for e in range(count):
        assert len({seats[(e, s)] for s in range(4)}) == 1, (e, seats)
    assert all(len(set(arr)) == min(count, 4) for arr in per_round)


def test_pairs_play_all_six_arrangements_and_gauntlet() -> None:
    assert sorted(arrangements(2)) == sorted(
        {(0, 0, 1, 1), (1, 0, 0, 1), (1, 1, 0, 0), (0, 1, 1, 0), (0, 1, 0, 1), (1, 0, 1, 0)}
    )
    g = arrangements(4, "gauntlet")
    assert len(g) == 18 and all(0 in arr and len(set(arr)) == 2 for arr in g)


def test_schedule_tasks_share_boards_within_a_round() -> None:
    entrants = tuple(Entrant(n, f"prog {n}") for n in "abc")
    schedule = Schedule(entrants, game=1, seed=100, time_limit=1.0)
    per_round = len(schedule.per_round)
    assert {schedule.task(k).seed for k in range(per_round)} == {100}
    assert schedule.task(per_round).seed == 101
    t = schedule.task(5)
    assert t.teams == (101, 102, 103, 104)
    assert list(t.names) == [entrants[i].name for i in t.seats]
    fixed = (Entrant("a", "x", team=7), Entrant("b", "y"))
    with pytest.raises(ConfigError, match="same team id"):
        Schedule(fixed, 1, 0, 1.0).check()


# --- standings, results files, SPRT scoring ---------------------------------------------


def fake_result(
    index: int, names: list[str], seats: list[int], points: list[float], seed: int = 0
) -> GameResult:
    order = sorted(range(4), key=lambda i: -points[i])
    ranks = [0] * 4
    for i in range(4):
        ranks[i] = 1 + sum(points[j] > points[i] for j in order)
    zeros = [0] * 4
    scores = [round(p * 4) for p in points]
    return GameResult(
        index=index,
        game=1,
        seed=seed,
        teams=[1, 2, 3, 4],
        final_map=[[0]],
        final_sheep=[[0]],
        scores=scores,
        exact_scores=scores,
        results=scores,
        points=points,
        ranks=ranks,
        illegal=zeros,
        late=zeros,
        stale=zeros,
        disconnects=zeros,
        absent=zeros,
        protocol_errors=zeros,
        moves=0,
        seat_moves=zeros,
        passes=zeros,
        turns=0,
        stalled=False,
        time_limit=1.0,
        duration_s=0.0,
        move_time_max_s=[None] * 4,
        entrants=names,
        seats=seats,
    )


def test_standings_pairwise_and_candidate_score() -> None:
    r0 = fake_result(0, ["a", "b", "a", "b"], [0, 1, 0, 1], [5, 3, 2, 1])
    r1 = fake_result(1, ["b", "a", "b", "a"], [1, 0, 1, 0], [5, 2.5, 2.5, 1])
    rows = standings(["a", "b"], [r1, r0], resamples=20)
    a, b = rows
    assert a.seats == b.seats == 4
    assert sum(a.points) + sum(b.points) == 22
    assert a.places == [1, 1, 1, 1] and b.places == [1, 2, 0, 1]  # the tie shares 2nd
    pairs = pairwise(["a", "b"], [r0, r1])
    # r0: a(5) beats both b; a(2) beats b(1), loses to b(3) -> 3-0-1
    # r1: a(2.5) draws b(2.5), loses to b(5); a(1) loses to both -> 0-1-3
    assert (pairs[("a", "b")].wins, pairs[("a", "b")].draws, pairs[("a", "b")].losses) == (3, 1, 4)
    assert pairs[("b", "a")].score == pytest.approx(1 - pairs[("a", "b")].score)
    assert candidate_score(r0, base=1, candidate=0) == pytest.approx(3 / 4)
    assert candidate_score(r1, base=1, candidate=0) == pytest.approx(0.5 / 4)


def test_results_file_resume_checks(tmp_path: Path) -> None:
    entrants = (Entrant("a", "x"), Entrant("b", "y"))
    schedule = Schedule(entrants, 1, 10, 1.0)
    path = tmp_path / "r.jsonl"
    assert prepare_results_file(path, schedule, resume=False) == {}
    task = schedule.task(0)
    result = fake_result(0, list(task.names), list(task.seats), [5, 3, 2, 1], seed=10)
    with path.open("a") as fh:
        fh.write(result_line(result) + "\n")
        fh.write('{"index": 1, "se')  # killed while writing
    with pytest.raises(ConfigError, match="--resume"):
        prepare_results_file(path, schedule, resume=False)
    other = Schedule(entrants, 1, 11, 1.0)
    with pytest.raises(ConfigError, match="different tournament"):
        prepare_results_file(path, other, resume=True)
    # Games where an entrant saw every count (bench strength --reveal) are not these.
    revealed = Schedule(entrants, 1, 10, 1.0, local=True, reveal=(0,))
    with pytest.raises(ConfigError, match="different tournament"):
        prepare_results_file(path, revealed, resume=True)
    done = prepare_results_file(path, schedule, resume=True)
    assert list(done) == [0]
    header, results = read_results_file(path)
    assert header is not None and results == [result]


def test_sprt_on_simulated_games_of_equal_entrants_accepts_h0() -> None:
    rng = random.Random(4)
    h0 = 0
    for _ in range(40):
        sprt = Sprt(0, 20)
        while sprt.verdict() is None and len(sprt.scores) < 3000:
            sprt.add(rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)))
        h0 += sprt.verdict() == "H0"
    assert h0 >= 34  # alpha 0.05 at elo0 = 0 (the true difference)


# --- SPSA ----------------------------------------------------------------------------------


def test_spsa_finds_the_optimum_of_a_noisy_objective() -> None:
    """Game-like results: the side nearer 0.7 wins more often (logistic), noisy."""
    from tournament.spsa import Dimension

    dims = [Dimension(name="x", min=0, max=1, step=0.1), Dimension(name="y", min=0, max=10, step=1)]
    spsa = Spsa(dims, {"x": 0.1, "y": 9.0}, a=2.0, seed=1)
    rng = random.Random(2)

    def strength(v: dict[str, float]) -> float:
        return -10 * ((v["x"] - 0.7) ** 2 + ((v["y"] - 3) / 10) ** 2)

    for _ in range(400):
        delta, plus, minus = spsa.ask()
        p = 1 / (1 + math.exp(-(strength(plus) - strength(minus)) * 4))
        wins = sum(rng.random() < p for _ in range(6))
        spsa.tell(delta, 2 * wins / 6 - 1)
    found = spsa.values()
    assert abs(found["x"] - 0.7) < 0.12 and abs(found["y"] - 3) < 1.2, found


def test_space_file_is_checked_against_the_strategy(tmp_path: Path) -> None:
    agent = load_agent_params(PARAMS / "examples" / "uct_a.toml")
    bad = write(tmp_path / "s.toml", "[policy]\nmin = 0\nmax = 1\nstep = 0.1\n")
    with pytest.raises(ConfigError, match=r"'policy' is not a numeric parameter of 'uct'"):
        load_space(bad, agent)
    wide = write(tmp_path / "w.toml", "[time_fraction]\nmin = 0.5\nmax = 2\nstep = 0.1\n")
    with pytest.raises(ConfigError, match=r"leaves what the strategy allows: 0 < float <= 1"):
        load_space(wide, agent)
    upside = write(tmp_path / "u.toml", "[exploration]\nmin = 2\nmax = 1\nstep = 0.1\n")
    with pytest.raises(ConfigError, match="must be below max"):
        load_space(upside, agent)
    ints = write(tmp_path / "i.toml", "[max_iterations]\nmin = 10\nmax = 100\nstep = 10\n")
    (dim,) = load_space(ints, agent)
    assert dim.integer and isinstance(Spsa([dim], {}).values()["max_iterations"], int)


def test_plot_writes_an_image(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    r0 = fake_result(0, ["a", "b", "a", "b"], [0, 1, 0, 1], [5, 3, 2, 1])
    r1 = fake_result(1, ["b", "a", "b", "a"], [1, 0, 1, 0], [5, 3, 2, 1])
    sprt = Sprt(0, 10)
    sprt.add(0.75)
    sprt.add(0.25)
    out = tmp_path / "p.png"
    plot_tournament(out, standings(["a", "b"], [r0, r1], 20), sprt, [(1, 0.0), (2, 0.1)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
