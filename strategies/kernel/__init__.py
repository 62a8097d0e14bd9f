"""The playout kernel: throw-away random play from a tree leaf to the end of the game.

The incremental ``GameState`` (union-find, undo log, Zobrist hash) is what the tree
and the client need; below the tree, thousands of playouts per second need none of
it. A kernel copies the leaf position once into flat arrays, plays to the end with
no undo and no hashing, and scores the final owners by one flood fill.

Two kernels do the same thing, choice for choice:

- ``python``: plain Python over flat lists (``strategies.kernel.pure``), always there;
- ``fast``: the same loops compiled by numba (``strategies.kernel.fast``), the
  optional extra ``battlesheep[fast]``; it compiles on first use (cached on disk),
  and ``warm_up`` does that in the background while the Python kernel serves.

Both consume one stream of uniform numbers in [0, 1) the same way, so with the same
stream they play the same game (``play_stream``): the property tests hold them to
each other and to ``GameState``.

The policy (``PlayoutPolicy``): with probability ``epsilon`` a uniformly random
slide, else the best of ``samples`` uniformly drawn slides by a cheap key (room at
the destination, own cells next to it, no stack stranded); the split (``splits``)
uniformly random, the area guess (``strategies.common.area_split``), or ``safe``:
uniformly random except where a size is plainly best, one sheep into a destination
with no free direction and all but one off a source left with none, the two cases
in which a random size strands sheep for good. ``epsilon=1`` is uniformly random
play. A seat can be given a fixed split rule instead
(``seat_splits``: in half, one sheep, all but one), the rule the opponent model has
seen it follow (``strategies.opponents``), and a random share of its own
(``seat_epsilon``: the searching seat's team playing as ``epsilon`` says and the other
seats greedier or more random, ``MctsParams.epsilon_other``).

A playout can stop early (``cutoff``: the turns it plays before the position is
evaluated; 0 plays to the end). The evaluation (``estimated_scores`` in both
kernels) is a territory count: the free cells in parts connected as slides move
(eight ways, ``Board.around``); each seat wants, in each part, the sheep (all but
one) of its stacks that can slide into it; a part is dealt out as play deals it, one
cell per seat a round, a seat that wants fewer than its share leaving the rest to
the others; a seat's score is its exact score now plus what its share of cells (at
most its movable sheep) adds to a region of all its cells. A stack boxed in for good
adds nothing: its sheep are lost, as at the end. It lost to full playouts in every
screen (the README's "Leaf evaluation"): off by default, the place where a better
evaluation would go.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol, get_args

from state.game import GameState
from state.geometry import Geometry
from state.regions import region_value
from strategies.base import ConfigError

log = logging.getLogger(__name__)

KernelName = Literal["python", "fast"]
KERNELS: tuple[KernelName, ...] = ("python", "fast")

PASS = -1
"""A pass in a trace (``play_stream``)."""

# The cheap key's weights of a greedy playout move (see the module docstring).
ROOM_CAP = 3
NEIGHBOUR_BONUS = 0.7
STRANDED_COST = 3.0


SplitRuleName = Literal["policy", "half", "one", "all-but-one"]
SPLIT_RULES: tuple[str, ...] = get_args(SplitRuleName)
"""A seat's split in a playout (``PlayoutPolicy.seat_splits`` holds the index): the
policy's own, or one of the rules of ``strategies.opponents.RULES``."""
NO_SEAT_SPLITS = (0, 0, 0, 0, 0)

SplitMode = Literal["random", "area", "safe"]
SPLIT_MODES: tuple[str, ...] = get_args(SplitMode)
"""How a playout splits a stack of three or more without a seat rule
(``PlayoutPolicy.splits``; the compiled code takes the index, ``split_code``)."""


