"""Replay files: one msgpack map per game, written with ``--record DIR``.

Keys: ``format`` ("battlesheep-replay"), ``version`` (1), ``game``, ``seed``,
``teams`` (seat order), ``size``, ``time_limit``, ``initial_map`` (the empty
field, wire layout ``[x][y]``), ``events`` (one map per turn, in order:
``seat``, ``kind`` place/move/pass/skip, ``outcome`` ok/late/illegal/absent/
disconnect, ``x``, ``y``, ``split``, ``dir``, ``elapsed`` seconds or nil,
``reply`` the raw values received or nil), and the end of the game:
``final_map``, ``final_sheep`` (true counts, also in game 3), ``scores``,
``exact_scores``, ``results``, ``points``, ``stalled``. Every placement and
applied move is in the events, so the position after any turn, with its true
counts, is rebuilt by replaying them (``positions``).

The file is a ``Replay`` (events ``ReplayEvent``): ``write_replay`` writes one,
``parse_replay`` is the one place a file's bytes are checked (``read_replay``,
``battlesheep replay``, the viewer's ``--open`` and its upload all use it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final, Literal, Self

import msgpack
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from arena.referee import Event, GameRecord
from arena.results import GameResult
from state.game import GameState, IllegalMoveError, Move
from state.geometry import Geometry
from state.render import SEAT_MARKS, render
from state.settings import SETTINGS, get_setting
from strategies.base import ConfigError

FORMAT: Final = "battlesheep-replay"
VERSION: Final = 1
FOUR = Field(min_length=4, max_length=4)


class ReplayError(ConfigError):
    """A replay file that cannot be read or does not replay to its recorded end."""


class ReplayEvent(BaseModel):
    """One seat's turn in a replay (``arena.referee.Event`` with ``dir`` for ``direction``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    seat: int = Field(ge=1, le=4)
    kind: Literal["place", "move", "pass", "skip"]
    outcome: Literal["ok", "late", "illegal", "absent", "disconnect"]
    x: int
    y: int
    split: int
    dir: int
    elapsed: float | None
    reply: list[int] | None

    @classmethod
    def of(cls, event: Event) -> ReplayEvent:
        return cls(
            seat=event.seat,
            kind=event.kind,  # type: ignore[arg-type]  # the referee's kinds are the Literal's
            outcome=event.outcome,  # type: ignore[arg-type]
            x=event.x,
            y=event.y,
            split=event.split,
            dir=event.direction,
            elapsed=event.elapsed,
            reply=list(event.reply) if event.reply is not None else None,
        )


