"""The playout kernels against the rules: every slide they play is legal in ``GameState``,
they pass exactly when the seat has no slide, they stop exactly at the end of the game,
their final owners, counts and scores are ``GameState``'s and the flood fill's, their
split guess is ``strategies.common.area_split``; with a cutoff they stop after that
many turns and value the position as a reference evaluation on ``GameState`` does;
and the compiled kernel plays the very same game as the pure-Python one from the same
stream of uniforms.

The fast kernel's tests skip where numba is missing (they must run in CI, where
``make test`` installs it); the last test hides numba to check the pure-Python
fallback.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.boardgen import random_geometry
from state.game import GameState, Move
from state.geometry import DIRECTION_KEYS, free_dirs
from state.playout import random_placement
from state.scoring import exact_score_of_sizes, flood_region_sizes, flood_scores
from state.settings import SETTINGS
from strategies.base import ConfigError
from strategies.common import area_split
from strategies.kernel import (
    PASS,
    SPLIT_RULES,
    KernelName,
    NoFastKernel,
    PlayoutPolicy,
    Trace,
    fast_available,
    get_kernel,
)
from strategies.opponents import RULES
from tests.boards import random_play
from tests.cli_support import battlesheep

needs_fast = pytest.mark.skipif(
    not fast_available(), reason="numba is not installed (pip install 'battlesheep[fast]')"
)

POLICIES = st.sampled_from(
    [
        PlayoutPolicy.uniform(),
        PlayoutPolicy(0.3, 3, "random"),
        PlayoutPolicy(0.3, 3, "area"),
        PlayoutPolicy(0.0, 2, "area"),
        PlayoutPolicy(0.3, 3, "safe"),
        PlayoutPolicy(1.0, 1, "safe"),
        # Seats split by learned rules (strategies.opponents), the others as the policy.
        PlayoutPolicy(0.3, 3, "random").with_rules({2: "half", 3: "one"}),
        PlayoutPolicy(0.3, 3, "safe").with_rules({2: "half", 3: "one"}),
        PlayoutPolicy.uniform().with_rules({1: "all-but-one", 4: "half"}),
        PlayoutPolicy(0.3, 3, "area").with_rules({1: "one", 2: "half", 3: "all-but-one"}),
        # Seats with random shares of their own (MctsParams.epsilon_other).
        PlayoutPolicy(0.3, 3, "random").with_epsilon([2, 4], 0.0),
        PlayoutPolicy(0.3, 3, "safe").with_epsilon([1, 3], 0.1).with_rules({2: "half"}),
        PlayoutPolicy(0.0, 3, "area").with_epsilon([3], 1.0),
    ]
)


CASES = given(
    game=st.sampled_from([1, 2, 4]),
    seed=st.integers(0, 2**31 - 1),
    plies=st.sampled_from([0, 5, 20, 40, 80]),
    policy=POLICIES,
)
"""Random positions of games 1, 2 and 4 (3 plays as 1 once its counts are drawn)."""
SETTINGS_40 = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def position(game: int, seed: int, plies: int) -> GameState:
    setting = SETTINGS[game]
    rng = random.Random(seed)
    state = GameState(setting, random_geometry(setting, seed))
    random_placement(state, rng)
    return random_play(state, rng, plies)


def stream(seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(50_000)]


def replay(
    state: GameState, trace: Trace, policy: PlayoutPolicy
) -> list[tuple[int, int, int | None]]:
    """Play ``trace`` on ``state`` by the rules, checking every turn: to the end, or
    with a cutoff that stopped it, exactly that many turns. Returns the splits of three
    or more that the policy chose (no seat rule): the count, the split, and the size
    the ``safe`` mode must play there (``safe_split``)."""
    chosen: list[tuple[int, int, int | None]] = []
    if trace.finished:
        assert trace.turns[-4:] == [(PASS, PASS, PASS)] * 4, "a game ends on four passes"
    else:
        assert policy.cutoff and len(trace.turns) == policy.cutoff, "stopped off the cutoff"
    for cell, dst, split in trace.turns:
        if state.is_terminal():
            assert cell == PASS, "the kernel played on after the end"
            continue
        if cell == PASS:
            assert not state.slides(), f"seat {state.to_move} passed with a slide"
            if state.done[state.to_move]:
                state.skip_turn()
            else:
                state.apply_pass()
            continue
        slides = {(c, d): t for c, d, t in state.slides()}
        count = state.sheep[cell]
        direction = next((d for (c, d), t in slides.items() if c == cell and t == dst), None)
        assert direction is not None, f"slide {cell}->{dst} is not legal for {state.to_move}"
        assert 1 <= split < count
        rule = SPLIT_RULES[policy.seat_splits[state.to_move]]
        if rule != "policy" and count > 2:
            assert split == RULES[rule](count), f"seat {state.to_move} did not split by {rule}"
        elif count > 2:
            forced = safe_split(state, cell, dst, count)
            chosen.append((count, split, forced))
            if policy.splits == "area":
                assert split == area_split(state, cell, dst)
            elif policy.splits == "safe":
                assert forced is None or split == forced, f"{count} split {split}, not {forced}"
        state.apply(Move(cell, split, direction))
    if trace.finished:
        assert state.is_terminal(), "the kernel stopped before the end"
    return chosen


def safe_split(state: GameState, cell: int, dst: int, count: int) -> int | None:
    """The split the ``safe`` mode must play, from the rules' side: one sheep where the
    destination has no free neighbour along any ray once taken, all but one where the
    source is left with none; None where any size may be drawn."""
    rays = state.geometry.rays
    owner = list(state.owner)
    owner[dst] = state.to_move  # taken by the slide
    if free_dirs(owner, rays[dst]) == 0:
        return 1
    if free_dirs(owner, rays[cell]) == 0:
        return count - 1
    return None


def evaluation(state: GameState) -> list[float]:
    """The evaluation of a playout stopped early, from the rules' side: the free cells
    in parts connected as slides move (eight ways); a seat's stack with a slide into a
    part (``GameState.slides`` of that seat) wants its sheep but one there; each part
    is shared out round by round (``shares``); a seat's cells grow by its shares (at
    most its movable sheep) and its score by what they add to a region of all its
    cells."""
    geometry, owner, sheep = state.geometry, state.owner, state.sheep
    part: dict[int, int] = {}
    sizes: list[int] = []
    for start in geometry.cells:
        if owner[start] == 0 and start not in part:
            todo = [start]
            part[start] = len(sizes)
            while todo:
                # Joined as slides move: eight ways, the first cell of each ray.
                for nb in (ray[0] for ray in geometry.rays[todo.pop()] if ray):
                    if owner[nb] == 0 and nb not in part:
                        part[nb] = len(sizes)
                        todo.append(nb)
            sizes.append(sum(1 for k in part.values() if k == len(sizes)))
    wants = [[0] * 5 for _ in sizes]
    movable = [0] * 5
    for p in (1, 2, 3, 4):
        for c in {c for c, _d, _t in state.slides(p)}:
            movable[p] += sheep[c] - 1
            for k in {part[ray[0]] for ray in geometry.rays[c] if ray and owner[ray[0]] == 0}:
                wants[k][p] += sheep[c] - 1
    gain = [0.0] * 5
    for k, size in enumerate(sizes):
        for p, got in shares(wants[k], size).items():
            gain[p] += got
    # From the owners alone (a hand-made position's union-find may be stale).
    scores = [exact_score_of_sizes(flood_region_sizes(geometry, owner, p)) for p in (1, 2, 3, 4)]
    for p in (1, 2, 3, 4):
        n = sum(1 for c in geometry.cells if owner[c] == p)
        scores[p - 1] += (n + min(gain[p], movable[p])) ** 1.25 - n**1.25
    return scores


def shares(wants: list[int], size: int) -> dict[int, float]:
    """``size`` cells dealt one per seat a round to the seats that want them, until
    each has what it wants or the cells run out (the last round split evenly)."""
    got = {p: 0.0 for p in range(1, 5) if wants[p] > 0}
    left = float(size)
    while left > 1e-12:
        hungry = [p for p in got if got[p] < wants[p] - 1e-12]
        if not hungry:
            break
        step = min(left / len(hungry), min(wants[p] - got[p] for p in hungry))
        for p in hungry:
            got[p] += step
        left -= step * len(hungry)
    return got


@SETTINGS_40
@CASES
def test_python_kernel_plays_by_the_rules_to_the_end(
    game: int, seed: int, plies: int, policy: PlayoutPolicy
) -> None:
    state = position(game, seed, plies)
    before = state.canonical()
    trace = get_kernel("python").play_stream(state, policy, stream(seed))
    assert state.canonical() == before, "the kernel changed the state it was given"
    replay(state, trace, policy)
    assert trace.owner == state.owner and trace.sheep == state.sheep
    assert trace.scores == pytest.approx(state.exact_scores())
    assert [round(s) for s in trace.scores] == flood_scores(state.geometry, state.owner)


@needs_fast
@SETTINGS_40
@CASES
def test_fast_kernel_plays_the_python_kernels_game(
    game: int, seed: int, plies: int, policy: PlayoutPolicy
) -> None:
    state = position(game, seed, plies)
    uniforms = stream(seed)
    expected = get_kernel("python").play_stream(state, policy, uniforms)
    got = get_kernel("fast").play_stream(state, policy, uniforms)
    assert got.turns == expected.turns
    assert got.owner == expected.owner and got.sheep == expected.sheep
    assert got.scores == pytest.approx(expected.scores, abs=1e-9)
    replay(state, got, policy)


CUT_CASES = given(
    game=st.sampled_from([1, 2, 4]),
    seed=st.integers(0, 2**31 - 1),
    plies=st.sampled_from([0, 5, 20, 40, 60]),
    policy=POLICIES,
    cutoff=st.sampled_from([1, 4, 8, 20, 50]),
)


@SETTINGS_40
@CUT_CASES
def test_python_kernel_stops_at_the_cutoff_and_evaluates(
    game: int, seed: int, plies: int, policy: PlayoutPolicy, cutoff: int
) -> None:
    """A playout with a cutoff plays that many legal turns and evaluates the position
    there, unless the game ends first: then it is scored exactly."""
    state = position(game, seed, plies)
    policy = replace(policy, cutoff=cutoff)
    trace = get_kernel("python").play_stream(state, policy, stream(seed))
    replay(state, trace, policy)
    assert trace.owner == state.owner and trace.sheep == state.sheep
    if trace.finished:
        assert len(trace.turns) <= cutoff, "played past the cutoff"
        assert trace.scores == pytest.approx(state.exact_scores())
    else:
        # (A game that ended without four passes yet is evaluated: to its exact score.)
        assert trace.scores == pytest.approx(evaluation(state))
        # Every seat keeps at least what it holds; sheep that can still move add to it.
        held = [state.exact_score(p) for p in (1, 2, 3, 4)]
        assert all(s >= h - 1e-9 for s, h in zip(trace.scores, held, strict=True))


@needs_fast
@SETTINGS_40
@CUT_CASES
def test_fast_kernel_stops_and_evaluates_as_the_python_kernel(
    game: int, seed: int, plies: int, policy: PlayoutPolicy, cutoff: int
) -> None:
    state = position(game, seed, plies)
    policy = replace(policy, cutoff=cutoff)
    uniforms = stream(seed)
    expected = get_kernel("python").play_stream(state, policy, uniforms)
    got = get_kernel("fast").play_stream(state, policy, uniforms)
    assert got.turns == expected.turns and got.finished == expected.finished
    assert got.owner == expected.owner and got.sheep == expected.sheep
    assert got.scores == pytest.approx(expected.scores, abs=1e-9)


def test_evaluation_counts_boxed_in_sheep_as_lost() -> None:
    """A stack that can no longer slide adds nothing; the free cells are shared out
    among the stacks that can reach them, one a round, as play does."""
    state = position(1, 11, 0)
    geometry = state.geometry
    assert state.sheep[state.stacks[1][0]] == 16
    # 60 free cells, four seats of 15 movable sheep: each gets its 15 (when all reach
    # one part of the free area, as at the start here).
    assert evaluation(state) == pytest.approx([16**1.25] * 4)
    # Seat 1 boxed in: every free first cell of its rays goes to seat 2.
    blocked = state.copy()
    cell = state.stacks[1][0]
    for ray in geometry.rays[cell]:
        if ray and blocked.owner[ray[0]] == 0:
            blocked.owner[ray[0]] = 2
            blocked.sheep[ray[0]] = 1
    assert not blocked.slides(1)
    assert evaluation(blocked)[0] == pytest.approx(1.0)
    trace = get_kernel("python").play_stream(blocked, PlayoutPolicy(cutoff=1), stream(2))
    assert not trace.finished
    assert trace.scores == pytest.approx(evaluation(blocked))
    assert trace.scores[0] == pytest.approx(1.0)


def test_shares_are_dealt_round_by_round() -> None:
    from strategies.kernel.pure import share_out

    for wants, size, expected in [
        ([0, 15, 15, 0, 0], 3, {1: 1.5, 2: 1.5}),
        ([0, 1, 15, 15, 0], 7, {1: 1.0, 2: 3.0, 3: 3.0}),
        ([0, 2, 3, 0, 4], 20, {1: 2.0, 2: 3.0, 4: 4.0}),
        ([0, 0, 0, 0, 0], 5, {}),
    ]:
        assert shares(wants, size) == pytest.approx(expected)
        gain = [0.0] * 5
        share_out(wants, size, gain)
        assert gain == pytest.approx([expected.get(p, 0.0) for p in range(5)])


@pytest.mark.parametrize("name", ["python", pytest.param("fast", marks=needs_fast)])
def test_safe_splits_force_the_plain_cases_and_draw_the_rest(name: KernelName) -> None:
    """``splits="safe"``: every split of a stack of three or more into a dead end is
    one sheep, off a stack left boxed in all but one (``replay`` checks each against
    the rules); both cases happen, and elsewhere the size is still drawn (more than
    one size off the same stack count)."""
    kernel = get_kernel(name)
    policy = PlayoutPolicy(0.3, 3, "safe")
    forced = drawn = 0
    sizes: dict[int, set[int]] = {}
    for seed in range(12):
        state = position(1 + seed % 2, seed, 0)
        trace = kernel.play_stream(state, policy, stream(seed))
        for count, split, must in replay(state.copy(), trace, policy):
            if must is None:
                drawn += 1
                sizes.setdefault(count, set()).add(split)
            else:
                forced += 1
    assert forced > 10 and drawn > 10, (forced, drawn)
    assert any(len(s) > 1 for s in sizes.values()), sizes


def test_seat_split_rules_are_named_and_checked() -> None:
    policy = PlayoutPolicy(0.3, 3, "area").with_rules({2: "half", 4: "all-but-one"})
    assert policy.seat_splits == (0, 0, 1, 0, 3)
    assert (policy.epsilon, policy.samples, policy.splits) == (0.3, 3, "area")
    # A rule for one seat leaves the others' (playout_split_rule gives every seat one).
    assert policy.with_rules({1: "one"}).seat_splits == (0, 2, 1, 0, 3)
    assert set(SPLIT_RULES[1:]) == set(RULES), "the kernels' rules are the opponent model's"
    with pytest.raises(ValueError, match="seat_splits"):
        PlayoutPolicy(seat_splits=(0, 0, 4, 0, 0))
    with pytest.raises(ValueError, match="cutoff must be 0"):
        PlayoutPolicy(cutoff=-1)
    with pytest.raises(ValueError, match="splits must be one of"):
        PlayoutPolicy(0.3, 3, "thirds")  # type: ignore[arg-type]
    assert [PlayoutPolicy(splits=m).split_code for m in ("random", "area", "safe")] == [0, 1, 2]
    with pytest.raises(ValueError, match="'thirds' for seat 2"):
        policy.with_rules({2: "thirds"})


def test_seat_random_shares_are_kept_and_checked() -> None:
    policy = PlayoutPolicy(0.3, 3, "area")
    assert policy.epsilons == (0.3,) * 5
    greedy = policy.with_epsilon([2, 4], 0.0)
    assert greedy.epsilons == (0.3, 0.3, 0.0, 0.3, 0.0)
    assert greedy.with_epsilon([1], 1.0).epsilons == (0.3, 1.0, 0.0, 0.3, 0.0)
    with pytest.raises(ValueError, match="no seat 5"):
        policy.with_epsilon([5], 0.1)
    for shares in [(0.3, 0.3, 0.3), (0.3, 0.3, 1.5, 0.3, 0.3), (0, float("nan"), 0, 0, 0)]:
        with pytest.raises(ValueError, match="seat_epsilon must be empty or 5 shares"):
            PlayoutPolicy(seat_epsilon=shares)


@pytest.mark.parametrize("name", ["python", pytest.param("fast", marks=needs_fast)])
def test_each_seat_plays_by_its_own_random_share(name: KernelName) -> None:
    """A policy giving every seat the policy's share plays the plain policy's game; a
    seat given its own share makes the first move a policy of that share for all
    makes (the seat to move is 2 or 3 here, so a share read off the wrong seat shows),
    and the shares differ in what they play."""
    kernel = get_kernel(name)
    differ = 0
    for seed in range(12):
        state = position(1, seed, 5 + seed % 2)
        assert state.to_move in (2, 3)
        uniforms = stream(seed)
        plain = PlayoutPolicy(0.3, 3, "random")
        same = plain.with_epsilon([1, 2, 3, 4], 0.3)
        assert kernel.play_stream(state, same, uniforms) == kernel.play_stream(
            state, plain, uniforms
        )
        mover, others = state.to_move, [p for p in (1, 2, 3, 4) if p != state.to_move]
        for share in (0.0, 1.0):
            mixed = replace(plain, epsilon=1.0 - share).with_epsilon([mover], share)
            assert mixed.epsilons[others[0]] == 1.0 - share
            alone = replace(plain, epsilon=share)
            first = kernel.play_stream(state, mixed, uniforms).turns[0]
            assert first == kernel.play_stream(state, alone, uniforms).turns[0]
        greedy = kernel.play_stream(state, replace(plain, epsilon=0.0), uniforms).turns[0]
        differ += greedy != kernel.play_stream(state, PlayoutPolicy.uniform(), uniforms).turns[0]
    assert differ >= 4


def test_kernel_starts_from_the_state_as_it_is() -> None:
    """A seat already known to be done passes; a finished game plays no slide."""
    state = position(1, 7, 400)
    assert state.is_terminal()
    trace = get_kernel("python").play_stream(state, PlayoutPolicy.uniform(), stream(1))
    assert trace.turns == [(PASS, PASS, PASS)] * 4
    assert trace.scores == pytest.approx(state.exact_scores())


@pytest.mark.parametrize("name", ["python", pytest.param("fast", marks=needs_fast)])
def test_uniform_policy_draws_every_slide_equally_often(name: KernelName) -> None:
    """The first slide of uniform playouts from one position: every legal slide, each
    about as often as the others (rejection draws plus the fallback scan are uniform)."""
    state = position(1, 3, 12)
    legal = {(c, t) for c, _d, t in state.slides()}
    assert len(legal) >= 6
    rng = random.Random(5)
    firsts: Counter[tuple[int, int]] = Counter()
    kernel = get_kernel(name)
    runs = 150 * len(legal)
    for _ in range(runs):
        uniforms = [rng.random() for _ in range(4000)]
        cell, dst, _split = kernel.play_stream(state, PlayoutPolicy.uniform(), uniforms).turns[0]
        firsts[(cell, dst)] += 1
    assert set(firsts) == legal
    # 150 expected each: a binomial's standard deviation is about 12.
    assert all(90 <= n <= 210 for n in firsts.values()), firsts


@pytest.mark.parametrize("name", ["python", pytest.param("fast", marks=needs_fast)])
def test_scores_are_a_finished_games_for_every_setting(name: KernelName) -> None:
    kernel = get_kernel(name)
    rng = random.Random(2)
    for game in (1, 2, 3, 4):
        state = position(game, game, 10)
        scores = kernel.scores(state, PlayoutPolicy(0.3, 3, "random"), rng)
        cells = SETTINGS[game].cells
        # Every cell ends owned or free; no seat loses what it holds.
        assert sum(scores) <= cells**1.25
        assert all(s >= state.exact_score(p) for s, p in zip(scores, (1, 2, 3, 4), strict=True))


def test_direction_order_is_the_geometrys() -> None:
    """The kernels index rays by ``DIRECTION_KEYS`` order, as ``Geometry.rays`` does."""
    from strategies.kernel import board_of

    state = position(1, 4, 0)
    board = board_of(state.geometry)
    for cell in state.geometry.cells:
        for k, d in enumerate(DIRECTION_KEYS):
            assert board.rays[8 * cell + k] == state.geometry.ray(cell, d)


def test_without_numba_everything_plays_on_the_python_kernel() -> None:
    """Hide numba: the default kernel is the Python one, asking for the fast one is a
    clear error, a search runs, and ``bench engine --kernel fast`` says what to install."""
    code = """
