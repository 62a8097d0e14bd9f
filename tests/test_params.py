"""The one parameter-file format, its checks, the one margin rule and the one config error."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from client.cli import agent_setup, register
from client.clock import DEFAULT_MARGIN, TimeLimits
from strategies.base import ConfigError, ParameterError, Strategy
from strategies.params import MAX_NESTING, load_agent_params
from strategies.registry import make_strategy
from tests.cli_support import battlesheep
from tournament.build import check_command
from tournament.entrants import parse_entrant, parse_entrants, play_command
from tournament.spsa import load_space

ROOT = Path(__file__).resolve().parent.parent
PARAM_FILES = sorted(p for p in (ROOT / "params").rglob("*.toml") if "space" not in p.stem)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def play_setup(*argv: str) -> tuple[Strategy, TimeLimits]:
    """What ``battlesheep play --game 1 ARGV`` plays with."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["play", "--game", "1", *argv])
    return agent_setup(args, args.strategy)


def option(command: tuple[str, ...] | str, name: str) -> str:
    assert isinstance(command, tuple)
    return command[command.index(name) + 1]


# --- one format, one loader ----------------------------------------------------------


def test_the_project_files_are_all_parameter_files() -> None:
    names = {p.name for p in PARAM_FILES}
    assert {f"agent{n}.toml" for n in (1, 2, 3, 4)} | {"uct_a.toml", "uct_b.toml"} <= names


@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: p.name)
def test_every_project_file_loads_for_every_command(path: Path) -> None:
    agent = load_agent_params(path)
    # bench strength --params-file: the file's parameters for the measured strategy.
    params = agent.params_for(agent.strategy)
    assert make_strategy(agent.strategy, params).name == agent.strategy
    # play --params-file: the file's strategy, parameters and margin.
    strategy, limits = play_setup("--params-file", str(path))
    assert strategy.name == agent.strategy
    assert strategy.params == make_strategy(agent.strategy, params).params
    assert limits.margin == TimeLimits.for_limit(3.0, wanted=agent.margin).margin
    # tournament entrant: the same strategy and parameters on the play command line.
    entrant = parse_entrant(str(path), 1.0)
    assert option(entrant.command, "--strategy") == agent.strategy


def test_a_file_for_another_strategy_is_refused() -> None:
    agent = load_agent_params(ROOT / "params" / "agent1.toml")
    assert agent.params_for("hybrid")["workers"] == -1
    with pytest.raises(ConfigError, match="for strategy 'hybrid', not 'uct'"):
        agent.params_for("uct")
    with pytest.raises(ConfigError, match="for strategy 'hybrid', not 'uct'"):
        play_setup("--params-file", "params/agent1.toml", "--strategy", "uct")


def test_command_line_options_win_over_the_file() -> None:
    file = ("--params-file", "params/agent1.toml")
    strategy, limits = play_setup(*file, "--param", "c_puct=2.5", "--margin", "0.4")
    assert strategy.params.c_puct == 2.5 and strategy.params.workers == -1  # type: ignore[attr-defined]
    assert limits.margin == 0.4


def test_play_runs_an_agent_file() -> None:
    run = battlesheep(
        *("play", "--game", "1", "--port", "9", "--params-file", "params/agent1.toml"),
        *("--time-limit", "0.5", "--connect-for", "0"),
        cwd=ROOT,
    )
    assert "plays game 1 as hybrid" in run.stderr and "margin 0.06 s" in run.stderr, run.stderr


def test_strategy_values_are_still_checked() -> None:
    with pytest.raises(ParameterError, match="c_puct"):
        make_strategy("hybrid", {"c_puct": -1})