class Replay(BaseModel):
    """A replay file, validated: the setting, board sizes, four seats, known events in range."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    format: Literal["battlesheep-replay"] = FORMAT
    version: Literal[1] = VERSION
    game: int
    seed: int
    teams: list[int] = FOUR
    size: int
    time_limit: float = Field(gt=0)
    initial_map: list[list[int]]
    events: list[ReplayEvent]
    final_map: list[list[int]]
    final_sheep: list[list[int]]
    scores: list[int] = FOUR
    exact_scores: list[float] = FOUR
    results: list[float] = FOUR
    points: list[float] = FOUR
    stalled: bool

    @model_validator(mode="after")
    def _fits_the_setting(self) -> Self:
        if self.game not in SETTINGS:
            raise ValueError(f"game: the setting must be 1, 2, 3 or 4, not {self.game}")
        n = SETTINGS[self.game].size
        if self.size != n:
            raise ValueError(f"size: game {self.game} is played on {n}x{n}, not {self.size}")
        for key in ("initial_map", "final_map", "final_sheep"):
            rows = getattr(self, key)
            if len(rows) != n or any(len(row) != n for row in rows):
                raise ValueError(f"{key}: not {n}x{n}")
        if any(c not in (-1, 0) for row in self.initial_map for c in row):
            raise ValueError("initial_map: cells must be -1 (no cell) or 0 (free)")
        for number, e in enumerate(self.events, start=1):
            low = 0 if e.kind in ("place", "move") else -1
            if not (low <= e.x < n and low <= e.y < n):
                raise ValueError(f"events[{number - 1}]: ({e.x},{e.y}) is off the {n}x{n} board")
        return self


def replay_of(record: GameRecord, result: GameResult) -> Replay:
    return Replay(
        game=record.setting.game,
        seed=record.seed,
        teams=list(record.teams),
        size=record.setting.size,
        time_limit=record.time_limit,
        initial_map=record.initial_map,
        events=[ReplayEvent.of(e) for e in record.events],
        final_map=result.final_map,
        final_sheep=result.final_sheep,
        scores=result.scores,
        exact_scores=result.exact_scores,
        results=result.results,
        points=result.points,
        stalled=result.stalled,
    )


def write_replay(path: str | Path, record: GameRecord, result: GameResult) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(msgpack.packb(replay_of(record, result).model_dump(), use_bin_type=True))
    return p


def parse_replay(data: bytes, name: str) -> Replay:
    """A replay file's bytes as a ``Replay``; ReplayError says in one line what is wrong."""
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise ReplayError(f"{name} is not a msgpack replay: {exc}") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise ReplayError(f"{name} is not a battlesheep replay")
    if raw.get("version") != VERSION:
        raise ReplayError(f"{name}: replay version {raw.get('version')!r} is not {VERSION}")
    try:
        return Replay.model_validate(raw)
    except ValidationError as exc:
        raise ReplayError(f"{name}: bad replay: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    err = errors[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "missing":
        msg = "missing"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return (f"{loc}: {msg}" if loc else msg) + more


def read_replay(path: str | Path) -> Replay:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_replay(data, str(path))


def initial_state(replay: Replay) -> GameState:
    setting = get_setting(replay.game)
    n = setting.size
    board = replay.initial_map
    playable = [board[x][y] != -1 for x in range(n) for y in range(n)]
    return GameState(setting, Geometry(n, playable))


def positions(replay: Replay) -> Iterator[tuple[ReplayEvent, GameState]]:
    """Each event with the state right after it (the same object, changed in place)."""
    state = initial_state(replay)
    n = state.geometry.size
    for number, event in enumerate(replay.events, start=1):
        kind = event.kind
        try:
            if state.to_move != event.seat:
                raise IllegalMoveError(f"seat {event.seat} is not to move")
            if kind == "place":
                state.place(event.x * n + event.y)
            elif kind == "move":
                state.apply(Move(event.x * n + event.y, event.split, event.dir))
            elif kind == "pass":
                state.apply_pass()
            else:
                state.skip_turn()
        except IllegalMoveError as exc:
            raise ReplayError(f"event {number} does not replay: {exc}") from None
        yield event, state
    if state.wire_map() != replay.final_map or state.wire_sheep() != replay.final_sheep:
        raise ReplayError("the events do not replay to the recorded final board")


def final_state(replay: Replay) -> GameState:
    state = initial_state(replay)
    for _, state in positions(replay):  # noqa: B007 - the last position is the answer
        pass
    return state


def describe(event: ReplayEvent, teams: list[int]) -> str:
    seat, kind, outcome = event.seat, event.kind, event.outcome
    who = f"seat {seat} ({SEAT_MARKS[seat]}, team {teams[seat - 1]})"
    took = f" in {event.elapsed * 1000:.0f} ms" if event.elapsed is not None else ""
    if kind == "place":
        how = "" if outcome == "ok" else f" (random cell: {outcome})"
        return f"{who} places at ({event.x},{event.y}){how}{took}"
    if kind == "move":
        return f"{who} moves {event.split} from ({event.x},{event.y}) dir {event.dir}{took}"
    if kind == "pass":
        return f"{who} has no move"
    return f"{who} loses the turn: {outcome}{took}"


def replay_lines(replay: Replay, boards: bool = True) -> Iterator[str]:
    """The game turn by turn, as text."""
    teams = replay.teams
    yield f"game {replay.game}, seed {replay.seed}, teams {teams}"
    state = initial_state(replay)
    if boards:
        yield render(state)
    for number, (event, state) in enumerate(positions(replay), start=1):
        yield f"\n{number}: {describe(event, teams)}"
        if boards and event.kind in {"place", "move"}:
            yield render(state)
    yield "\nfinal scores: " + " ".join(
        f"{seat}={score}" for seat, score in enumerate(replay.scores, start=1)
    )
    yield "points: " + " ".join(f"{seat}={p:g}" for seat, p in enumerate(replay.points, start=1))
