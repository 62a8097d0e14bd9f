"""The deadline: strategies that never return, post junk or fail still get a legal reply in time."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

import pytest

from client.clock import DEFAULT_MARGIN, ReplyClock, TimeLimits
from client.runner import NO_AUTOMATIC_FULL, SearchRunner
from client.session import GameSession
from protocol import InitialMap, PositionReply
from state.boardgen import random_geometry
from state.game import GameState, Move
from state.settings import get_setting
from strategies.base import Budget, Strategy
from strategies.registry import make_strategy
from tests.referee import Referee, as_board
from tests.test_client import LIMIT, MARGIN, assert_clean, run_game, session

RELEASE = threading.Event()


@pytest.fixture(autouse=True)
def release_stuck_threads() -> Iterator[None]:
    RELEASE.clear()
    yield
    RELEASE.set()  # let the abandoned search threads end


def spin() -> None:
    """Burn CPU until the test ends, ignoring every budget: the worst strategy there is."""
    while not RELEASE.is_set():
        sum(range(2000))


class NeverReturns(Strategy):
    name = "never-returns"

    def place(self, state: GameState, budget: Budget) -> int:
        spin()
        return -1

    def move(self, state: GameState, budget: Budget) -> Move | None:
        spin()
        return None


def overrun(budget: Budget, seconds: float) -> None:
    """Burn CPU until ``seconds`` past the deadline, ignoring ``budget.stop()``."""
    end = budget.deadline + seconds
    while time.monotonic() < end and not RELEASE.is_set():
        sum(range(2000))


class PostsThenOverruns(Strategy):
    """Posts greedy's choice at once, then returns only well after the deadline."""

    name = "posts-then-overruns"

    def __init__(self) -> None:
        super().__init__({"seed": 3})
        self.inner = make_strategy("greedy", {"seed": 3})
        self.posted: list[Move | int] = []  # placement cell, then moves

    def place(self, state: GameState, budget: Budget) -> int:
        self.posted.append(self.inner.place(state, budget))
        overrun(budget, 0.2)
        return -1

    def move(self, state: GameState, budget: Budget) -> Move | None:
        move = self.inner.move(state, budget)
        assert move is not None
        self.posted.append(move)
        overrun(budget, 0.2)
        return None


class Junk(Strategy):
    """Posts and returns illegal choices, or raises, by turns."""

    name = "junk"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def place(self, state: GameState, budget: Budget) -> int:
        budget.offer_placement(-5)
        return 10_000

    def move(self, state: GameState, budget: Budget) -> Move | None:
        self.calls += 1
        cell = state.stacks[state.to_move][0]
        budget.offer_move(Move(cell, 99, 5))
        if self.calls % 3 == 0:
            raise RuntimeError("strategy bug")
        if self.calls % 3 == 1:
            return Move(cell, 0, 6)
        return None


async def test_strategy_that_never_returns_still_answers_legally_in_time() -> None:
    referee = Referee(1, seed=11, time_limit=LIMIT)
    stuck = session(1, NeverReturns())
    sessions = [stuck] + [session(1, "greedy", seed=s) for s in (2, 3, 4)]
    result, summaries = await run_game(referee, sessions)
    assert_clean(result)
    replies = result.replies(1)
    assert len(replies) >= 4
    # The first two searches (placement, first move) were waited for until the
    # deadline, and not much longer (assert_clean checked the limit).
    for r in replies[:2]:
        assert r.elapsed >= LIMIT - MARGIN - 0.02
    assert summaries[0].fallbacks == len(replies)
    # A search that overran its deadline is abandoned to a fresh thread; once more
    # than ``max_abandoned`` still burn CPU the client starts no more, however long
    # the game (how many it started before depends on when each board came in).
    runner = stuck.runner
    assert 1 <= runner.abandoned_searches <= runner.max_abandoned + 1
    # At most max_abandoned + 2 searches were ever started: every later one was skipped.
    assert runner.skipped >= len(replies) - (runner.max_abandoned + 2)