# --- non-finite values and nesting -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('strategy = "hybrid"\n[params]\nc_puct = inf\n', "params.c_puct"),
        ('strategy = "hybrid"\n[params]\nepsilon = nan\n', "params.epsilon"),
        ('strategy = "hybrid"\nmargin = -inf\n', "margin"),
    ],
)
def test_non_finite_numbers_are_refused(tmp_path: Path, text: str, key: str) -> None:
    f = write(tmp_path / "inf.toml", text)
    with pytest.raises(ConfigError, match=rf"inf\.toml.*key '{key}' = .* must be finite"):
        load_agent_params(f)


def test_non_finite_numbers_in_yaml_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    f = write(tmp_path / "a.yaml", "strategy: uct\nparams:\n  exploration: .inf\n")
    with pytest.raises(ConfigError, match=r"a\.yaml.*'params.exploration' = inf"):
        load_agent_params(f)


def test_deep_nesting_is_refused_with_the_key(tmp_path: Path) -> None:
    deep = 3000
    nested = "[" * deep + "]" * deep
    arrays = write(tmp_path / "arrays.toml", f'strategy = "uct"\nweights = {nested}\n')
    with pytest.raises(ConfigError, match=rf"arrays\.toml.*key 'weights' .*{MAX_NESTING} levels"):
        load_agent_params(arrays)
    tables = write(tmp_path / "tables.toml", "[" + ".".join(["deep"] * deep) + "]\nx = 1\n")
    with pytest.raises(ConfigError, match=r"tables\.toml.*key 'deep\.deep\..*' is nested more"):
        load_agent_params(tables)
    inline = write(tmp_path / "inline.toml", "[params]\nc = " + "{a = " * deep + "1" + "}" * deep)
    with pytest.raises(ConfigError, match=r"inline\.toml.*key 'c' is nested more"):
        load_agent_params(inline)


def test_space_files_get_the_same_checks(tmp_path: Path) -> None:
    agent = load_agent_params(ROOT / "params" / "examples" / "uct_a.toml")
    space = write(tmp_path / "space.toml", "[exploration]\nmin = 0.1\nmax = inf\nstep = 0.2\n")
    with pytest.raises(ConfigError, match=r"space file .*'exploration.max' = inf"):
        load_space(space, agent)


# --- one margin rule -------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0.2, 0.5, 0.7, 1.0, 3.0])
def test_play_tournament_and_build_derive_the_same_margin(limit: float) -> None:
    rule = TimeLimits.for_limit(limit).margin
    assert rule == min(DEFAULT_MARGIN, limit / 4)
    _, play = play_setup("--time-limit", str(limit))
    tournament = float(option(play_command("hybrid", {}, limit), "--margin"))
    build = float(option(check_command(Path("agent"), limit), "--margin"))
    assert play.margin == tournament == build == rule


@pytest.mark.parametrize("limit", [0.2, 0.5, 3.0])
def test_a_file_margin_is_fitted_by_the_same_rule(tmp_path: Path, limit: float) -> None:
    f = write(tmp_path / "m.toml", 'strategy = "uct"\nmargin = 0.1\n')
    _, play = play_setup("--params-file", str(f), "--time-limit", str(limit))
    entrant = parse_entrant(str(f), limit)
    assert play.margin == float(option(entrant.command, "--margin"))
    assert play.margin == min(0.1, limit / 4)


def test_an_explicit_margin_is_kept() -> None:
    assert TimeLimits.for_limit(0.2, 0.1).margin == 0.1
    assert TimeLimits.for_limit(0.2, wanted=0.1).margin == 0.05


# --- one configuration error -----------------------------------------------------------


def test_arena_and_tournament_share_one_config_error(tmp_path: Path) -> None:
    # A strategy's bad parameter is bad configuration too: one error, one line.
    assert issubclass(ParameterError, ConfigError)
    bad = write(tmp_path / "bad.toml", 'strategy = "uct"\n[params]\nexploration = -1\n')
    with pytest.raises(ConfigError, match=r"bad\.toml.*exploration"):
        parse_entrants(["random", str(bad)], 1.0)
    with pytest.raises(ConfigError, match="cannot read"):
        parse_entrants(["random", str(tmp_path / "missing.toml")], 1.0)
