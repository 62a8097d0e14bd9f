"""The match viewer in a real headless Chromium, driven by Playwright.

The browser is the system's Chromium (/usr/bin/chromium or on PATH) where there is one, else
Playwright's own build; ``make test`` first provisions one (tests/provision_browser.py), and
where none could be had these tests skip with the reason (in CI they fail: tests/conftest.py).

Games are played by the arena against the course-template players (real
subprocesses over TCP on 127.0.0.1); the page is served by the viewer on an
ephemeral port and must show what the server's true state says. Screenshots
go to test-artifacts/.
"""

from __future__ import annotations

import asyncio
import base64
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, async_playwright
from playwright.async_api import Error as PlaywrightError

from arena.config import ServerConfig
from arena.replay import Replay, initial_state, positions, read_replay, write_replay
from arena.results import GameResult
from arena.server import GamePlan, play_single
from arena.viewer.server import ViewerServer
from state.game import GameState
from tests.arena_support import TEAMS, TEMPLATE, check_game, template_players
from tests.provision_browser import system_chromium

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
WAIT_MS = 20_000

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[BrowserContext]:
    chromium = system_chromium()  # else Playwright's own, if `playwright install` brought it
    async with async_playwright() as pw:
        try:
            context = await pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"),  # a fresh user-data-dir per test
                executable_path=chromium,
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1280, "height": 860},
            )
        except PlaywrightError as exc:
            if chromium is not None:
                raise
            first = str(exc).strip().splitlines()[0].split(": ", 1)[-1]
            pytest.skip(
                "no Chromium: none on this machine and Playwright's own did not start "
                f"(make test runs tests/provision_browser.py to get one): {first}"
            )
        try:
            yield context
        finally:
            await context.close()


async def play(game: int, seed: int, logs: Path, viewer: ViewerServer | None = None) -> Any:
    plan = GamePlan(
        game=game, seed=seed, teams=TEAMS, players=template_players(game, logs, seed=seed)
    )
    config = ServerConfig(
        time_limit=0.4,
        connect_timeout=15.0,
        handshake_timeout=0.5,
        exit_grace=1.0,
        listener=viewer,
    )
    record, result = await play_single(plan, config)
    check_game(record, result)
    return record, result


async def shown_cells(page: Page) -> dict[tuple[int, int], tuple[int, str]]:
    cells = await page.eval_on_selector_all(
        "#board .cell",
        "els => els.map(e => [+e.dataset.x, +e.dataset.y, +e.dataset.owner, e.textContent])",
    )
    return {(x, y): (owner, text) for x, y, owner, text in cells}


def expected_cells(state: GameState, viewer: int = 0) -> dict[tuple[int, int], tuple[int, str]]:
    """What the page must show: owners everywhere, counts ("?" for others' in a seat's view)."""
    n = state.geometry.size
    cells = {}
    for i, owner in enumerate(state.owner):
        if owner <= 0:
            text = ""
        elif viewer and owner != viewer:
            text = "?"
        else:
            text = str(state.sheep[i])
        cells[divmod(i, n)] = (owner, text)
    return cells