async def test_best_move_so_far_is_sent_at_the_deadline() -> None:
    referee = Referee(1, seed=12, time_limit=LIMIT)
    strategy = PostsThenOverruns()
    # Room for every overrunning search: on a loaded machine the next board can
    # come while earlier ones still burn, and skipping searches is another test.
    hangs = GameSession(
        get_setting(1), strategy, TimeLimits(LIMIT, MARGIN), SearchRunner(max_abandoned=64)
    )
    sessions = [hangs] + [session(1, "greedy", seed=s) for s in (2, 3, 4)]
    result, _ = await run_game(referee, sessions)
    assert_clean(result)
    replies = result.replies(1)
    assert hangs.stats.best_so_far == len(replies)  # the placement included
    assert hangs.stats.fallbacks == 0
    state = hangs.state
    assert state is not None
    sent: list[Move | int] = []
    for r in replies:
        assert r.values is not None
        if r.kind == "position":
            sent.append(state.geometry.index(r.values[2], r.values[3]))
        else:
            _, _, x, y, split, direction = r.values
            sent.append(Move(state.geometry.index(x, y), split, direction))
    assert sent == strategy.posted


async def test_illegal_choices_and_strategy_errors_fall_back_to_legal_moves() -> None:
    referee = Referee(1, seed=13, time_limit=LIMIT)
    junk = session(1, Junk())
    sessions = [junk] + [session(1, "greedy", seed=s) for s in (2, 3, 4)]
    result, summaries = await run_game(referee, sessions)
    assert_clean(result)
    assert summaries[0].fallbacks == len(result.replies(1))
    # Nothing waited for a deadline: junk comes back at once.
    assert max(r.elapsed for r in result.replies(1)) < LIMIT - MARGIN


async def test_a_bug_in_the_client_itself_does_not_lose_the_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import client.session

    def broken_ingest(*args: object, **kwargs: object) -> None:
        raise RuntimeError("ingest bug")

    def broken_fallback(*args: object, **kwargs: object) -> None:
        raise KeyError("fallback bug")

    monkeypatch.setattr(client.session, "ingest", broken_ingest)
    monkeypatch.setattr(client.session, "fallback_move", broken_fallback)
    referee = Referee(3, seed=14, time_limit=LIMIT)
    sessions = [session(3, "greedy", seed=s) for s in range(1, 5)]
    result, _ = await run_game(referee, sessions)
    assert_clean(result)
    assert sum(len(result.replies(s)) for s in range(1, 5)) > 20


def test_default_margin_is_capped_for_short_limits() -> None:
    assert TimeLimits.for_limit(3.0).margin == DEFAULT_MARGIN
    assert TimeLimits.for_limit(0.2, wanted=0.25).margin == pytest.approx(0.05)
    assert TimeLimits.for_limit(0.2, 0.1).margin == 0.1
    with pytest.raises(ValueError, match="margin"):
        TimeLimits.for_limit(0.2, 0.3)


def test_a_reply_that_leaves_late_widens_the_seats_margin() -> None:
    limits = TimeLimits(3.0, 0.06)
    clock = ReplyClock(limits)
    assert clock.deadline(100.0) == pytest.approx(102.94)
    assert not clock.sent(102.94, 102.93)  # in time: nothing changes
    assert clock.sent(102.94, 102.95)  # 10 ms late: 20 ms more margin from now on
    assert clock.margin == pytest.approx(0.08)
    assert clock.deadline(200.0) == pytest.approx(202.92)
    assert not clock.sent(202.92, 202.925)  # later and less late: it never narrows
    assert clock.margin == pytest.approx(0.08)
    assert clock.sent(202.92, 204.0)  # very late: widened up to a quarter of the limit
    assert clock.margin == pytest.approx(0.75)


async def test_the_session_widens_its_margin_after_a_late_reply() -> None:
    """A board whose deadline had already passed when it was handed over (a stalled
    machine): the reply leaves late, and the seat's later deadlines come earlier."""
    setting = get_setting(1)
    board = GameState(setting, random_geometry(setting, 3))
    game = GameSession(setting, make_strategy("greedy", {"seed": 1}), TimeLimits(1.0, 0.06))
    message = InitialMap(code=1, id_package=1, player_id=1, map=as_board(board.wire_map()))
    reply = await game.respond(message, time.monotonic() - 2.0)
    assert isinstance(reply, PositionReply)
    assert game.clock.margin == pytest.approx(0.25)  # capped at a quarter of the limit
    game.close()


def test_clients_run_no_automatic_full_collections() -> None:
    """Full collections would stop a search and the event loop for up to 0.2 s on a big
    tree: a client's process runs young collections only, and a full one after a game."""
    before = gc.get_threshold()
    try:
        SearchRunner().close()
        assert gc.get_threshold()[2] >= NO_AUTOMATIC_FULL
        assert gc.get_threshold()[:2] == before[:2]
    finally:
        gc.set_threshold(*before)
