"""``battlesheep tournament``, ``match`` and ``tune`` (``build``, ``submission``: ``build_cli``).

``match`` is a tournament of the four entrants given for the seats, in the
round-robin format: every block of four games plays one board from all four
seats.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arena.players import PlayerLogs, add_log_arguments
from strategies.base import ConfigError
from strategies.params import load_agent_params
from tournament.entrants import Entrant, parse_entrant, parse_entrants
from tournament.run import RunOutcome, RunProgress, Tournament, header_seed
from tournament.runner import default_jobs, make_runner
from tournament.schedule import FORMATS, Schedule, arrangements
from tournament.spsa import Spsa, load_space
from tournament.standings import pairwise, pairwise_table, standings, standings_table
from tournament.tune import GAMES_PER_ITERATION, TuneSettings, tune

log = logging.getLogger("tournament")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tournament",
        help="round-robin or gauntlet of entrants with Elo, pairwise table and SPRT",
        description="Entrants: NAME or NAME:key=value (built-in strategies), a parameter file "
        "(.toml/.yaml), or cmd:<command line> with {port} {host} {team} {game}; label=SPEC "
        "names one. Every round plays each lineup from every seat on one board.",
    )
    p.add_argument("entrants", nargs="+", metavar="ENTRANT")
    p.add_argument("--format", choices=FORMATS, default="round-robin", dest="fmt")
    _add_run_options(p)
    p.add_argument(
        "--sprt",
        metavar="ELO0,ELO1",
        help="stop when B (the second entrant) is shown better by ELO1 or not better than ELO0;"
        " --games is then the most games played",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="SPRT false-positive rate")
    p.add_argument("--beta", type=float, default=0.05, help="SPRT false-negative rate")
    p.add_argument(
        "--sprt-min-games", type=int, default=16, help="games before the SPRT may stop (16)"
    )
    p.set_defaults(func=main_tournament)
    register_match(sub)
    register_tune(sub)


def _add_run_options(
    p: argparse.ArgumentParser,
    games_help: str = "games to play (default: 4 rounds of every lineup and seat)",
) -> None:
    p.add_argument("--game", type=int, choices=[1, 2, 3, 4], default=1, help="game setting")
    p.add_argument("--games", type=int, help=games_help)
    p.add_argument(
        "--seed", type=int, help="board seed of round 0, round r: seed + r (default: random)"
    )
    p.add_argument("--time-limit", type=float, default=3.0, help="seconds per move")
    p.add_argument(
        "--jobs",
        type=int,
        default=default_jobs(),
        help=f"games at a time (default: the number of cores, {default_jobs()})",
    )
    p.add_argument(
        "--cluster",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run the games on Dask: a scheduler address (tcp://host:8786), or none to start"
        " a local cluster of --jobs workers",
    )
    add_log_arguments(p)
    p.add_argument("--record", metavar="DIR", help="write a replay file per game here")
    p.add_argument("--results", metavar="FILE", help="JSON lines: a header, then one per game")
    p.add_argument("--resume", action="store_true", help="play only the games not in --results")
    p.add_argument("--plot", metavar="FILE", help="draw standings (and the SPRT) to an image")
    p.add_argument("--connect-timeout", type=float, default=30.0)
    p.add_argument("-v", "--verbose", action="count", default=0, help="debug logging")
    p.add_argument("--log-file", metavar="PATH", help="log to a file instead of stderr")


def register_match(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "match",
        help="many games between four entrants, seats rotated, with statistics",
        description="Seats are entrants as `tournament` takes them: NAME or NAME:key=value "
        "(built-in strategies played by `battlesheep play`), a parameter file, or "
        "cmd:<command line> with {port} {host} {team} {game}; cmd:team=N:<command> for a "
        "fixed team id. Game k plays the board of round k // 4 with entrant e in seat "
        "(e + k) % 4 + 1.",
    )
    p.add_argument(
        "--seats", required=True, help='four seats: "A,B,C,D" (";" if a command has commas)'
    )
    _add_run_options(p, games_help="games to play: 4 play one board from every seat")
    p.set_defaults(
        func=main_match,
        games=4,
        fmt="round-robin",
        sprt=None,
        alpha=0.05,
        beta=0.05,
        sprt_min_games=16,
    )


def quiet(args: argparse.Namespace) -> None:
    # Each game logs its server's life; only warnings matter on a long run.
    if not args.verbose:
        for name in ("arena", "client", "distributed", "tournament.runner"):
            logging.getLogger(name).setLevel(logging.WARNING)


def parse_sprt(text: str) -> tuple[float, float]:
    try:
        elo0, elo1 = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--sprt {text!r}: give two Elo values, e.g. --sprt 0,10") from None
    if elo1 <= elo0:
        raise ConfigError(f"--sprt {text!r}: elo0 must be below elo1")
    return elo0, elo1


def seat_entrants(seats: str, time_limit: float) -> list[Entrant]:
    """The four entrants of ``match --seats``, named by their seat in the first game."""
    specs = seats.split(",")
    if any(s.strip().startswith("cmd:") for s in specs) and len(specs) != 4:
        specs = seats.split(";")  # commands may contain commas; then seats are split by ';'
    if len(specs) != 4:
        raise ConfigError(
            f"--seats needs 4 comma-separated seats (';' if a command has commas), not {len(specs)}"
        )
    entrants = [parse_entrant(spec, time_limit) for spec in specs]
    return [replace(e, name=f"{k + 1}:{e.name}") for k, e in enumerate(entrants)]


def main_match(args: argparse.Namespace) -> int:
    entrants = seat_entrants(args.seats, args.time_limit)
    if args.games % 4:
        print(
            f"note: {args.games} games is not a multiple of 4; seats are not equally often played",
            file=sys.stderr,
        )
    return play_tournament(args, entrants)


def main_tournament(args: argparse.Namespace) -> int:
    return play_tournament(args, parse_entrants(args.entrants, args.time_limit))


def play_tournament(args: argparse.Namespace, entrants: list[Entrant]) -> int:
    quiet(args)
    logs = PlayerLogs(args.player_logs, "battlesheep-tournament-", args.keep_logs)
    outcome: RunOutcome | None = None
    try:
        outcome = _play(args, entrants, str(logs.path))
    finally:
        if note := logs.close(_why_keep_logs(outcome)):
            print(note, file=sys.stderr)
    return 130 if outcome.interrupted else 0


def _why_keep_logs(outcome: RunOutcome | None) -> str | None:
    """Why the players' logs are worth keeping: the run was cut short, or players failed."""
    if outcome is None or outcome.interrupted:
        return "the run did not end" if outcome is None else "interrupted"
    faults = ("disconnects", "absent", "protocol_errors")
    failed = sum(1 for r in outcome.results if any(sum(getattr(r, f)) for f in faults))
    return f"players failed in {failed} games" if failed else None


