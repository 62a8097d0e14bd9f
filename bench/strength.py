"""``battlesheep bench strength``: the main strategy against fields of yardsticks.

A field is three seat specs, played with the measured strategy in every seat of
each board (a ``field`` schedule of the tournament runner, played in-process:
every seat is a client session of its strategy, judged by the one referee).
Game 3 needs nothing special (every seat sees only its own counts; ``uct``
fills the rest with the reference's uniform guess). In game 4 the seat opposite
the measured strategy is its partner: ``uct`` is then the main agent with a
``uct`` partner against two ``uct``, and ``pair-uct`` a pair of the measured
strategy against a pair of ``uct``; both report the pair's win rate.

With ``--results DIR`` every field's games go to ``DIR/game<G>-<field>.jsonl`` (the
tournament results file: a header, then one line per game) as they end; ``--resume``
plays only the games not there yet and reports over all of them, so a long run that
was stopped loses only the games under way, and a finished one can be reported again
without playing.

With ``--baseline DIR`` (the ``--results`` folder of an earlier run of the same field,
game and boards) each field's games are paired by game with that run's: the same board
and seat, another strategy, parameter set or clock. The difference of the points per
game is reported with its 95% interval (``paired_*``). Pairing removes what the board
and the seat give, which is most of the spread of one game's points, so it resolves a
smaller difference than two intervals side by side. The baseline may be a run started
beside this one: a baseline already there is checked before the first game, and its
games are read at the end, over those it holds then; one still not there at the end is
an error (exit 2) after this run's own figures.

With ``--field-time-limit SECONDS`` the field's seats think for that long a move and
the measured strategy for ``--time-limit``; the referee allows the longer of the two.
What more (or less) time than the field is worth: paired with a ``--baseline`` run of
the same field at its own clock (``--time-limit`` the field's, on the same boards), the
difference is that of the measured strategy's clock alone.

``battlesheep bench pool RUN... [--baseline BASE ...]`` reports finished runs of one
setup (on other boards) as one: every figure over all their games, and with a baseline
for each run the paired differences of all the games as one sample.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.results import SEARCH_KEYS, GameResult
from bench import print_figures, quiet_games
from state.regions import region_value
from state.scoring import ranked_results, tournament_points
from state.settings import PLAYERS, get_setting
from strategies.base import ConfigError
from strategies.parallel import available_cores, worker_count
from strategies.params import load_agent_params
from strategies.registry import DEFAULT_STRATEGY, check_params, parse_params
from tournament.entrants import Entrant, builtin_entrant, parse_entrant
from tournament.run import Tournament, header_of, read_results_file
from tournament.runner import make_runner
from tournament.schedule import Schedule
from tournament.stats import mean_interval

FIELDS: dict[str, list[str]] = {
    "greedy": ["greedy"] * 3,
    "seedlike": ["seedlike"] * 3,
    "uct": ["uct"] * 3,
    "flatmc": ["flatmc"] * 3,
    "mixed": ["greedy", "seedlike", "uct"],
}
# Game 4 only: a pair of the measured strategy against a pair of this seat spec.
PAIR_FIELDS: dict[str, str] = {
    "pair-uct": "uct",
    "pair-flatmc": "flatmc",
    "pair-seedlike": "seedlike",
}
DEFAULT_FIELDS: dict[int, list[str]] = {3: ["uct"], 4: ["uct", "pair-uct"]}
MEASURED = 0
"""The measured strategy's entrant index."""


