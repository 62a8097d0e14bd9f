"""One game seen from one seat, independent of the transport.

A transport (TCP here; WebSocket or MQTT later) decodes the server's frames
into messages and hands each to ``GameSession.respond`` with the time its last
byte arrived; the session brings its ``GameState`` up to date in place, runs
the strategy under the deadline and returns the reply message to send (or
None). It never touches a socket.

Own moves are not applied to the state when they are sent: the next board
shows whether the server took them (a late or rejected move is a skipped
turn), and ``state.observe.ingest`` explains the seat's own change like any
other seat's.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import TypeVar

from client.clock import ReplyClock, TimeLimits
from client.errors import ServerDataError
from client.fallback import PASS_DIRECTION, choose, fallback_move, fallback_placement
from client.runner import Outcome, SearchRunner, full_collection
from protocol import ClientMessage, GameOver, InitialMap, MoveReply, PositionReply, Turn
from protocol.messages import ServerMessage
from state.game import GameState, IllegalMoveError, Move
from state.observe import (
    IngestReport,
    ObservationError,
    ingest,
    mask_counts,
    placement_report,
    state_from_observation,
)
from state.scoring import exact_score_of_sizes
from state.settings import GameSetting
from strategies.base import Budget, Strategy

log = logging.getLogger(__name__)

R = TypeVar("R", PositionReply, MoveReply)


@dataclass
class SessionStats:
    placements: int = 0
    moves: int = 0  # legal moves sent
    passes: int = 0  # boards without a legal move, answered with the pass reply
    from_strategy: int = 0  # the strategy returned a legal choice in time
    best_so_far: int = 0  # the strategy was stopped; its posted best choice was sent
    fallbacks: int = 0  # nothing legal from the strategy: the fallback was sent
    superseded: int = 0  # boards not answered because a newer one was already in
    resyncs: int = 0  # boards that ingest could not explain and rebuilt the state from
    time_used: float = 0.0  # sum over replies of (reply ready - last byte in)
    max_turn_time: float = 0.0
    turn_times: list[float] = field(default_factory=list)
    figures: list[dict[str, float]] = field(default_factory=list)
    """Per move: the strategy's search figures (``Budget.info``) and ``time_used``."""


@dataclass(frozen=True, slots=True)
class GameSummary:
    game: int
    seat: int | None
    placements: int
    moves: int
    passes: int
    fallbacks: int
    time_used: float
    max_turn_time: float
    score: int | None
    team_score: float | None

    def line(self) -> str:
        seat = "?" if self.seat is None else str(self.seat)
        score = "unknown" if self.score is None else str(self.score)
        if self.team_score is not None:
            score += f" (team {self.team_score:g})"
        return (
            f"game {self.game} seat {seat}: {self.moves} moves played"
            f" ({self.fallbacks} fallbacks, {self.passes} passes),"
            f" {self.time_used:.2f} s used (max {self.max_turn_time * 1000:.0f} ms per reply),"
            f" final score {score} as far as known"
        )