def _play(args: argparse.Namespace, entrants: list[Entrant], logs: str) -> RunOutcome:
    if args.jobs < 1 or args.time_limit <= 0 or (args.games is not None and args.games < 1):
        raise ConfigError("--games, --jobs and --time-limit must be positive")
    sprt = parse_sprt(args.sprt) if args.sprt else None
    if sprt is not None and len(entrants) != 2:
        raise ConfigError("--sprt needs exactly two entrants: A (the base) and B")
    results_path = Path(args.results) if args.results else None
    seed = args.seed
    if seed is None and args.resume and results_path is not None:
        seed = header_seed(results_path)
    if seed is None:
        seed = random.randrange(2**31)
    per_round = len(arrangements(len(entrants), args.fmt))
    games = args.games or (1000 if sprt else 4 * per_round)
    schedule = Schedule(
        tuple(entrants),
        args.game,
        seed,
        args.time_limit,
        args.fmt,
        args.connect_timeout,
        logs,
        record_dir=args.record or "",
    )
    tournament = Tournament(
        schedule,
        games,
        results_path,
        args.resume,
        sprt,
        args.alpha,
        args.beta,
        args.sprt_min_games,
    )
    outcome = run_with_progress(tournament, args)
    report(tournament, outcome, args)
    if args.plot:
        from tournament.plot import plot_tournament

        plot_tournament(
            Path(args.plot),
            standings([e.name for e in entrants], outcome.results),
            outcome.sprt,
            outcome.llr_history,
        )
        print(f"plot written to {args.plot}")
    return outcome


def _live_standings(names: list[str], progress: RunProgress) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("entrant", "seats", "points/game", "score"):
        table.add_column(column, justify="left" if column == "entrant" else "right")
    sums: dict[str, list[float]] = {n: [0, 0.0, 0.0] for n in names}
    for result in progress.results:
        for seat, name in enumerate(result.entrants or []):
            sums[name][0] += 1
            sums[name][1] += result.points[seat]
            sums[name][2] += result.scores[seat]
    for name in sorted(names, key=lambda n: -sums[n][1] / max(1, sums[n][0])):
        n, pts, score = sums[name]
        table.add_row(
            name, str(int(n)), f"{pts / n:.3f}" if n else "-", f"{score / n:.2f}" if n else "-"
        )
    return table


def _llr_text(progress: RunProgress) -> str:
    sprt = progress.sprt
    if sprt is None:
        return ""
    return (
        f"LLR {sprt.llr():+.3f} in [{sprt.lower:.3f}, {sprt.upper:.3f}]"
        f" after {len(sprt.scores)} games (elo0 {sprt.elo0:g}, elo1 {sprt.elo1:g})"
    )