def register_bench(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "strength",
        help="points per game of a strategy against greedy, seedlike, uct, flatmc, mixed",
    )
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1)
    p.add_argument("--games", type=int, default=8, help="games per field (multiples of 4)")
    p.add_argument("--time-limit", type=float, default=1.0, help="seconds per move")
    p.add_argument("--jobs", type=int, default=2, help="games played at once")
    p.add_argument(
        "--cluster",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="play the games as Dask tasks: on the scheduler at ADDRESS (tcp://host:8786), "
        "or on a local cluster of --jobs workers when none is given; one game per worker "
        "thread, so give each worker one thread and one core",
    )
    p.add_argument("--seed", type=int, default=1, help="the first board's seed")
    p.add_argument("--strategy", default=None, help="the measured strategy (default: the main)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--params-file", default=None, help="a parameter file (params/agent1.toml)")
    p.add_argument(
        "--reveal",
        action="store_true",
        help="game 3: the measured strategy sees every count (what the hidden counts cost it)",
    )
    p.add_argument(
        "--field",
        action="append",
        default=None,
        metavar="FIELD",
        help="greedy, seedlike, uct, flatmc, mixed, pair-uct or pair-flatmc (game 4), or three "
        "seat specs joined by ',' (e.g. 'hybrid:ab_fraction=0,uct,uct'); repeatable; default: "
        "the five fields "
        "(game 3: uct; game 4: uct and pair-uct)",
    )
    p.add_argument(
        "--field-time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds per move of the field's seats (default: --time-limit): the measured "
        "strategy against a field on another clock, the referee's limit the longer of the "
        "two; --baseline pairs it with a run of the same field on its own clock",
    )
    p.add_argument(
        "--results",
        metavar="DIR",
        default=None,
        help="keep every field's games in DIR/game<G>-<field>.jsonl as they end",
    )
    p.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="write each game's replay (the placements and every move; `battlesheep "
        "replay`, the viewer) to DIR/game<G>-<field>/, to look into the games behind the "
        "figures",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="play only the games not yet in --results (none left: report them again)",
    )
    p.add_argument(
        "--baseline",
        metavar="DIR",
        default=None,
        help="the --results folder of another run of the same field and boards (earlier, "
        "or under way beside this one: read at the end): report the difference of the "
        "points per game, paired by game, with its 95%% interval",
    )
    p.set_defaults(func=run)
    pool: argparse.ArgumentParser = sub.add_parser(
        "pool",
        help="finished bench strength runs of one setup (other boards) reported as one, "
        "and their paired differences with their baselines",
    )
    pool.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a --results folder of bench strength (holding one field's file) or the file",
    )
    pool.add_argument(
        "--baseline",
        action="append",
        default=None,
        metavar="RUN",
        help="the baseline of each RUN, in their order (one per RUN): the pooled paired "
        "difference of the points per game, with its 95%% interval",
    )
    pool.set_defaults(func=run_pool)


def field_lineup(
    fld: str, game: int, measured: Entrant, time_limit: float
) -> tuple[list[Entrant], tuple[int, ...]]:
    """The entrants of a field (the measured one first) and the lineup to rotate."""
    if fld in PAIR_FIELDS:
        if game != 4:
            raise ConfigError(f"field {fld!r} is a team field: it needs --game 4")
        return [measured, parse_entrant(f"field0={PAIR_FIELDS[fld]}", time_limit)], (0, 1, 0, 1)
    specs = FIELDS.get(fld) or fld.split(",")
    if len(specs) != 3:
        raise ConfigError(f"field {fld!r}: need three seat specs, not {len(specs)}")
    distinct = list(dict.fromkeys(s.strip() for s in specs))
    entrants = [
        measured,
        *(parse_entrant(f"field{k}={s}", time_limit) for k, s in enumerate(distinct)),
    ]
    return entrants, (0, *(1 + distinct.index(s.strip()) for s in specs))


def summarize(results: Sequence[GameResult], game: int) -> dict[str, float]:
    """Points per game of the seat the measured strategy sat in, and its search figures."""
    seats = [measured_seats(r)[0] for r in results]
    points = [r.points[s] for r, s in zip(results, seats, strict=True)]
    scores = [float(r.scores[s]) for r, s in zip(results, seats, strict=True)]
    field = [float(r.scores[s]) for r in results for s in field_seats(r)]
    interval = mean_interval(points)
    out = {
        "games": float(len(results)),
        "points_per_game": interval.mean,
        "ci95_low": interval.low,
        "ci95_high": interval.high,
        "score_per_game": sum(scores) / max(1, len(scores)),
        # The other side's mean score per seat: the pair's opponents in game 4.
        "field_score_per_game": sum(field) / max(1, len(field)),
        "late_moves": float(sum(r.late[s] for r in results for s in measured_seats(r))),
        "illegal_moves": float(sum(r.illegal[s] for r in results for s in measured_seats(r))),
    }
    if get_setting(game).teams:
        # Partners share the pair's points: above the mean of 2.75 is a win.
        wins = mean_interval([1.0 if p > 2.75 else 0.5 if p == 2.75 else 0.0 for p in points])
        out.update(
            {"pair_win_rate": wins.mean, "win_ci95_low": wins.low, "win_ci95_high": wins.high}
        )
    places = [r.ranks[s] for r, s in zip(results, seats, strict=True)]
    for place in range(1, 5):
        # Ties share the best place, so a share can stay empty while the next holds two.
        out[f"place{place}_share"] = places.count(place) / max(1, len(places))
    for seat in range(4):
        # The measured seat's points by its turn order (seat 1 places and moves first).
        at = [p for p, s in zip(points, seats, strict=True) if s == seat]
        if at:
            out[f"seat{seat + 1}_points"] = sum(at) / len(at)
    out.update(_regions(results, seats))
    out.update(_search(results, seats))
    return out