@dataclass(frozen=True, slots=True)
class PlayoutPolicy:
    """How a playout picks its slides and splits (see the module docstring).

    ``seat_splits[seat]`` (index 0 unused) is an index of ``SPLIT_RULES``: 0 splits as
    the policy does, 1 in half (``count // 2``), 2 one sheep, 3 all but one.
    ``cutoff`` > 0: the playout stops after that many turns (passes included) and
    the position is evaluated instead of scored (see the module docstring).
    ``seat_epsilon``: each seat's random share (index 0 unused), or empty: ``epsilon``
    for every seat."""

    epsilon: float = 1.0
    samples: int = 1
    splits: SplitMode = "random"
    seat_splits: tuple[int, int, int, int, int] = NO_SEAT_SPLITS
    cutoff: int = 0
    seat_epsilon: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.splits not in SPLIT_MODES:
            raise ValueError(f"splits must be one of {SPLIT_MODES}, not {self.splits!r}")
        if self.cutoff < 0:
            raise ValueError(f"cutoff must be 0 (play to the end) or more, not {self.cutoff}")
        if len(self.seat_splits) != 5 or not all(
            0 <= r < len(SPLIT_RULES) for r in self.seat_splits
        ):
            raise ValueError(
                f"seat_splits must be 5 indices of {SPLIT_RULES}, not {self.seat_splits!r}"
            )
        if self.seat_epsilon and (
            len(self.seat_epsilon) != 5 or not all(0 <= e <= 1 for e in self.seat_epsilon)
        ):
            raise ValueError(
                "seat_epsilon must be empty or 5 shares in [0, 1] (index 0 unused), "
                f"not {self.seat_epsilon!r}"
            )

    @classmethod
    def uniform(cls) -> PlayoutPolicy:
        """Uniformly random slides and splits."""
        return cls(1.0, 1, "random")

    @property
    def split_code(self) -> int:
        """``splits`` as the compiled code takes it: its index in ``SPLIT_MODES``."""
        return SPLIT_MODES.index(self.splits)

    def with_rules(self, rules: Mapping[int, str]) -> PlayoutPolicy:
        """This policy with ``rules`` ({seat: a name of ``SPLIT_RULES``}) as the
        seats' splits; the other seats keep theirs."""
        codes = list(self.seat_splits)
        for seat, name in rules.items():
            if name not in SPLIT_RULES or not 1 <= seat <= 4:
                raise ValueError(f"no split rule {name!r} for seat {seat} (rules: {SPLIT_RULES})")
            codes[seat] = SPLIT_RULES.index(name)
        return replace(self, seat_splits=(codes[0], codes[1], codes[2], codes[3], codes[4]))

    @property
    def epsilons(self) -> tuple[float, ...]:
        """Each seat's random share, index 0 unused (``seat_epsilon``, else ``epsilon``
        for all)."""
        return self.seat_epsilon or (self.epsilon,) * 5

    def with_epsilon(self, seats: Iterable[int], epsilon: float) -> PlayoutPolicy:
        """This policy with ``epsilon`` as the random share of ``seats``; the other
        seats keep theirs."""
        shares = list(self.epsilons)
        for seat in seats:
            if not 1 <= seat <= 4:
                raise ValueError(f"no seat {seat} (seats are 1-4)")
            shares[seat] = epsilon
        return replace(self, seat_epsilon=tuple(shares))


@dataclass(frozen=True, slots=True)
class Trace:
    """What a playout played (``play_stream``): one entry per turn, (cell, dst, split)
    for a slide and (PASS, PASS, PASS) for a turn without a move; the final owners
    and counts (wire cells, no sentinel) and each seat's exact score, or with a
    ``cutoff`` that stopped the game early (``finished`` false) the position there
    and its evaluation."""

    turns: list[tuple[int, int, int]]
    owner: list[int]
    sheep: list[int]
    scores: list[float]
    finished: bool = True


class PlayoutKernel(Protocol):
    name: KernelName

    def scores(self, state: GameState, policy: PlayoutPolicy, rng: random.Random) -> list[float]:
        """Play ``state`` (left as it is) to the end; each seat's exact score."""
        ...

    def play_stream(
        self, state: GameState, policy: PlayoutPolicy, stream: Sequence[float]
    ) -> Trace:
        """Play ``state`` to the end taking the uniforms from ``stream`` (tests)."""
        ...


class Board:
    """A geometry as the kernels read it: flat tables, cell ``n`` an obstacle sentinel.

    ``first[8 * cell + k]`` is the first cell of the ray of direction index ``k``
    (the sentinel when the ray is empty), ``rays[8 * cell + k]`` the whole ray;
    ``around[cell]`` the cells a slide can enter first (the 8-connection of the free
    area, where ``neighbours`` is the 4-connection of regions).
    """

    __slots__ = ("around", "cells", "first", "n", "neighbours", "pow", "rays")

    def __init__(self, geometry: Geometry) -> None:
        n = geometry.size * geometry.size
        self.n = n
        self.cells = geometry.cells
        self.rays: list[tuple[int, ...]] = [r for cell_rays in geometry.rays for r in cell_rays]
        self.first: list[int] = [r[0] if r else n for r in self.rays]
        self.neighbours = geometry.neighbours
        self.around: list[tuple[int, ...]] = [
            tuple(r[0] for r in cell_rays if r) for cell_rays in geometry.rays
        ]
        self.pow: list[float] = [region_value(s) for s in range(len(geometry.cells) + 1)]


