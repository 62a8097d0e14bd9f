"""The opponent model: other seats' split rules learned from the boards, used in the tree."""

from __future__ import annotations

import pytest

from arena.local import play_local
from state.observe import Action
from strategies.hybrid import HybridStrategy
from strategies.mcts_tree import Node, choose_split, expand
from strategies.opponents import RULES, OpponentModel, rules_followed
from strategies.registry import make_strategy
from tests.test_strategies import positions


def test_rules_followed() -> None:
    assert rules_followed(8, 4) == ["half"]
    assert rules_followed(9, 4) == ["half"] and rules_followed(9, 5) == ["half"]
    assert rules_followed(8, 1) == ["one"] and rules_followed(8, 7) == ["all-but-one"]
    assert rules_followed(8, 3) == []
    assert [RULES[r](9) for r in ("half", "one", "all-but-one")] == [4, 1, 8]


@pytest.mark.parametrize("game", [1, 4])
def test_the_split_rules_of_a_game_are_learned(game: int) -> None:
    """``uct`` always halves, ``random`` splits at random: after a game the model knows
    the first and not the second."""
    # Fixed iterations, a static placement and no timed endgame solver: nothing of the
    # game depends on the clock, so a loaded machine plays the same game.
    fixed = {"max_iterations": 40, "placement_time_fraction": 0.0, "endgame_fraction": 0.0}
    me = HybridStrategy({"seed": 1, "opponent_splits": True, **fixed})
    uct = {"max_iterations": 60, "time_fraction": 1.0}
    seats = [me, make_strategy("uct", {"seed": 2, **uct}), make_strategy("random", {"seed": 3})]
    seats.append(make_strategy("uct", {"seed": 4, **uct}))
    play_local(game, 5, seats, 2.0)
    assert me.opponents is not None
    assert me.opponents.rule(2) == me.opponents.rule(4) == "half"
    assert me.opponents.seats[3].moves >= 4 and me.opponents.rule(3) is None
    assert me.opponents.split_rules() == {2: "half", 4: "half"}
    assert 1 not in me.opponents.seats  # its own moves are not modelled


def test_too_few_telling_moves_learn_nothing() -> None:
    model = OpponentModel(me=1, min_moves=4)
    state = positions(1, 1, seed=3)[0]
    stack = next(c for c in state.stacks[2] if state.sheep[c] >= 1)
    state.sheep[stack] = 5
    for _ in range(3):
        model.update(state, [Action(2, "move", stack, -1, 5)])  # 10 -> 5: half
    assert model.rule(2) is None
    model.update(state, [Action(2, "move", stack, -1, 5)])
    assert model.rule(2) == "half"
    # Small stacks tell nothing; two moves of one seat in one board are not trusted.
    model.update(state, [Action(3, "move", stack, -1, 5)] * 2)
    state.sheep[stack] = 1
    model.update(state, [Action(3, "move", stack, -1, 1)])
    assert 3 not in model.seats


def test_a_seat_with_a_rule_gets_one_split_per_slide_in_the_tree() -> None:
    state = next(s for s in positions(1, 30, seed=9) if any(n >= 6 for n in s.sheep))
    node = Node(state.to_move, state.hash)
    expand(node, state, 2.0, RULES["half"])
    assert node.edges
    for e in node.edges:
        assert [s.split for s in e.splits] == [max(1, e.count // 2)]
        e.n = 1000  # however often visited, no other size opens
        assert choose_split(e, 0.5, 2, 1.0, 0.4).split == max(1, e.count // 2)
        assert len(e.splits) == 1
