"""The four game settings of the course, as data."""

from __future__ import annotations

from dataclasses import dataclass

PLAYERS = (1, 2, 3, 4)

MAX_SHEEP = 64
"""The most sheep one cell may hold in any setting: the bound of the wire's counts."""


@dataclass(frozen=True, slots=True)
class GameSetting:
    game: int
    size: int
    cells: int
    sheep: int
    hidden_counts: bool
    teams: bool

    def partner(self, seat: int) -> int | None:
        """Seat of the team-mate in game 4 (1 & 3 against 2 & 4), else None."""
        if not self.teams:
            return None
        return (seat + 1) % 4 + 1

    def shows_count(self, owner: int, viewer: int | None) -> bool:
        """Whether ``viewer`` is shown the sheep count of a cell of ``owner``.

        Game 3 shows a seat only its own counts; the other games show all of
        them, and ``viewer`` None (the referee) sees everything.
        """
        return not self.hidden_counts or viewer is None or owner == viewer


SETTINGS: dict[int, GameSetting] = {
    1: GameSetting(1, 12, 64, 16, hidden_counts=False, teams=False),
    2: GameSetting(2, 15, 100, 32, hidden_counts=False, teams=False),
    3: GameSetting(3, 12, 64, 16, hidden_counts=True, teams=False),
    4: GameSetting(4, 12, 64, 16, hidden_counts=False, teams=True),
}


def get_setting(game: int) -> GameSetting:
    try:
        return SETTINGS[game]
    except KeyError:
        raise ValueError(f"game setting must be one of 1, 2, 3, 4, not {game!r}") from None