async def shown_players(page: Page) -> list[list[str]]:
    rows: list[list[str]] = await page.eval_on_selector_all(
        "#players tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    return rows


def regions_text(sizes: list[int]) -> str:
    """The page's way of writing region sizes: largest first, runs of 3+ as "1×9"."""
    parts: list[str] = []
    for size in sorted(set(sizes), reverse=True):
        run = sizes.count(size)
        parts += [f"{size}×{run}"] if run >= 3 else [str(size)] * run
    return " + ".join(parts) if parts else "—"


def check_players(rows: list[list[str]], state: GameState) -> None:
    assert [int(r[1]) for r in rows] == TEAMS
    assert [int(r[2]) for r in rows] == state.scores()
    for seat, row in enumerate(rows, start=1):
        assert row[3] == regions_text(state.region_sizes(seat))


async def check_standings(page: Page, result: GameResult) -> None:
    await page.wait_for_selector("#standings:not([hidden])", timeout=WAIT_MS)
    seats = await page.eval_on_selector_all("#standings li", "els => els.map(e => +e.dataset.seat)")
    ranks = result.ranks
    assert [ranks[s - 1] for s in seats] == sorted(ranks)
    text = await page.inner_text("#standings")
    for seat in seats:
        assert f"{result.points[seat - 1]:g} pts" in text
    assert await page.inner_text("#turn") == "Game over" + (
        " (stalled: nobody moved any more)" if result.stalled else ""
    )


async def test_live_game_3_shows_the_servers_state_with_hidden_counts(
    browser: BrowserContext, tmp_path: Path
) -> None:
    async with ViewerServer() as viewer:
        page = await browser.new_page()
        await page.goto(viewer.url)
        await page.wait_for_function(
            "document.getElementById('status').textContent === 'connected'"
        )
        record, result = await play(3, 7, tmp_path, viewer)
        state = record.state
        await check_standings(page, result)

        # Game 3 opens in seat 1's view: others' counts unknown, owners all shown.
        assert await page.input_value("#view") == "1"
        assert await shown_cells(page) == expected_cells(state, viewer=1)
        hidden = sum(1 for owner, text in (await shown_cells(page)).values() if text == "?")
        assert hidden == sum(len(state.stacks[s]) for s in (2, 3, 4)) > 0
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "viewer-live-game3-seat1.png"), full_page=True)
        await page.select_option("#view", "3")
        assert await shown_cells(page) == expected_cells(state, viewer=3)
        await page.select_option("#view", "0")
        assert await shown_cells(page) == expected_cells(state)
        check_players(await shown_players(page), state)
        assert [int(r[2]) for r in await shown_players(page)] == result.scores

        # The move list: one line per turn, with the think time the server measured.
        moves = await page.eval_on_selector_all(
            "#moves li", "els => els.map(e => e.querySelector('.ms').textContent)"
        )
        assert moves == [
            "—" if e.elapsed is None else f"{round(e.elapsed * 1000)} ms" for e in record.events
        ]

        await page.screenshot(path=str(ARTIFACTS / "viewer-live-game3.png"), full_page=True)

        # Whose turn: stepping back to any turn names the seat that played next.
        for k in (4, 9, len(record.events) // 2):
            await page.locator("#slider").fill(str(k))
            assert f"Seat {record.events[k].seat} (team " in await page.inner_text("#turn")

        # A page opened after the game gets the whole game from the history.
        late = await browser.new_page()
        await late.goto(viewer.url)
        await check_standings(late, result)
        await late.select_option("#view", "0")
        assert await shown_cells(late) == expected_cells(state)


def replay_state_after(replay: Replay, k: int) -> GameState:
    if k == 0:
        return initial_state(replay)
    for number, (_, state) in enumerate(positions(replay), start=1):
        if number == k:
            return state.copy()
    raise AssertionError(f"the replay has fewer than {k} events")


async def test_replay_open_steps_through_a_recorded_game(
    browser: BrowserContext, tmp_path: Path
) -> None:
    record, result = await play(1, 3, tmp_path)
    path = write_replay(tmp_path / "game1.msgpack", record, result)
    replay = read_replay(path)
    total = len(replay.events)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "battlesheep",
        "replay",
        str(path),
        "--open",
        "--no-browser",
        "--http",
        "127.0.0.1:0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
        assert line.startswith("viewer: http://127.0.0.1:"), line
        url = line.split()[1]
        page = await browser.new_page()
        await page.goto(url)
        await page.wait_for_function(
            f"document.getElementById('step').textContent === '0 / {total}'"
        )
        assert "replay game1.msgpack" in await page.inner_text("#title")
        assert await shown_cells(page) == expected_cells(initial_state(replay))

        for _ in range(6):
            await page.click("#next")
        assert await page.inner_text("#step") == f"6 / {total}"
        assert await shown_cells(page) == expected_cells(replay_state_after(replay, 6))
        check_players(await shown_players(page), replay_state_after(replay, 6))
        await page.click("#prev")
        await page.keyboard.press("ArrowLeft")
        assert await shown_cells(page) == expected_cells(replay_state_after(replay, 4))
        middle = total // 2
        await page.locator("#slider").fill(str(middle))
        assert await page.inner_text("#step") == f"{middle} / {total}"
        assert await shown_cells(page) == expected_cells(replay_state_after(replay, middle))
        check_players(await shown_players(page), replay_state_after(replay, middle))
        current = await page.get_attribute("#moves li.current", "data-n")
        assert current == str(middle)
        assert await page.is_hidden("#standings")

        await page.keyboard.press("End")
        await check_standings(page, result)
        assert await shown_cells(page) == expected_cells(record.state)
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "viewer-replay-game1.png"), full_page=True)
    finally:
        proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 10)
    assert code == 0


