"""What the other seats' splits have looked like this game, for the tree's use.

Most agents of this course split by one fixed rule: in half (the reference agent,
the samples, ``uct``), one sheep, or all but one. Where the counts are visible
(games 1, 2 and 4) each move of another seat shows its stack's count before the
move and the split; once a seat has made ``min_moves`` telling moves (a stack of 4
or more, where the rules differ) and at least ``share`` of them follow one rule,
the tree gives that seat's slides that split only (``Mcts.split_rules``) instead
of exploring sizes it does not play. Until then, or for a seat that follows no
rule, the tree explores splits as for any seat. Game 3 hides the counts: its
belief learns the split sizes instead (``state.belief``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from state.game import UNKNOWN, GameState
from state.observe import Action

SplitRule = Callable[[int], int]
"""The split a rule makes of a stack of ``count`` sheep."""

RULES: dict[str, SplitRule] = {
    "half": lambda count: max(1, count // 2),
    "one": lambda count: 1,
    "all-but-one": lambda count: count - 1,
}
TELLING = 4
"""Stacks smaller than this fit several rules at once: they tell nothing."""


def rules_followed(count: int, split: int) -> list[str]:
    """The rules a move of ``split`` sheep off a stack of ``count`` follows."""
    out = []
    if split in (count // 2, (count + 1) // 2):
        out.append("half")
    if split == 1:
        out.append("one")
    if split == count - 1:
        out.append("all-but-one")
    return out


@dataclass
class SeatSplits:
    moves: int = 0
    followed: dict[str, int] = field(default_factory=dict)


class OpponentModel:
    """The other seats' split rules, learned from their moves (see the module)."""

    def __init__(self, me: int, min_moves: int = 4, share: float = 0.9) -> None:
        self.me = me
        self.min_moves = min_moves
        self.share = share
        self.seats: dict[int, SeatSplits] = {}

    def update(self, state: GameState, actions: Iterable[Action]) -> None:
        """Learn from one board's actions; ``state`` is the position after them."""
        moves = [a for a in actions if a.kind == "move" and a.seat != self.me]
        seats = [a.seat for a in moves]
        for a in moves:
            left = state.sheep[a.cell]
            if a.split == UNKNOWN or left == UNKNOWN or seats.count(a.seat) > 1:
                continue  # hidden, or the stack's count before is not known for sure
            count = left + a.split
            if count < TELLING:
                continue
            record = self.seats.setdefault(a.seat, SeatSplits())
            record.moves += 1
            for rule in rules_followed(count, a.split):
                record.followed[rule] = record.followed.get(rule, 0) + 1

    def rule(self, seat: int) -> str | None:
        """The rule ``seat`` splits by, once it is clear; else None."""
        record = self.seats.get(seat)
        if record is None or record.moves < self.min_moves or not record.followed:
            return None
        name, times = max(record.followed.items(), key=lambda kv: kv[1])
        return name if times >= self.share * record.moves else None

    def split_rules(self) -> dict[int, str]:
        """Each seat's split rule (a name of ``RULES``), for the seats that have one."""
        out = {}
        for seat in self.seats:
            name = self.rule(seat)
            if name is not None:
                out[seat] = name
        return out
