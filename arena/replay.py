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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import msgpack

from arena.referee import Event, GameRecord
from state.game import GameState, IllegalMoveError, Move
from state.geometry import Geometry
from state.render import SEAT_MARKS, render
from state.settings import get_setting

FORMAT = "battlesheep-replay"
VERSION = 1


class ReplayError(ValueError):
    """A replay file that cannot be read or does not replay to its recorded end."""


def replay_of(record: GameRecord, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "game": record.setting.game,
        "seed": record.seed,
        "teams": list(record.teams),
        "size": record.setting.size,
        "time_limit": record.time_limit,
        "initial_map": record.initial_map,
        "events": [_event_dict(e) for e in record.events],
        "final_map": result["final_map"],
        "final_sheep": result["final_sheep"],
        "scores": result["scores"],
        "exact_scores": result["exact_scores"],
        "results": result["results"],
        "points": result["points"],
        "stalled": result["stalled"],
    }


def _event_dict(event: Event) -> dict[str, Any]:
    d = asdict(event)
    d["dir"] = d.pop("direction")
    d["reply"] = list(event.reply) if event.reply is not None else None
    return d


def write_replay(path: str | Path, record: GameRecord, result: dict[str, Any]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(msgpack.packb(replay_of(record, result), use_bin_type=True))
    return p


def read_replay(path: str | Path) -> dict[str, Any]:
    try:
        data = msgpack.unpackb(Path(path).read_bytes(), raw=False, strict_map_key=False)
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise ReplayError(f"{path} is not a msgpack replay: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReplayError(f"{path} is not a battlesheep replay")
    if data.get("version") != VERSION:
        raise ReplayError(f"{path}: replay version {data.get('version')} is not {VERSION}")
    return data


def initial_state(replay: dict[str, Any]) -> GameState:
    setting = get_setting(int(replay["game"]))
    n = setting.size
    board = replay["initial_map"]
    playable = [board[x][y] != -1 for x in range(n) for y in range(n)]
    return GameState(setting, Geometry(n, playable))


def positions(replay: dict[str, Any]) -> Iterator[tuple[dict[str, Any], GameState]]:
    """Each event with the state right after it (the same object, changed in place)."""
    state = initial_state(replay)
    n = state.geometry.size
    for number, event in enumerate(replay["events"], start=1):
        kind = event["kind"]
        try:
            if state.to_move != event["seat"]:
                raise IllegalMoveError(f"seat {event['seat']} is not to move")
            if kind == "place":
                state.place(event["x"] * n + event["y"])
            elif kind == "move":
                state.apply(Move(event["x"] * n + event["y"], event["split"], event["dir"]))
            elif kind == "pass":
                state.apply_pass()
            elif kind == "skip":
                state.skip_turn()
            else:
                raise IllegalMoveError(f"unknown event kind {kind!r}")
        except IllegalMoveError as exc:
            raise ReplayError(f"event {number} does not replay: {exc}") from None
        yield event, state
    if state.wire_map() != replay["final_map"] or state.wire_sheep() != replay["final_sheep"]:
        raise ReplayError("the events do not replay to the recorded final board")


def final_state(replay: dict[str, Any]) -> GameState:
    state = initial_state(replay)
    for _, state in positions(replay):  # noqa: B007 - the last position is the answer
        pass
    return state


def describe(event: dict[str, Any], teams: list[int]) -> str:
    seat, kind, outcome = event["seat"], event["kind"], event["outcome"]
    who = f"seat {seat} ({SEAT_MARKS[seat]}, team {teams[seat - 1]})"
    took = f" in {event['elapsed'] * 1000:.0f} ms" if event.get("elapsed") is not None else ""
    if kind == "place":
        how = "" if outcome == "ok" else f" (random cell: {outcome})"
        return f"{who} places at ({event['x']},{event['y']}){how}{took}"
    if kind == "move":
        return (
            f"{who} moves {event['split']} from ({event['x']},{event['y']}) "
            f"dir {event['dir']}{took}"
        )
    if kind == "pass":
        return f"{who} has no move"
    return f"{who} loses the turn: {outcome}{took}"


def replay_lines(replay: dict[str, Any], boards: bool = True) -> Iterator[str]:
    """The game turn by turn, as text."""
    teams = replay["teams"]
    yield f"game {replay['game']}, seed {replay['seed']}, teams {teams}"
    state = initial_state(replay)
    if boards:
        yield render(state)
    for number, (event, state) in enumerate(positions(replay), start=1):
        yield f"\n{number}: {describe(event, teams)}"
        if boards and event["kind"] in {"place", "move"}:
            yield render(state)
    yield "\nfinal scores: " + " ".join(
        f"{seat}={score}" for seat, score in enumerate(replay["scores"], start=1)
    )
    yield "points: " + " ".join(f"{seat}={p:g}" for seat, p in enumerate(replay["points"], start=1))
