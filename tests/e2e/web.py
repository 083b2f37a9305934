"""The web client (services/web) in a real browser, for every game's browser tests: its build,
the OS's Chromium driven by Playwright, and what a person does through the UI (``Player``).
The fixtures that use these are in tests/e2e/conftest.py."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from services.operator.gateway import ROOT, WEB_DIR
from tests.clients.typescript_client import node_missing, node_version, run
from tests.waiting import TIMEOUT_S, busy_factor, wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page, ViewportSize

    from tests.e2e.conftest import Gateway

WEB = ROOT / "services" / "web"
OLDEST_NODE = (20, 19)  # Vite 7's engines
CHROMIUM = Path("/usr/bin/chromium")
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
"""The OS package's Chromium as these tests run it: headless, without a sandbox (root in a
container) and without the background traffic a fresh profile starts."""
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
ARTIFACTS = Path(os.environ.get("PLAYTABLE_ARTIFACTS") or ROOT / ".artifacts" / "web")
"""Where the screenshots are kept."""
EXPECT_IDLE_S = 10.0
"""How long a page takes at most, on an idle machine, to show what a browser test waits for
(a move reaching the other screen takes 0.3-1.0 s there)."""


def expect_timeout_ms() -> int:
    """How long a browser test waits for what it expects to see before calling it missing:
    the tests' generous deadline (``tests.waiting.TIMEOUT_S``), longer on a machine busier
    than ``EXPECT_IDLE_S`` allows for, so a busy machine makes a test slower, never failed."""
    return round(1000 * max(TIMEOUT_S, EXPECT_IDLE_S * busy_factor()))


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    missing = node_missing()
    if missing is not None:
        return missing
    found = node_version()
    if found < OLDEST_NODE:
        return f"node {found} is older than {OLDEST_NODE}, which the web client's Vite needs"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (infra/ensure-chromium.sh installs it as root)"
    return None


def build_web_client_once() -> None:
    """``build_web_client`` once per test run, however many of its workers (pytest-xdist) ask:
    the first builds under a lock, the others wait for it and find its stamp."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:
        build_web_client()
        return
    lock = Path(tempfile.gettempdir()) / f"playtable-web-build-{run_id}"
    with lock.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.seek(0)
        if held.read() != "built":
            build_web_client()
            held.write("built")


def build_web_client() -> None:
    """Install the pinned tools, generate the client from the contract, type-check and bundle
    into services/web/dist, which the gateway serves."""
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], timeout=300, cwd=WEB)
    shutil.rmtree(WEB_DIR, ignore_errors=True)
    run(["npm", "run", "--silent", "build"], timeout=300, cwd=WEB)
    assert (WEB_DIR / "index.html").exists()


def screenshot(page: Page, name: str) -> Path:
    """Keep what ``page`` shows as ``ARTIFACTS/name.png``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=path, full_page=True)
    return path


def seat_row(page: Page, seat: int) -> Locator:
    """A table page's line for ``seat``: who sits there, and its buttons."""
    return page.get_by_test_id("seats").locator("li").nth(seat)


STATIC_FILES = re.compile(r"^/(|assets/[\w.-]+|web-config\.json)$")
"""What the gateway serves the web client besides the API: its page, its bundled assets and
the local stack's config."""