async def drop_file(page: Page, name: str, data: bytes) -> None:
    """A drag and drop of a file onto the page, as the browser delivers it."""
    transfer = await page.evaluate_handle(
        """([name, b64]) => {
            const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bytes], name));
            return dt;
        }""",
        [name, base64.b64encode(data).decode()],
    )
    await page.dispatch_event("body", "drop", {"dataTransfer": transfer})


async def test_dropped_and_opened_replay_files(browser: BrowserContext, tmp_path: Path) -> None:
    record, result = await play(4, 11, tmp_path)
    path = write_replay(tmp_path / "pairs.msgpack", record, result)
    junk = tmp_path / "notes.msgpack"
    junk.write_bytes(b"not a replay at all")
    async with ViewerServer() as viewer:
        page = await browser.new_page()
        missing = await page.goto(viewer.url + "no-such-page")
        assert missing is not None and missing.status == 404
        await page.goto(viewer.url)
        assert await page.inner_text("#title") == "waiting for a game…"

        await drop_file(page, path.name, path.read_bytes())
        await page.wait_for_function(
            "document.getElementById('title').textContent.includes('replay pairs.msgpack')"
        )
        # The whole game has arrived once the slider reaches its last event.
        total = len(record.events)
        await page.wait_for_function(
            f"document.getElementById('step').textContent === '0 / {total}'"
        )
        await page.keyboard.press("End")
        await check_standings(page, result)
        assert await shown_cells(page) == expected_cells(record.state)
        standings = await page.inner_text("#standings")
        assert f"(pair {result.results[0]:g})" in standings

        # A file that is no replay: a clear error, and the game shown stays.
        await page.set_input_files("#file", str(junk))
        await page.wait_for_selector("#error:not([hidden])", timeout=WAIT_MS)
        assert "notes.msgpack is not a msgpack replay" in await page.inner_text("#error")
        assert await shown_cells(page) == expected_cells(record.state)

        # The "Open replay" button reads the same files as drag and drop.
        await page.set_input_files("#file", str(path))
        await page.wait_for_selector("#error", state="hidden", timeout=WAIT_MS)
        await page.wait_for_function(
            f"document.getElementById('step').textContent === '0 / {total}'"
        )


async def test_bad_http_address_is_a_clear_error(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "battlesheep",
        "serve",
        "--http",
        "localhost",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 2
    assert "HOST:PORT such as 127.0.0.1:8080, not 'localhost'" in err.decode()


async def test_serve_http_shows_the_game_the_server_plays(
    browser: BrowserContext, tmp_path: Path
) -> None:
    lines = [f"{team}\n{TEMPLATE} {team} {{port}} --game 1 --seed {team}\n" for team in TEAMS]
    (tmp_path / "input.txt").write_text("".join(lines) + "1\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "battlesheep",
        "serve",
        "--players",
        "input.txt",
        "--port",
        "0",
        "--time-limit",
        "0.4",
        "--seed",
        "21",
        "--http",
        "127.0.0.1:0",
        "--http-linger",
        "1",
        "--player-logs",
        str(tmp_path / "logs"),
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        url = ""
        while not url:
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
            assert line, "serve ended before it printed the viewer's address"
            if line.startswith("viewer: "):
                url = line.split()[1]
        page = await browser.new_page()
        await page.goto(url)
        out = (await asyncio.wait_for(proc.stdout.read(), 60)).decode()
        code = await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert code == 0, out
    printed = [line for line in out.splitlines() if line.startswith("player ")]
    scores = [int(line.rsplit(":", 1)[1]) for line in printed]
    await page.wait_for_selector("#standings:not([hidden])", timeout=WAIT_MS)
    assert [int(row[2]) for row in await shown_players(page)] == scores
    assert "seed 21" in await page.inner_text("#title")
    assert "closed the stream" in await page.inner_text("#status")