class GameSession:
    """Messages in, replies out, for one seat of one game."""

    def __init__(
        self,
        setting: GameSetting,
        strategy: Strategy,
        limits: TimeLimits | None = None,
        runner: SearchRunner | None = None,
    ) -> None:
        self.setting = setting
        self.strategy = strategy
        self.limits = limits or TimeLimits()
        self.clock = ReplyClock(self.limits)
        self.runner = runner or SearchRunner()
        self.seat: int | None = None
        self.state: GameState | None = None
        self.placed = False
        self.finished = False
        self.stats = SessionStats()
        self._last_move: Move | None = None

    @property
    def expects_initial_map(self) -> bool:
        """Whether the next board frame from a (re)connection is an initial map."""
        return not self.placed

    # ------------------------------------------------------------- messages
    async def respond(self, message: ServerMessage, received_at: float) -> ClientMessage | None:
        """The reply to ``message``, whose last byte arrived at ``received_at`` (monotonic)."""
        if isinstance(message, GameOver):
            self._game_over(message)
            return None
        try:
            if isinstance(message, InitialMap):
                return await self._initial_map(message, received_at)
            return await self._turn(message, received_at)
        except ServerDataError:
            raise
        except Exception as exc:  # our own bug: answer from a fresh state rather than not at all
            log.error(
                "internal error on frame %s (%r); answering from the board alone",
                message.id_package,
                exc,
            )
            log.debug("internal error", exc_info=True)
            try:
                return self._emergency_reply(message)
            except ObservationError as bad:
                raise ServerDataError(
                    f"frame {message.id_package} is no board of this game: {bad}"
                ) from None

    def _emergency_reply(self, message: InitialMap | Turn) -> ClientMessage:
        """A legal reply computed from the message alone, with nothing that could have broken."""
        if isinstance(message, InitialMap):
            state = state_from_observation(
                self.setting, message.map, None, message.player_id, to_move=message.player_id
            )
            self.placed = True
            cells = state.initial_positions()
            x, y = state.geometry.xy(cells[0]) if cells else (0, 0)
            return PositionReply(id_package=message.id_package, x=x, y=y)
        seat = self.seat or 1
        sheep = mask_counts(self.setting, message.map, message.sheep, seat)
        state = state_from_observation(self.setting, message.map, sheep, seat, to_move=seat)
        moves = state.legal_moves(seat)
        if moves:
            x, y, split, direction = state.move_to_wire(moves[0])
        else:
            x, y = state.geometry.xy(state.stacks[seat][0]) if state.stacks[seat] else (0, 0)
            split, direction = 1, PASS_DIRECTION
        return MoveReply(id_package=message.id_package, x=x, y=y, split=split, direction=direction)

    def absorb(self, message: ServerMessage) -> None:
        """A message a newer one already supersedes: keep what it says, answer nothing."""
        if isinstance(message, GameOver):
            self._game_over(message)
        elif isinstance(message, InitialMap):
            self._start(message)
            log.info("initial map %s superseded by a newer frame: not answered", message.id_package)
        else:
            self.stats.superseded += 1
            log.info("board %s superseded by a newer one: not answered", message.id_package)

    def close(self) -> None:
        self.runner.close()
        self.strategy.close()

    def summary(self) -> GameSummary:
        s = self.stats
        score: int | None = None
        team: float | None = None
        if self.state is not None and self.seat is not None and self.state.placing:
            if self.finished and self.placed:
                # The game ended with no board after the initial map: the seat was shut
                # in from its first turn (a seat without a move is sent nothing) and never
                # moved. Whatever cell the server took (ours, or a random one for a refused
                # placement), the seat ends with that one cell; its partner's is unknown.
                score = round(exact_score_of_sizes([1]))
        elif self.state is not None and self.seat is not None:
            final = self.state.copy()
            if self._last_move is not None:
                # Checked legal on this state when sent; the server may still have refused it.
                with contextlib.suppress(IllegalMoveError):
                    final.apply(self._last_move)
            score = final.score(self.seat)
            partner = self.setting.partner(self.seat)
            if partner is not None:
                team = (final.exact_score(self.seat) + final.exact_score(partner)) / 2
        return GameSummary(
            game=self.setting.game,
            seat=self.seat,
            placements=s.placements,
            moves=s.moves,
            passes=s.passes,
            fallbacks=s.fallbacks,
            time_used=s.time_used,
            max_turn_time=s.max_turn_time,
            score=score,
            team_score=None if team is None else round(team, 2),
        )

    # ------------------------------------------------------------ the steps
    def _start(self, message: InitialMap) -> GameState:
        seat = message.player_id
        try:
            state = state_from_observation(
                self.setting, message.map, None, viewer=seat, to_move=seat
            )
        except ObservationError as exc:
            raise ServerDataError(
                f"the initial map is no board of game {self.setting.game}: {exc}"
            ) from None
        cells = len(state.geometry.cells)
        if cells != self.setting.cells:
            # No length on the wire: a bigger board read at this setting's size is cut to
            # N x N ints. Its cell count tells: is the server playing another setting?
            raise ServerDataError(
                f"the initial map has {cells} playing cells, but game {self.setting.game} is "
                f"played on {self.setting.cells} ({self.setting.size}x{self.setting.size}): "
                "is the server playing another setting (--game)?"
            )
        if seat != self.seat:
            if self.seat is not None:
                log.warning("the server moved this client from seat %s to %s", self.seat, seat)
            self.seat = seat
            self.strategy.new_game(self.setting, seat)
        self.state = state
        self._last_move = None
        self._observe(placement_report(state))
        return state

    def _observe(self, report: IngestReport) -> None:
        """Tell the strategy what the board showed; its bug must not cost the turn."""
        assert self.state is not None
        try:
            self.strategy.observe(self.state, report)
        except Exception as exc:
            log.error("strategy %s failed to observe the board (%r)", self.strategy.name, exc)
            log.debug("observe failure", exc_info=True)

    async def _initial_map(self, message: InitialMap, received_at: float) -> PositionReply:
        state = self._start(message)
        seat = message.player_id
        deadline = self.clock.deadline(received_at)
        cells = state.initial_positions()
        if not cells:
            # No free border cell: nothing is legal; any well-formed reply is as good.
            log.warning("initial map %s has no free border cell", message.id_package)
            self.placed = True
            return self._finish_reply(
                PositionReply(id_package=message.id_package, x=0, y=0), received_at
            )
        fallback = fallback_placement(state, cells)
        budget = Budget(deadline)
        copy = state.copy()
        outcome: Outcome[int | None] = await self.runner.run(
            lambda: self.strategy.place(copy, budget), budget
        )
        legal = set(cells)
        cell, source = choose(self.strategy.name, outcome, budget.best_placement, fallback, legal)
        self._count(source)
        x, y = state.geometry.xy(cell)
        self.placed = True
        self.stats.placements += 1
        spent = time.monotonic() - received_at
        log.info(
            "seat %s places on (%s, %s) [%s] in %.0f ms%s",
            seat,
            x,
            y,
            source,
            spent * 1000,
            _figures(budget),
        )
        return self._finish_reply(
            PositionReply(id_package=message.id_package, x=x, y=y), received_at, deadline
        )

    async def _turn(self, message: Turn, received_at: float) -> MoveReply:
        state, seat = self.state, self.seat
        if state is None or seat is None:
            raise ServerDataError(
                f"board {message.id_package} arrived before any initial map: the seat is unknown"
            )
        self.placed = True
        self._last_move = None
        self._observe(self._ingest(state, seat, message))
        deadline = self.clock.deadline(received_at)
        legal_moves = state.legal_moves(seat)
        if not legal_moves:
            # The course server sends no board to a seat without a move; one that
            # does ignores the reply. Answer at once with a well-formed move that
            # cannot be legal here (the seat has none), so it cannot change anything.
            self.stats.passes += 1
            stacks = state.stacks[seat]
            x, y = state.geometry.xy(stacks[0]) if stacks else (0, 0)
            log.info("turn %s: seat %s has no legal move; pass reply", message.id_package, seat)
            return self._finish_reply(
                MoveReply(
                    id_package=message.id_package, x=x, y=y, split=1, direction=PASS_DIRECTION
                ),
                received_at,
            )
        fallback = fallback_move(state, legal_moves)
        budget = Budget(deadline)
        copy = state.copy()
        outcome = await self.runner.run(lambda: self.strategy.move(copy, budget), budget)
        move, source = choose(
            self.strategy.name, outcome, budget.best_move, fallback, set(legal_moves)
        )
        self._count(source)
        self._last_move = move
        self.stats.moves += 1
        x, y, split, direction = state.move_to_wire(move)
        spent = time.monotonic() - received_at
        self.stats.figures.append({**budget.info, "time_used": spent})
        log.info(
            "turn %s (id %s): move %s from (%s, %s) dir %s [%s] in %.0f ms (of %.0f)%s",
            self.stats.moves,
            message.id_package,
            split,
            x,
            y,
            direction,
            source,
            spent * 1000,
            (deadline - received_at) * 1000,
            _figures(budget),
        )
        return self._finish_reply(
            MoveReply(id_package=message.id_package, x=x, y=y, split=split, direction=direction),
            received_at,
            deadline,
        )

    def _ingest(self, state: GameState, seat: int, message: Turn) -> IngestReport:
        """Bring the state up to date with the board (game 3: others' counts masked)."""
        sheep = mask_counts(self.setting, message.map, message.sheep, seat)
        try:
            report = ingest(state, message.map, sheep, seat)
        except ObservationError as exc:
            raise ServerDataError(
                f"board {message.id_package} is no board of this game: {exc}"
            ) from None
        except Exception as exc:  # our own bug: rebuild rather than lose the turn
            log.error("ingest failed (%r); rebuilding the state from the board", exc)
            log.debug("ingest failure", exc_info=True)
            try:
                state.assign(
                    state_from_observation(self.setting, message.map, sheep, seat, to_move=seat)
                )
            except ObservationError as exc2:
                raise ServerDataError(
                    f"board {message.id_package} is no board of this game: {exc2}"
                ) from None
            report = IngestReport(resynced=True, reason="ingest failed")
        if report.resynced:
            self.stats.resyncs += 1
        return report

    def _count(self, source: str) -> None:
        s = self.stats
        if source == "strategy":
            s.from_strategy += 1
        elif source == "fallback":
            s.fallbacks += 1
        else:
            s.best_so_far += 1

    def _finish_reply(self, reply: R, received_at: float, deadline: float | None = None) -> R:
        """Count the reply's time; with the ``deadline`` it was given, let the clock widen
        the margin if it leaves late."""
        now = time.monotonic()
        spent = now - received_at
        if deadline is not None and self.clock.sent(deadline, now):
            log.info(
                "reply %.1f ms past its deadline: the margin is now %.1f ms",
                (now - deadline) * 1000,
                self.clock.margin * 1000,
            )
        s = self.stats
        s.time_used += spent
        s.max_turn_time = max(s.max_turn_time, spent)
        s.turn_times.append(spent)
        return reply

    def _game_over(self, message: GameOver) -> None:
        self.finished = True
        log.info("game over (id %s)", message.id_package)
        full_collection()


def _figures(budget: Budget) -> str:
    """The strategy's search figures for the turn's log line."""
    if not budget.info:
        return ""
    return " " + " ".join(f"{k}={v:g}" for k, v in budget.info.items())