def contract_operations() -> list[tuple[str, re.Pattern[str]]]:
    """Each operation of openapi/openapi.json: its method and a pattern of its paths."""
    contract = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    return [
        (method.upper(), re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"))
        for path, operations in contract["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    ]


@dataclass
class Player:
    """One person at the web client: a browser context of their own, so their own app key and
    seat tokens in its localStorage, its page, and every request the page sent (method and
    path)."""

    page: Page
    base_url: str
    requests: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.page.on(
            "request",
            lambda request: self.requests.append((request.method, urlsplit(request.url).path)),
        )

    def off_contract(self) -> list[tuple[str, str]]:
        """The requests this page sent that are neither an operation of the contract nor one
        of the web client's own files."""
        operations = contract_operations()
        return [
            (method, path)
            for method, path in self.requests
            if not (method == "GET" and STATIC_FILES.match(path))
            and not any(method == verb and pattern.match(path) for verb, pattern in operations)
        ]

    def open(self, route: str = "#/") -> None:
        self.page.goto(f"{self.base_url}/{route}")

    def create_table(
        self,
        game: str,
        seats: int,
        *,
        seed: int | None = None,
        private: bool = False,
        bots: dict[int, str] | None = None,
        filled: dict[str, str] | None = None,
        checked: dict[str, bool] | None = None,
        player: str | None = None,
        player_seat: int = 0,
    ) -> str:
        """Fill the lobby's form (the game's options: ``filled`` fields, ``checked`` boxes; with
        ``player``, the creator's name and seat) and create the table; its id (the page is then
        the table's)."""
        from playwright.sync_api import expect

        self.open()
        form = self.page.get_by_test_id("create-table")
        form.locator("select[name=game]").select_option(game)
        form.locator("input[name=seats]").fill(str(seats))
        if seed is not None:
            form.locator("input[name=seed]").fill(str(seed))
        if player is not None:
            form.locator("input[name=creator]").fill(player)
            form.locator("select[name=creator-seat]").select_option(str(player_seat))
        if private:
            form.locator("select[name=visibility]").select_option("private")
        for seat, bot in (bots or {}).items():
            form.locator(f"select[name=bot-{seat}]").select_option(bot)
        for name, on in (checked or {}).items():  # first: a field may require a box
            box = form.locator(f"input[name={name}]")
            box.set_checked(on)
            expect(box).to_be_checked(checked=on)
        for name, value in (filled or {}).items():
            form.locator(f"input[name={name}]").fill(value)
        form.get_by_role("button", name="Create table").click()
        return self.wait_for_route("tables")

    def take_seat(self, name: str, seat: int | None = None) -> None:
        """Take ``seat`` (the first free one if None) at the table this page shows."""
        self.page.locator("input[name=player]").fill(name)
        if seat is not None:
            self.page.locator("select[name=seat]").select_option(str(seat))
        self.page.get_by_role("button", name="Take a seat").click()
        self.page.get_by_role("button", name="Start").wait_for()

    def start(self) -> str:
        """Start the table this page shows; the match's id, once the page has gone to it."""
        self.page.get_by_role("button", name="Start").click()
        return self.wait_for_route("matches")

    def wait_for_route(self, section: str) -> str:
        """The id in this page's route once it is ``#/section/<id>``."""
        self.page.wait_for_url(re.compile(rf"#/{section}/[^/?]+$"))
        found = re.search(rf"#/{section}/([^/?]+)$", self.page.url)
        assert found is not None, self.page.url
        return found.group(1)


def seat_two(
    people: Callable[..., Player], game: str, seed: int, **options: Any
) -> tuple[list[Player], str]:
    """Ada (desktop) creates a seeded 2-seat table (``options``: ``Player.create_table``'s)
    and takes seat 0, Bob (phone) seat 1 from its link; Ada starts it. The two and the match."""
    ada, bob = people(), people(PHONE)
    table_id = ada.create_table(game, 2, seed=seed, **options)
    ada.take_seat("ada")
    bob.open(f"#/tables/{table_id}")
    bob.take_seat("bob")
    match_id = ada.start()
    assert bob.wait_for_route("matches") == match_id
    return [ada, bob], match_id


def server_match(gateway: Gateway, match_id: str) -> dict[str, Any]:
    """The match as the server has it (a spectator's view), once created: a page goes to a
    match as soon as it is started, which on a busy machine may be before the match service
    recorded its first event (``creating``: no seat to move yet)."""

    def created() -> dict[str, Any] | None:
        answer = gateway.client.get(f"/matches/{match_id}")
        assert answer.status_code == 200, answer.text
        match: dict[str, Any] = answer.json()
        return match if match["status"] != "creating" else None

    return wait_until(created, what=f"match {match_id} created")
