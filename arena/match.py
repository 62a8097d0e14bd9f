"""``battlesheep match``: many games between four entrants, seats rotated, with statistics.

A seat spec is a built-in strategy, ``NAME`` or ``NAME:key=value:key=value``,
played by a ``battlesheep play`` subprocess (a real TCP client, so what is
measured is what a user runs), or ``cmd:<command line>`` with the
placeholders ``{port}``, ``{host}``, ``{team}``, ``{game}``;
``cmd:team=N:<command line>`` for a program that sends a fixed team id N.

Game k is played on the board of seed ``seed + k // 4`` with entrant i in seat
``(i + k) % 4 + 1``: every block of four games plays one board from all four
seats, so with a multiple of 4 games every entrant plays every seat equally
often. Each game has its own server on an ephemeral port; ``--jobs K`` plays K
games at a time.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import Progress
from rich.table import Table

from arena.config import ConfigError, ServerConfig
from arena.players import ProcessPlayer
from arena.replay import write_replay
from arena.results import GameResult, SeatTally, append_result
from arena.server import GamePlan, play_single

FIRST_TEAM = 101

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def ci95(values: Sequence[float]) -> float:
    """Half-width of the 95% confidence interval of the mean (t distribution); nan if n < 2."""
    n = len(values)
    if n < 2:
        return math.nan
    t = _T95[n - 2] if n - 1 <= len(_T95) else 1.96
    return t * statistics.stdev(values) / math.sqrt(n)


@dataclass
class Entrant:
    spec: str
    index: int
    team: int
    command: str | list[str]


def builtin_command(name: str, params: dict[str, str], time_limit: float) -> list[str]:
    argv = [sys.executable, "-m", "battlesheep", "play", "--game", "{game}", "--host", "{host}"]
    argv += ["--port", "{port}", "--team", "{team}", "--strategy", name]
    for key, value in params.items():
        argv += ["--param", f"{key}={value}"]
    return [*argv, "--time-limit", f"{time_limit:g}"]


def parse_entrant(spec: str, index: int, time_limit: float) -> Entrant:
    spec = spec.strip()
    team = FIRST_TEAM + index
    if spec.startswith("cmd:"):
        command = spec[4:].strip()
        if command.startswith("team="):
            team_text, _, command = command[5:].partition(":")
            try:
                team = int(team_text)
            except ValueError:
                raise ConfigError(f"seat {spec!r}: team={team_text!r} is not an integer") from None
        if not command.strip():
            raise ConfigError(f"seat {spec!r} has no command line")
        return Entrant(spec, index, team, command)
    from strategies.base import ParameterError
    from strategies.registry import make_strategy, parse_seat

    try:
        name, params = parse_seat(spec)
        make_strategy(name, params)  # unknown names and bad parameters fail here, not in a log
    except ParameterError as exc:
        raise ConfigError(f"seat {spec!r}: {exc}") from None
    return Entrant(spec, index, team, builtin_command(name, params, time_limit))


def parse_entrants(seats: str, time_limit: float) -> list[Entrant]:
    specs = [s for s in seats.split(",")]
    if any(s.strip().startswith("cmd:") for s in specs) and len(specs) != 4:
        # Commands may contain commas; then seats are separated by ';'.
        specs = seats.split(";")
    if len(specs) != 4:
        raise ConfigError(
            f"--seats needs 4 comma-separated seats (';' if a command has commas), not {len(specs)}"
        )
    entrants = [parse_entrant(s, k, time_limit) for k, s in enumerate(specs)]
    teams = [e.team for e in entrants]
    if len(set(teams)) != 4:
        raise ConfigError(f"seats send the same team id: {teams}")
    return entrants


def seating(game_index: int) -> list[int]:
    """Entrant index in each seat (seat order) for game ``game_index``."""
    k = game_index % 4
    by_seat = [0] * 4
    for entrant in range(4):
        by_seat[(entrant + k) % 4] = entrant
    return by_seat


@dataclass(kw_only=True)
class EntrantStats(SeatTally):
    entrant: Entrant


def tally(entrants: Sequence[Entrant], results: Sequence[GameResult]) -> list[EntrantStats]:
    stats = [EntrantStats(entrant=e) for e in entrants]
    for result in results:
        for index, entrant in enumerate(seating(result.index)):
            stats[entrant].add(result, index)
    return stats


def _short(spec: str, width: int = 48) -> str:
    return spec if len(spec) <= width else "…" + spec[-(width - 1) :]


def stats_table(stats: Sequence[EntrantStats], title: str) -> Table:
    table = Table(title=title)
    for column in ("entrant", "games", "points/game", "±95%", "score", "1st", "2nd", "3rd", "4th"):
        table.add_column(column, justify="left" if column == "entrant" else "right")
    table.add_column("illegal", justify="right")
    table.add_column("late", justify="right")
    table.add_column("disc.", justify="right")
    for s in stats:
        n = len(s.points)
        mean = statistics.fmean(s.points) if n else math.nan
        half = ci95(s.points)
        table.add_row(
            f"{s.entrant.index + 1}: {_short(s.entrant.spec)}",
            str(n),
            f"{mean:.3f}",
            "-" if math.isnan(half) else f"{half:.3f}",
            f"{statistics.fmean(s.scores):.2f}" if n else "-",
            *(str(c) for c in s.places),
            str(s.illegal),
            str(s.late),
            str(s.disconnects),
        )
    return table


@dataclass
class MatchOptions:
    game: int
    games: int
    entrants: list[Entrant]
    seed: int
    time_limit: float
    jobs: int = 1
    logs: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))
    record: Path | None = None
    results: Path | None = None
    connect_timeout: float = 30.0


def plan_game(options: MatchOptions, k: int) -> GamePlan:
    by_seat = seating(k)
    players = []
    for seat, e in enumerate((options.entrants[i] for i in by_seat), start=1):
        players.append(
            ProcessPlayer(
                e.command,
                team=e.team,
                game=options.game,
                log_path=options.logs / f"game{k + 1}-seat{seat}-entrant{e.index + 1}.log",
                label=e.spec,
            )
        )
    return GamePlan(
        game=options.game,
        seed=options.seed + k // 4,
        teams=[options.entrants[i].team for i in by_seat],
        players=players,
        index=k,
    )


async def run_match(options: MatchOptions, progress: Progress | None = None) -> list[GameResult]:
    config = ServerConfig(
        port=0, time_limit=options.time_limit, connect_timeout=options.connect_timeout
    )
    gate = asyncio.Semaphore(max(1, options.jobs))
    task_id = progress.add_task("games", total=options.games) if progress else None
    results: list[GameResult] = []

    async def one(k: int) -> None:
        async with gate:
            record, result = await play_single(plan_game(options, k), config)
        results.append(result)
        if options.results is not None:
            append_result(options.results, result)
        if options.record is not None:
            write_replay(options.record / f"game{k + 1}-seed{result.seed}.msgpack", record, result)
        if progress is not None and task_id is not None:
            progress.advance(task_id)

    await asyncio.gather(*(one(k) for k in range(options.games)))
    return sorted(results, key=lambda r: r.index)
