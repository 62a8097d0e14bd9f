"""The course's sample players: uniform random and greedy."""

from __future__ import annotations

from state.game import GameState, Move
from strategies.base import Budget, Strategy


class RandomStrategy(Strategy):
    """A uniformly random slide with a uniformly random split."""

    name = "random"

    def place(self, state: GameState, budget: Budget) -> int:
        cell = self.rng.choice(state.initial_positions())
        budget.offer_placement(cell)
        return cell

    def move(self, state: GameState, budget: Budget) -> Move | None:
        slides = state.slides()
        if not slides:
            return None
        cell, direction, _dst = self.rng.choice(slides)
        move = Move(cell, self.rng.randint(1, state.sheep[cell] - 1), direction)
        budget.offer_move(move)
        return move


class GreedyStrategy(Strategy):
    """The slide with the best immediate gain in own score, split in half.

    Weak on purpose, like the course's greedy sample: clumping next to one's
    own cells wastes moves. Ties are broken at random.
    """

    name = "greedy"

    def place(self, state: GameState, budget: Budget) -> int:
        # Most free neighbours: the greedy way to start.
        cell = self.rng.choice(state.most_room(state.initial_positions()))
        budget.offer_placement(cell)
        return cell

    def move(self, state: GameState, budget: Budget) -> Move | None:
        slides = state.slides()
        if not slides:
            return None
        me = state.to_move
        best_gain = -1.0
        best: list[Move] = []
        for cell, direction, dst in slides:
            split = max(1, state.sheep[cell] // 2)
            before = state.exact_score(me)
            state.slide(cell, dst, split)
            gain = state.exact_score(me) - before
            state.undo()
            if gain > best_gain + 1e-9:
                best_gain, best = gain, [Move(cell, split, direction)]
            elif abs(gain - best_gain) <= 1e-9:
                best.append(Move(cell, split, direction))
        move = self.rng.choice(best)
        budget.offer_move(move)
        return move