def _regions(results: Sequence[GameResult], seats: Sequence[int]) -> dict[str, float]:
    """How the measured seat's cells and the field's held together at the end.

    A seat's score is the sum of its regions' values (``region_value``: a region of n
    cells is worth n**1.25), so the same cells in one region score most. Per game:
    the cells taken; the score lost to being split into several regions (the value of
    one region of that many cells less the score); and the measured seat's points had
    its cells (both partners' in a pair field) been one region, every other score as it
    was: an upper bound on what holding together could have won, not a reachable score.

    And how often a game reached the ceiling of the score (every sheep on a cell of its
    own, all in one region: 32 in games 1, 3 and 4, 76 in game 2): the measured seat,
    and any seat of the field; and how often the measured seat was first alone, where a
    first place shared with a seat of the field (both at the ceiling, say) gives the
    shared points (4 of 5 for two seats).
    """
    perfect: list[float] = []
    field_perfect: list[float] = []
    alone: list[float] = []
    cells: list[float] = []
    loss: list[float] = []
    field_cells: list[float] = []
    field_loss: list[float] = []
    whole: list[float] = []
    for result, seat in zip(results, seats, strict=True):
        owned = [sum(row.count(p) for row in result.final_map) for p in PLAYERS]
        lost = [region_value(owned[i]) - result.exact_scores[i] for i in range(len(owned))]
        field = field_seats(result)
        cells.append(owned[seat])
        loss.append(lost[seat])
        for s in field:
            field_cells.append(owned[s])
            field_loss.append(lost[s])
        setting = get_setting(result.game)
        ceiling = round(region_value(setting.sheep))
        perfect.append(float(result.scores[seat] == ceiling))
        field_perfect.append(float(any(result.scores[s] == ceiling for s in field)))
        scores = [float(x) for x in result.scores]
        actual = ranked_results(setting, scores)
        alone.append(float(all(actual[s] < actual[seat] for s in field)))
        for s in measured_seats(result):
            scores[s] = float(round(region_value(owned[s])))
        ranked = ranked_results(setting, scores)
        whole.append(tournament_points(ranked)[seat])

    def mean(values: list[float]) -> float:
        return sum(values) / max(1, len(values))

    return {
        "cells_per_game": mean(cells),
        "field_cells_per_game": mean(field_cells),
        "region_loss_per_game": mean(loss),
        "field_region_loss_per_game": mean(field_loss),
        "one_region_points_per_game": mean(whole),
        "perfect_share": mean(perfect),
        "field_perfect_share": mean(field_perfect),
        "first_alone_share": mean(alone),
    }


def measured_seats(result: GameResult) -> list[int]:
    """The 0-based seats the measured strategy sat in (two in a pair field)."""
    assert result.seats is not None  # the runner names every game's entrants
    return [seat for seat, entrant in enumerate(result.seats) if entrant == MEASURED]


def field_seats(result: GameResult) -> list[int]:
    """The 0-based seats of the field: every seat but the measured strategy's and,
    in game 4, its partner's."""
    setting = get_setting(result.game)
    ours = set(measured_seats(result))
    ours |= {p - 1 for s in list(ours) if (p := setting.partner(s + 1)) is not None}
    return [s for s in range(len(result.seats or ())) if s not in ours]


