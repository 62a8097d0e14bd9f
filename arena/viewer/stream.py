"""One JSON event format for the viewer, from a live game and from a replay file.

The page renders the same messages whatever their source, so it needs no
rules of its own. Every message is a JSON object with a ``type``:

``start``  ``source`` ("live" or "replay"), ``name`` (replay file name or ""),
           ``game``, ``size``, ``seed``, ``teams`` (seat order),
           ``time_limit``, ``hidden`` (game 3: players do not see others'
           counts), ``map`` (the empty field, wire layout ``[x][y]``).
``turn``   ``n`` (1-based), ``seat``, ``kind`` place/move/pass/skip,
           ``outcome`` ok/late/illegal/absent/disconnect, ``x``, ``y``,
           ``split``, ``dir``, ``elapsed`` (seconds or null), ``to`` (the cell
           taken, ``[x, y]`` or null), ``cells`` (every cell that changed, as
           ``[x, y, owner, true count]``), ``scores``, ``regions`` (per seat,
           region sizes largest first) and ``to_move`` (next seat, null at the end).
``end``    ``scores``, ``exact_scores``, ``results`` (game 4: pair averages),
           ``points``, ``ranks``, ``stalled``.
``error``  ``message``: a replay the server could not read.

Counts are always the true ones; hiding them for a game-3 player's view is
the page's job, since it only depends on who owns each cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arena.referee import GameRecord
from arena.replay import Replay, ReplayEvent, initial_state, positions
from arena.results import GameResult, result_of
from state.game import GameState
from state.geometry import FREE
from state.scoring import ranks
from state.settings import PLAYERS

Message = dict[str, Any]


def start_message(
    state: GameState,
    seed: int,
    teams: Sequence[int],
    time_limit: float,
    source: str = "live",
    name: str = "",
) -> Message:
    """The game as it begins: ``state`` must not have any placement yet."""
    setting = state.setting
    return {
        "type": "start",
        "source": source,
        "name": name,
        "game": setting.game,
        "size": setting.size,
        "seed": seed,
        "teams": list(teams),
        "time_limit": time_limit,
        "hidden": setting.hidden_counts,
        "map": state.wire_map(),
    }


class TurnDiffer:
    """Turns the state after each event into a ``turn`` message with the cells that changed."""

    def __init__(self, state: GameState) -> None:
        self._owner = state.owner[:]
        self._sheep = state.sheep[:]
        self._number = 0

    def turn(self, event: ReplayEvent, state: GameState) -> Message:
        n = state.geometry.size
        cells: list[list[int]] = []
        taken: list[int] | None = None
        old_owner, old_sheep = self._owner, self._sheep
        for i, (owner, count) in enumerate(zip(state.owner, state.sheep, strict=True)):
            if owner != old_owner[i] or count != old_sheep[i]:
                x, y = divmod(i, n)
                cells.append([x, y, owner, count])
                if old_owner[i] == FREE:
                    taken = [x, y]
        self._owner, self._sheep = state.owner[:], state.sheep[:]
        self._number += 1
        return {
            "type": "turn",
            "n": self._number,
            "seat": event.seat,
            "kind": event.kind,
            "outcome": event.outcome,
            "x": event.x,
            "y": event.y,
            "split": event.split,
            "dir": event.dir,
            "elapsed": event.elapsed,
            "to": taken,
            "cells": cells,
            "scores": state.scores(),
            "regions": [sorted(state.region_sizes(p), reverse=True) for p in PLAYERS],
            "to_move": None if state.is_terminal() else state.to_move,
        }


def end_message(result: GameResult | Replay) -> Message:
    """From a game's result or a replay (both carry the end of the game)."""
    return {
        "type": "end",
        "scores": list(result.scores),
        "exact_scores": list(result.exact_scores),
        "results": list(result.results),
        "points": list(result.points),
        "ranks": result.ranks if isinstance(result, GameResult) else ranks(result.results),
        "stalled": result.stalled,
    }


def live_end_message(record: GameRecord) -> Message:
    return end_message(result_of(record))


def replay_messages(replay: Replay, name: str = "") -> list[Message]:
    """The whole stream of a recorded game; ReplayError if it does not replay."""
    state = initial_state(replay)
    messages = [
        start_message(
            state, replay.seed, replay.teams, replay.time_limit, source="replay", name=name
        )
    ]
    differ = TurnDiffer(state)
    for event, after in positions(replay):
        messages.append(differ.turn(event, after))
    messages.append(end_message(replay))
    return messages