def run_with_progress(tournament: Tournament, args: argparse.Namespace) -> RunOutcome:
    """Run with rich progress bars and live standings (plain lines when not a terminal)."""
    names = [e.name for e in tournament.schedule.entrants]
    err = Console(stderr=True)
    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        console=err,
    )
    task_id = bar.add_task("games", total=tournament.games, rate="")
    use_cluster = args.cluster is not None
    runner = make_runner(args.jobs, args.cluster or None, use_cluster)
    step = max(1, tournament.games // 10)

    def view(progress: RunProgress | None) -> Group:
        parts: list[Any] = [bar]
        if progress is not None:
            if progress.sprt is not None:
                parts.append(_llr_text(progress))
            parts.append(_live_standings(names, progress))
        return Group(*parts)

    live = Live(view(None), console=err, refresh_per_second=4) if err.is_terminal else None

    def on_game(progress: RunProgress) -> None:
        bar.update(task_id, completed=progress.done, rate=f"{progress.games_per_s:.2f} games/s")
        if live is not None:
            live.update(view(progress))
        elif progress.sprt is not None or progress.done % step == 0:
            line = f"games {progress.done}/{progress.total} {progress.games_per_s:.2f} games/s"
            print(f"{line} {_llr_text(progress)}".rstrip(), file=sys.stderr, flush=True)

    try:
        with live if live is not None else contextlib.nullcontext():
            return tournament.run(runner, on_game)
    finally:
        runner.close()


def report(tournament: Tournament, outcome: RunOutcome, args: argparse.Namespace) -> None:
    schedule = tournament.schedule
    names = [e.name for e in schedule.entrants]
    rows = standings(names, outcome.results)
    out = Console()
    if not out.is_terminal:  # a file or a pipe: do not squeeze the tables into 80 columns
        out = Console(width=160)
    rate = outcome.played / outcome.seconds if outcome.seconds > 0 else 0.0
    title = (
        f"game {schedule.game}, {schedule.fmt}, {len(outcome.results)} games"
        f" ({outcome.played} played now, {rate:.2f} games/s), seed {schedule.seed},"
        f" {schedule.time_limit:g} s/move"
    )
    out.print(standings_table(rows, title))
    out.print(pairwise_table(names, pairwise(names, outcome.results)))
    total_points = sum(sum(r.points) for r in outcome.results)
    out.print(f"points given: {total_points:g} in {len(outcome.results)} games")
    if outcome.sprt is not None:
        sprt = outcome.sprt
        verdict = {
            "H1": f"H1 accepted: {names[1]} is better than {names[0]} (by {sprt.elo1:g} Elo)",
            "H0": f"H0 accepted: {names[1]} is not better than {names[0]} (by {sprt.elo0:g} Elo)",
            None: "no verdict yet: the game limit was reached or the run was interrupted",
        }[outcome.verdict]
        out.print(
            f"SPRT({sprt.elo0:g},{sprt.elo1:g}) LLR {sprt.llr():+.3f}"
            f" [{sprt.lower:.3f}, {sprt.upper:.3f}] after {len(sprt.scores)} games: {verdict}"
        )
    if outcome.interrupted:
        out.print("interrupted: run again with --resume to play the remaining games")


def register_tune(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tune",
        help="tune numeric strategy parameters by SPSA from game results",
        description="Plays theta+c*delta against theta-c*delta every iteration and steps "
        "towards the winner; writes the best set found (the final estimate) to --out.",
    )
    p.add_argument("--params", required=True, metavar="FILE", help="the starting parameter file")
    p.add_argument("--space", required=True, metavar="FILE", help="[name] min, max, step tables")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument(
        "--games-per-iteration",
        type=int,
        default=GAMES_PER_ITERATION,
        help=f"plus against minus games per iteration (default {GAMES_PER_ITERATION}:"
        " one board, every seating)",
    )
    p.add_argument("--out", metavar="FILE", help="the tuned set (default: PARAMS.tuned.toml)")
    p.add_argument("--lr", type=float, default=2.0, help="SPSA gain a (perturbations per sweep)")
    _add_run_options(p)
    p.set_defaults(func=main_tune)


def main_tune(args: argparse.Namespace) -> int:
    quiet(args)
    if args.iterations < 1 or args.games_per_iteration < 1 or args.time_limit <= 0:
        raise ConfigError("--iterations, --games-per-iteration and --time-limit must be > 0")
    agent = load_agent_params(args.params)
    dims = load_space(args.space, agent)
    out = Path(args.out) if args.out else Path(args.params).with_suffix(".tuned.toml")
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    start = {k: float(v) for k, v in agent.params.items() if isinstance(v, int | float)}
    logs = PlayerLogs(args.player_logs, "battlesheep-tune-", args.keep_logs)
    spsa = Spsa(dims, start, a=args.lr, seed=seed)
    settings = TuneSettings(
        args.game,
        seed,
        args.time_limit,
        args.games_per_iteration,
        args.connect_timeout,
        str(logs.path),
    )
    runner = make_runner(args.jobs, args.cluster or None, args.cluster is not None)
    print(f"tuning {', '.join(d.name for d in dims)} of {args.params}; start {spsa.values()}")
    why_keep: str | None = "the run did not end cleanly"
    try:
        for it in tune(runner, agent, spsa, settings, args.iterations, out, args.params):
            print(f"iteration {it.number}: plus {it.plus} minus {it.minus} result {it.result:+.3f}")
            print(f"  estimate {it.estimate}", flush=True)
        why_keep = None
    except KeyboardInterrupt:
        print(f"interrupted after {spsa.k} iterations")
        why_keep = "interrupted"
    finally:
        runner.close()
        if note := logs.close(why_keep):
            print(note, file=sys.stderr)
    print(f"best set found: {spsa.values()}, written to {out}")
    return 0