def _search(results: Sequence[GameResult], seats: Sequence[int]) -> dict[str, float]:
    """The measured seat's search figures per move, weighted by its moves in each game."""
    figures = [r.search[s] for r, s in zip(results, seats, strict=True) if r.search]
    moves = sum(f["moves"] for f in figures)
    if not moves:
        return {}
    out: dict[str, float] = {}
    for key in SEARCH_KEYS:
        weighted = [(f[key], f["moves"]) for f in figures if key in f]
        if weighted:
            total = sum(n for _, n in weighted)
            out[f"{key}_per_move"] = sum(v * n for v, n in weighted) / total
    out["time_used_max"] = max(f.get("time_used_max", 0.0) for f in figures)
    medians = [f["time_used_median"] for f in figures if "time_used_median" in f]
    if medians:
        # The median over games of each game's median move time.
        out["time_used_median"] = statistics.median(medians)
    out["moves"] = moves
    return out


def measured_strategy(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The strategy and parameters measured: ``--strategy``, else the parameter file's,
    else the main strategy; ``--param`` wins over the file."""
    agent = load_agent_params(args.params_file) if args.params_file else None
    name = args.strategy or (agent.strategy if agent else DEFAULT_STRATEGY)
    params: dict[str, Any] = agent.params_for(name) if agent else {}
    params.update(parse_params(args.param))
    checked = check_params(name, params)  # fail early on a bad parameter
    workers = worker_count(getattr(checked, "workers", 0))
    if workers and args.cluster is not None:
        # A Dask worker process is daemonic: it may not start the search's processes.
        raise ConfigError(
            f"--cluster with workers={workers}: a Dask worker cannot start search "
            "processes; measure one core per game (workers=0) and size the cluster's "
            "workers to its cores"
        )
    cores = available_cores()
    if workers and args.jobs * (1 + workers) > cores:
        raise ConfigError(
            f"--jobs {args.jobs} with workers={workers} would search on "
            f"{args.jobs * (1 + workers)} processes at once on {cores} cores: the games "
            f"would take time from each other; use --jobs {max(1, cores // (1 + workers))}"
            " or fewer workers"
        )
    return name, params


def check_baseline(schedule: Schedule, baseline: Path) -> None:
    """Before anything is played: a baseline file already there must be of the same field
    on the same boards (``ConfigError`` otherwise). One not there yet may be a run started
    beside this one: it is said on stderr now and looked for again at the end."""
    if baseline.exists():
        baseline_games(schedule, baseline)
    else:
        print(
            f"--baseline: {baseline} is not there yet; the games are paired with those it "
            "holds at the end of this run",
            file=sys.stderr,
        )


def baseline_games(schedule: Schedule, baseline: Path) -> dict[int, GameResult]:
    """The games of the run kept in ``baseline`` (a results file of ``bench strength``)
    by index. It must be the same field on the same boards (game, seed, format, the
    field's entrants but for their clock), else a ``ConfigError`` says what differs."""
    header, kept = read_run(baseline, "--baseline:")
    same_boards(header_of(schedule)["tournament"], header, f"--baseline: {baseline}")
    return {r.index: r for r in kept}


def read_run(path: Path, what: str) -> tuple[dict[str, Any], list[GameResult]]:
    """The tournament header and the games of the results file ``path`` of a run; a file
    that is not there or has no header is a ``ConfigError`` starting with ``what``."""
    if not path.exists():
        raise ConfigError(f"{what} {path} does not exist (no run of this field there)")
    header, games = read_results_file(path)
    if header is None:
        raise ConfigError(f"{what} {path} has no tournament header")
    return header["tournament"], games


def same_boards(now: dict[str, Any], then: dict[str, Any], what: str) -> None:
    """Refuse (``ConfigError``, starting with ``what``) to pair a run whose header is
    ``then`` with one whose header is ``now`` unless they played the same field on the
    same boards: game, seed, format and the field's entrants but for their clock."""
    for key in ("game", "seed", "format"):
        if now[key] != then.get(key):
            raise ConfigError(
                f"{what} was played with {key} {then.get(key)!r}, "
                f"this run with {now[key]!r}: not the same boards"
            )
    ours, theirs = _field_commands(now["entrants"]), _field_commands(then["entrants"])
    if ours != theirs:
        raise ConfigError(f"{what} was played against another field ({theirs}; this run: {ours})")


def paired_differences(
    results: Sequence[GameResult], before: dict[int, GameResult], what: str = "--baseline"
) -> dict[str, list[float]]:
    """The measured strategy's points and score in each game minus those in the
    baseline's game of the same index, over the games both played (``points`` and
    ``score``). A pair whose board seed or seating differs is a ``ConfigError``."""
    pairs = [(r, before[r.index]) for r in results if r.index in before]
    for r, b in pairs:
        if (r.seed, r.seats) != (b.seed, b.seats):
            raise ConfigError(
                f"{what}: its game {r.index} had seed {b.seed} and seats {b.seats}, "
                f"this run's seed {r.seed} and seats {r.seats}"
            )
    out: dict[str, list[float]] = {}
    for key, name in (("points", "points"), ("scores", "score")):
        out[name] = [
            float(getattr(r, key)[measured_seats(r)[0]])
            - float(getattr(b, key)[measured_seats(b)[0]])
            for r, b in pairs
        ]
    return out


def paired_figures(diffs: dict[str, list[float]]) -> dict[str, float]:
    """``paired_games`` and each difference's mean with its 95% interval, and (from two
    games on) its standard deviation over one game, ``paired_<name>_sd``: what sizes the
    next run, the interval of n paired games being about 1.96 * sd / sqrt(n) each way."""
    out = {"paired_games": float(len(diffs["points"]))}
    if not diffs["points"]:
        return out
    for name, values in diffs.items():
        interval = mean_interval(values)
        out[f"paired_{name}_diff"] = interval.mean
        out[f"paired_{name}_ci95_low"] = interval.low
        out[f"paired_{name}_ci95_high"] = interval.high
        if len(values) >= 2:
            out[f"paired_{name}_sd"] = statistics.stdev(values)
    return out


def _field_commands(entrants: Sequence[dict[str, Any]], clock: bool = False) -> list[list[str]]:
    """The field's commands (every entrant but the measured one) without the interpreter
    and, unless ``clock``, without their clock: what must be equal for two runs to be
    paired (with the clock: to be pooled as one setup)."""
    out = []
    for entrant in entrants[MEASURED + 1 :]:
        command = list(entrant["command"][1:])
        if "--time-limit" in command and not clock:
            at = command.index("--time-limit")
            del command[at : at + 2]
        out.append([entrant["name"], *command])
    return out


def results_file(folder: str | None, game: int, label: str, suffix: str = ".jsonl") -> Path | None:
    """Where ``--results`` keeps a field's games (None without it); a character of the
    label a file name should not hold (a seat spec's path, say) becomes ``_``. With
    ``suffix=""``, the folder of the field's replays under ``--record``."""
    if folder is None:
        return None
    return Path(folder) / f"game{game}-{re.sub(r'[^A-Za-z0-9+._-]', '_', label)}{suffix}"


def run(args: argparse.Namespace) -> int:
    quiet_games()
    if args.reveal and not get_setting(args.game).hidden_counts:
        raise ConfigError(f"--reveal shows game 3's hidden counts: game {args.game} hides none")
    if args.resume and args.results is None:
        raise ConfigError("--resume continues the games kept by --results DIR: give it too")
    name, params = measured_strategy(args)
    measured = builtin_entrant(name, name, params, args.time_limit)
    field_clock = args.time_limit if args.field_time_limit is None else args.field_time_limit
    if field_clock <= 0:
        raise ConfigError(f"--field-time-limit must be positive, not {field_clock:g}")
    referee_clock = max(args.time_limit, field_clock)
    runner = make_runner(args.jobs, args.cluster or None, args.cluster is not None)
    missing: list[Path] = []
    try:
        for fld in args.field or DEFAULT_FIELDS.get(args.game, list(FIELDS)):
            entrants, lineup = field_lineup(fld, args.game, measured, field_clock)
            label = fld.replace(",", "+").replace(":", "_").replace("=", "")
            replays = results_file(args.record, args.game, label, suffix="")
            schedule = Schedule(
                tuple(entrants), args.game, args.seed, referee_clock, "field",
                lineup=lineup, local=True, reveal=(MEASURED,) if args.reveal else (),
                record_dir=str(replays or ""),
            )  # fmt: skip
            path = results_file(args.results, args.game, label)
            base_file = results_file(args.baseline, args.game, label)
            if base_file is not None:
                check_baseline(schedule, base_file)
            started = time.monotonic()
            outcome = Tournament(schedule, args.games, path, args.resume).run(runner)
            figures = summarize(outcome.results, args.game)
            figures["played"] = float(outcome.played)
            figures["wall_s"] = time.monotonic() - started
            if base_file is not None and not base_file.exists():
                missing.append(base_file)
            elif base_file is not None:
                # Read at the end: a baseline run beside this one has kept more games since.
                before = baseline_games(schedule, base_file)
                figures.update(paired_figures(paired_differences(outcome.results, before)))
            seen = ", every count revealed to it" if args.reveal else ""
            clock = f"{args.time_limit} s per move"
            if field_clock != args.time_limit:
                clock += f" (the field {field_clock} s)"
            print(f"# {name} vs {fld}, game {args.game}, {clock}{seen}")
            print_figures({f"{label}.{k}": v for k, v in figures.items()})
            if outcome.interrupted:
                kept = f": the games are in {path}, --resume plays the rest" if path else ""
                print(f"interrupted after {len(outcome.results)} games{kept}", file=sys.stderr)
                return 130
    finally:
        runner.close()
    for base_file in missing:
        print(
            f"--baseline: {base_file} does not exist, at the end of the run either: no paired "
            "figures; the games are kept, --resume --baseline DIR reports them paired later",
            file=sys.stderr,
        )
    return 2 if missing else 0


def kept_run(run: str, what: str) -> tuple[Path, dict[str, Any], list[GameResult]]:
    """A finished run of ``bench strength``: its results file (``run`` itself, or the one
    file of the ``--results`` folder ``run``), the file's tournament header and its games."""
    path = Path(run)
    if path.is_dir():
        files = sorted(path.glob("game*.jsonl"))
        if len(files) != 1:
            held = ", ".join(f.name for f in files) or "none"
            raise ConfigError(
                f"{what} {run}: a folder of one field's results file is needed, it holds {held}"
                "; name the file"
            )
        path = files[0]
    header, games = read_run(path, what)
    if not games:
        raise ConfigError(f"{what} {path} holds no game")
    return path, header, games


def run_pool(args: argparse.Namespace) -> int:
    """Report finished runs of one setup against one field (on other boards, say) as one
    run, and, with a baseline for each, the paired differences of all their games."""
    if args.baseline is not None and len(args.baseline) != len(args.runs):
        raise ConfigError(
            f"--baseline given {len(args.baseline)} times for {len(args.runs)} runs: "
            "give one per run, in the runs' order"
        )
    runs = [kept_run(run, "run") for run in args.runs]
    first_path, first, _ = runs[0]
    measured = first["entrants"][MEASURED]["command"][1:]
    for path, header, _ in runs[1:]:
        for key in ("game", "format", "time_limit", "reveal"):
            if header.get(key) != first.get(key):
                raise ConfigError(
                    f"run {path} was played with {key} {header.get(key)!r}, "
                    f"run {first_path} with {first.get(key)!r}: not one setup"
                )
        if header["entrants"][MEASURED]["command"][1:] != measured:
            raise ConfigError(f"run {path} measured another setup than run {first_path}")
        theirs = _field_commands(header["entrants"], clock=True)
        if theirs != _field_commands(first["entrants"], clock=True):
            raise ConfigError(
                f"run {path} was played against another field (or the field on another "
                f"clock) than run {first_path}"
            )
    figures: dict[str, float] = {}
    diffs: dict[str, list[float]] = {}  # paired_differences' names, every run's games
    for k, (path, header, games) in enumerate(runs, start=1):
        figures[f"run{k}.games"] = float(len(games))
        figures[f"run{k}.seed"] = float(header["seed"])
        figures[f"run{k}.points_per_game"] = statistics.fmean(
            r.points[measured_seats(r)[0]] for r in games
        )
        if args.baseline is not None:
            base_path, base, base_games = kept_run(args.baseline[k - 1], "--baseline")
            same_boards(header, base, f"--baseline {base_path} (of run {path})")
            before = {r.index: r for r in base_games}
            mine = paired_differences(games, before, f"--baseline {base_path}")
            figures.update({f"run{k}.{n}": v for n, v in paired_figures(mine).items()})
            for name, values in mine.items():
                diffs.setdefault(name, []).extend(values)
    game = int(first["game"])
    pooled = summarize([r for _, _, games in runs for r in games], game)
    pooled["runs"] = float(len(runs))
    if args.baseline is not None:
        pooled.update(paired_figures(diffs))
    print(f"# {len(runs)} runs pooled, game {game}, {first['time_limit']} s per move")
    print_figures(figures)
    print_figures({f"pooled.{k}": v for k, v in pooled.items()})
    return 0