import sys
sys.modules["numba"] = None  # as if the [fast] extra were not installed
from strategies.kernel import default_kernel_name, get_kernel, NoFastKernel, ready_kernel
assert default_kernel_name() == "python"
assert ready_kernel().name == "python" and ready_kernel("fast").name == "python"
try:
    get_kernel("fast")
except NoFastKernel as exc:
    print("refused:", exc)
from strategies.base import Budget
from strategies.hybrid import HybridStrategy
from tests.test_kernel import position
state = position(1, 9, 10)
strategy = HybridStrategy({"seed": 1, "max_iterations": 300})
strategy.new_game(state.setting, state.to_move)
move = strategy.move(state, Budget.seconds(30))
assert move is not None and move in state.legal_moves()
print("iterations", int(strategy.mcts.iterations), "kernel", strategy.mcts.kernel.name)
from battlesheep.cli import main
sys.exit(main(["bench", "engine", "--kernel", "fast", "--seconds", "0.3"]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused: the fast playout kernel needs numba" in proc.stdout, proc.stderr
    assert "iterations 300 kernel python" in proc.stdout, proc.stderr
    assert proc.returncode == 2
    assert "battlesheep[fast]" in proc.stderr
    with pytest.raises(ValueError, match="playout kernel must be one of"):
        get_kernel("numpy")  # type: ignore[arg-type]
    assert issubclass(NoFastKernel, ConfigError)


@pytest.mark.parametrize("name", ["python", pytest.param("fast", marks=needs_fast)])
def test_bench_engine_prints_each_kernels_figures(name: str) -> None:
    proc = battlesheep("bench", "engine", "--kernel", name, "--seconds", "0.5")
    assert proc.returncode == 0, proc.stderr
    figures = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    assert figures["kernel"] == name
    for key in (
        "playouts_per_s",
        "state_playouts_per_s",
        "policy_playouts_per_s",
        "search_iterations_per_s",
    ):
        assert float(figures[key]) > 0, key
    assert float(figures["plies_per_playout"]) > 20
    assert ("fast_over_python" in figures) == (name == "fast")
    assert ("compiled_search_iterations_per_s" in figures) == (name == "fast")
    if name == "fast":
        assert float(figures["compiled_search_iterations_per_s"]) > 0


@needs_fast
def test_a_kernel_that_will_not_compile_ends_the_wait_for_it() -> None:
    """A failed compile (here made to fail) is logged and the Python kernel serves;
    ``wait_warm`` answers False at once instead of waiting out its timeout."""
    code = """
import time
from strategies.kernel import compiled_tree_ready, fast, ready_kernel, wait_warm
def broken():
    raise RuntimeError("no compiler here")
fast.compile_kernel = broken
start = time.monotonic()
print("warm", wait_warm(600), "tree", compiled_tree_ready(), "kernel", ready_kernel().name)
print("waited", round(time.monotonic() - start) < 60)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "warm False tree False kernel python" in proc.stdout, proc.stderr
    assert "waited True" in proc.stdout, proc.stderr
    assert "the fast playout kernel did not compile" in proc.stderr


@needs_fast
def test_an_in_process_game_starts_once_the_kernel_and_tree_are_compiled() -> None:
    """``tournament.runner.play_task`` in a fresh process (as a worker of ``bench
    strength`` is), with a seat that plays on the kernel: the referee starts only when
    the compiled tree is ready, so no game is played on the Python tree while numba
    compiles. The wait is in ``arena.local.play_local``, the one game loop, so ``demo``
    and the other benches have it too."""
    code = """
import arena.local as local
import tournament.runner as runner
from strategies.kernel import compiled_tree_ready
from tournament.schedule import GameTask
class Observed(local.Referee):
    async def play(self):
        print("ready at the start", compiled_tree_ready())
        return await super().play()
local.Referee = Observed
task = GameTask(
    index=0, game=1, seed=5, seats=(0, 1, 2, 3), names=("a", "b", "c", "d"),
    commands=("", "", "", ""), teams=(101, 102, 103, 104), time_limit=1.0,
    connect_timeout=30.0, log_dir="",
    strategies=(("flatmc", {"playouts": 1}),) + (("random", {}),) * 3,
)
result = runner.play_task(task)
print("moves", result.moves > 0, "late", sum(result.late), "illegal", sum(result.illegal))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert "ready at the start True" in proc.stdout, proc.stderr
    assert "moves True late 0 illegal 0" in proc.stdout, proc.stderr


@needs_fast
def test_a_game_of_players_off_the_kernel_compiles_nothing() -> None:
    """Four ``random`` seats never play on the kernel: ``play_local`` neither starts the
    compile nor waits for one."""
    code = """
import threading
from arena.local import play_local
from strategies.baselines import RandomStrategy
from strategies.kernel import compiled_tree_ready
game = play_local(1, 5, [RandomStrategy({"seed": s}) for s in range(4)], 1.0)
names = [t.name for t in threading.enumerate()]
print("moves", len(game.record.events) > 0, "tree", compiled_tree_ready(),
      "compiling", "kernel-warm-up" in names)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "moves True tree False compiling False" in proc.stdout, proc.stderr
