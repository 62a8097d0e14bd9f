"""``battlesheep serve`` hardening: signals, addresses, counts, logs, absent seats, viewer uploads.

Real subprocesses and real sockets on 127.0.0.1 ([::1] only where the machine
has an IPv6 loopback); every wait is bounded.
"""

from __future__ import annotations

from pathlib import Path

from tests.arena_support import check_game, play_template_game


async def test_a_late_reply_is_counted_late_only(tmp_path: Path) -> None:
    record, result = await play_template_game(
        1, tmp_path, seed=27, faults={2: "late"}, time_limit=0.3
    )
    check_game(record, result)
    late = [e for e in record.events if e.seat == 2 and e.outcome == "late"]
    assert result.late[1] == len(late) >= 3
    # Each late reply still arrived (the player answers everything, only slowly),
    # but one event is one count: none of them is stale as well.
    assert result.stale[1] == 0