@functools.lru_cache(maxsize=64)
def board_of(geometry: Geometry) -> Board:
    return Board(geometry)


class NoFastKernel(ConfigError):
    """The fast kernel was asked for but numba is not installed."""


def fast_available() -> bool:
    """Whether numba is importable (the ``fast`` extra is installed)."""
    from strategies.kernel import fast

    return fast.AVAILABLE


def get_kernel(name: KernelName) -> PlayoutKernel:
    """The kernel of that name; ``fast`` compiles now if it has not (see ``warm_up``)."""
    if name == "python":
        from strategies.kernel.pure import PythonKernel

        return PythonKernel()
    if name == "fast":
        from strategies.kernel import fast

        if not fast.AVAILABLE:
            raise NoFastKernel(
                "the fast playout kernel needs numba: pip install 'battlesheep[fast]'"
            )
        return fast.FastKernel()
    raise ValueError(f"playout kernel must be one of {', '.join(KERNELS)}, not {name!r}")


def default_kernel_name() -> KernelName:
    """The fastest kernel installed."""
    return "fast" if fast_available() else "python"


_warm = threading.Event()
# Set once the compiled tree (strategies.kernel.tree) has compiled after the kernel,
# or failed to, or the kernel failed to (``_tree_compiled`` and ``_warm`` tell which):
# nothing more will compile.
_tree_warm = threading.Event()
_tree_compiled = False
_warm_lock = threading.Lock()
_warm_started = False
_warned = threading.Event()


def _forked() -> None:
    """A child forked while the parent compiled has no compiling thread: start again."""
    global _warm_started
    if not _warm.is_set() or not _tree_warm.is_set():
        _warm_started = False


os.register_at_fork(after_in_child=_forked)


def warm_up(background: bool = True) -> None:
    """Compile the fast kernel (or load it from numba's cache), in a daemon thread by
    default; ``ready_kernel`` serves the Python kernel until it is done. Without numba,
    nothing to do."""
    global _warm_started
    if not fast_available():
        return
    with _warm_lock:
        if _warm_started:
            if not background:
                _warm.wait()
            return
        _warm_started = True

    def compile_now() -> None:
        global _tree_compiled
        from strategies.kernel import fast, tree

        try:
            fast.compile_kernel()
        except Exception:  # a kernel that will not compile must not stop the agent
            log.exception("the fast playout kernel did not compile; playing on the Python one")
            _tree_warm.set()  # no tree without the kernel: whoever waits stops waiting
            return
        _warm.set()
        # The playouts serve from here on; the tree compiles after them.
        try:
            tree.compile_tree()
            _tree_compiled = True
        except Exception:
            log.exception("the compiled tree did not compile; searching on the Python tree")
        _tree_warm.set()

    if background:
        threading.Thread(target=compile_now, name="kernel-warm-up", daemon=True).start()
    else:
        compile_now()


def ready_kernel(preferred: KernelName | None = None) -> PlayoutKernel:
    """The kernel to play with now: ``preferred`` (default: the fastest installed), but
    the Python kernel while the fast one is still compiling (started here if needed)."""
    name = preferred or default_kernel_name()
    if name == "fast" and not fast_available():
        if not _warned.is_set():
            _warned.set()
            log.warning("no numba here: the playouts run on the Python kernel")
        return get_kernel("python")
    if name == "fast":
        if _warm.is_set():
            return get_kernel("fast")
        warm_up()
        return get_kernel("python")
    return get_kernel(name)


def compiled_tree_ready() -> bool:
    """Whether the compiled tree can search now (compiled after the fast kernel by
    ``warm_up``)."""
    return _tree_warm.is_set() and _tree_compiled


def wait_warm(timeout: float | None = None, start: bool = True) -> bool:
    """Block until the fast kernel and the compiled tree are compiled, or failed to
    (True when the kernel compiled), or ``timeout`` seconds pass (False), or there is
    nothing to compile (no numba: True at once). Starts the compile if needed; with
    ``start=False`` only waits for one already started (``warm_up``, which the
    strategies that play on the kernel call when made), and True at once if none was."""
    if not fast_available():
        return True
    if start:
        warm_up()
    else:
        with _warm_lock:
            if not _warm_started:
                return True
    return _tree_warm.wait(timeout) and _warm.is_set()
