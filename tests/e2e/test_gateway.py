"""The one public URL: ``playtable stack`` itself, with nginx in front of two match copies."""

from __future__ import annotations

import asyncio
import random
import time

import httpx
import pytest
from playwright.sync_api import Browser, Route, expect

from services.operator import keys
from services.operator.cli import CONTRACT_PATH
from shared.edge.apps import API_KEY_HEADER
from shared.infra.settings import Settings
from tests.e2e.conftest import Gateway
from tests.e2e.play import auth, open_table, random_move
from tests.e2e.test_feeds import Follower, play_safely
from tests.unit.shared.edge.test_docs_offline import assert_docs_self_contained

# the ``gateway`` fixture skips where nginx is missing
pytestmark = [pytest.mark.e2e, pytest.mark.shares_gateway]

PROMPT_S = 2.0
"""A feed event through the gateway arrives within this (nginx buffering it would hold it)."""


def test_a_match_is_played_entirely_through_the_one_url(gateway: Gateway) -> None:
    rng = random.Random(13)
    match_id, tokens = open_table(gateway.stack, "hanabi", 2, seed=13)
    version = play_safely(gateway.stack, match_id, tokens, rng, moves=6)  # on either copy
    events = gateway.client.get(f"/matches/{match_id}/events", headers=auth(tokens[0]))
    assert events.status_code == 200, events.text
    assert events.json()["items"][-1]["version"] == version


def feed_event_through_the_gateway(gateway: Gateway, seed: int) -> float:
    """A move while a feed follows its match through the gateway: how long until the feed
    had its event. The feed stays open meanwhile (never ends by itself), so a gateway that
    buffered it would hold the event until the deadline."""
    rng = random.Random(seed)
    match_id, tokens = open_table(gateway.stack, "hanabi", 2, seed=seed)
    match = gateway.client.get(f"/matches/{match_id}").json()
    follower = Follower(
        str(gateway.client.base_url),
        f"/matches/{match_id}/feed",
        params={"after": match["version"]},
        until=lambda events: bool(events),
    ).start()
    moved_at = time.monotonic()
    moved = random_move(gateway.stack, match, tokens, rng)
    follower.join(30)
    arrived_s = time.monotonic() - moved_at
    assert follower.ids[0] == match["version"] + 1 <= moved["version"]
    return arrived_s


def test_a_live_feed_through_the_gateway_is_not_buffered(gateway: Gateway) -> None:
    feed_event_through_the_gateway(gateway, seed=14)


@pytest.mark.speed  # an upper bound on time: left out of the default run
def test_a_live_feed_through_the_gateway_is_prompt(gateway: Gateway) -> None:
    assert feed_event_through_the_gateway(gateway, seed=15) < PROMPT_S


def test_every_api_is_on_the_public_url_behind_its_key(gateway: Gateway) -> None:
    """The webhooks API is routed too, and answers only its keys."""
    base = str(gateway.client.base_url)
    assert gateway.client.get("/webhooks/subscriptions").status_code == 200
    refused = httpx.get(f"{base}/webhooks/subscriptions", timeout=10)
    assert refused.status_code == 401, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["type"].endswith("api-key-required")
    assert gateway.client.get("/health").status_code == 404
    too_large = gateway.client.post("/tables", content=b" " * (2 * 1024 * 1024))
    assert too_large.status_code == 413


def test_the_web_client_is_handed_a_publishable_key_only(gateway: Gateway) -> None:
    """Anyone who reaches the gateway gets the web client's key: it creates tables, and is
    refused what only the app's server may do."""
    handed = gateway.client.get("/web-config.json", headers={API_KEY_HEADER: ""})
    assert handed.json() == {"appKey": gateway.publishable_key}
    browser = {API_KEY_HEADER: gateway.publishable_key}
    assert gateway.publishable_key.startswith("pt_pk_")
    assert gateway.stack.app_key.startswith("pt_sk_")
    created = gateway.client.post("/tables", json={"game": "hanabi", "seats": 2}, headers=browser)
    assert created.status_code == 201, created.text
    hooks = gateway.client.get("/webhooks/subscriptions", headers=browser)
    assert hooks.status_code == 403, hooks.text
    assert hooks.json()["type"].endswith("/secret-key-required")


def test_the_gateway_serves_the_committed_contract_and_offline_docs(gateway: Gateway) -> None:
    contract = gateway.client.get("/openapi.json")
    assert contract.headers["content-type"] == "application/json"
    assert contract.text == CONTRACT_PATH.read_text()
    assert contract.json()["servers"][0]["url"] == "http://127.0.0.1:8080"
    urls = assert_docs_self_contained(gateway.client.get)
    assert any(url.endswith("swagger-ui-bundle.js") for url in urls)
    assert '"/openapi.json"' in gateway.client.get("/docs").text


def test_a_method_nginx_refuses_itself_is_answered_by_the_service(gateway: Gateway) -> None:
    """nginx refuses TRACE before routing, without ``Allow``; the service's answer has it."""
    for path, allowed in [("/games", "GET, HEAD, OPTIONS"), ("/matches/x", "GET, HEAD, OPTIONS")]:
        refused = gateway.client.request("TRACE", path)
        assert refused.status_code == 405, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.headers["allow"] == allowed


def test_the_gateway_never_reaches_the_operator(gateway: Gateway) -> None:
    """An operator key that opens /apps on the lobby itself reaches nothing through the
    gateway (routed as the deployed ones): it answers 404 itself, as for any path it does not
    route, and the contract sends the operator to the lobby's own port."""
    settings = Settings(database_url=gateway.stack.env["DATABASE_URL"])
    operator = {API_KEY_HEADER: asyncio.run(keys.operator_key(settings, "gateway test")).api_key}
    lobby = f"http://127.0.0.1:{gateway.stack.env['PLAYTABLE_LOBBY_PORT']}"
    assert httpx.get(f"{lobby}/apps", headers=operator, timeout=10).status_code == 200
    contract = gateway.client.get("/openapi.json").json()
    assert {server["url"] for server in contract["paths"]["/apps"]["servers"]} == {
        "http://127.0.0.1:8001"
    }
    games = gateway.client.get("/games")
    assert games.status_code == 200, games.text
    for method, path in [
        ("GET", "/apps"),
        ("POST", "/apps"),
        ("GET", "/apps/x/keys"),
        ("GET", "/health"),
        ("GET", "/ready"),
        ("GET", "/metrics"),
    ]:
        refused = httpx.request(
            method, f"{gateway.client.base_url}{path}", headers=operator, json={"name": "x"}
        )
        assert refused.status_code == 404, (method, path, refused.text)
        assert refused.json()["detail"] == "no such route on the public API", (method, path)


def test_every_answer_carries_the_security_headers(gateway: Gateway) -> None:
    """nosniff and no referrer on every answer (errors too); the web client's page and the
    docs a Content-Security-Policy of their own, never framed; anything else loads nothing."""
    answers = {
        path: gateway.client.get(path)
        for path in ("/", "/docs", "/games", "/openapi.json", "/no/such/path", "/matches/none")
    }
    answers["/assets/none.js"] = gateway.client.get("/assets/none.js")
    for path, answer in answers.items():
        assert answer.headers["X-Content-Type-Options"] == "nosniff", path
        assert answer.headers["Referrer-Policy"] == "no-referrer", path
        policy = answer.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in policy and "base-uri 'none'" in policy, path
        assert "unsafe" not in policy, path
    assert answers["/matches/none"].status_code == answers["/assets/none.js"].status_code == 404
    page = answers["/"].headers["Content-Security-Policy"]
    assert "default-src 'self'" in page and "connect-src 'self'" in page
    assert "object-src 'none'" in page
    assert "script-src 'self' 'sha256-" in answers["/docs"].headers["Content-Security-Policy"]
    assert answers["/games"].headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_the_docs_start_under_their_policy(gateway: Gateway, chromium: Browser) -> None:
    """Swagger UI's bundle, styles and the inline script that starts it (allowed by its hash)
    load, with no Content-Security-Policy violation reported, and it shows the contract's
    operations, offline: the browser reaches nothing but the gateway (any other request is
    refused and recorded, and none was made)."""
    context = chromium.new_context()
    base_url = str(gateway.client.base_url).rstrip("/")
    elsewhere: list[str] = []

    def offline(route: Route) -> None:
        url = route.request.url
        if url == base_url or url.startswith(f"{base_url}/") or url.startswith("data:"):
            route.continue_()
        else:
            elsewhere.append(url)
            route.abort("internetdisconnected")

    context.route("**/*", offline)
    try:
        page = context.new_page()
        messages: list[str] = []
        page.on("console", lambda message: messages.append(message.text))
        page.goto(f"{base_url}/docs")
        page.locator("#ui .swagger-ui").first.wait_for()
        page.wait_for_load_state("networkidle")
        assert page.evaluate("typeof SwaggerUIBundle") == "function"
        # the contract read, not "Unable to render this definition" (OpenAPI 3.1 in Swagger UI 4)
        expect(page.locator("#ui .info .title")).to_contain_text("playtable")
        expect(page.locator("#ui .opblock").first).to_be_visible()
        assert "Unable to render" not in page.locator("#ui").inner_text()
        assert not [text for text in messages if "Content Security Policy" in text], messages
        assert elsewhere == [], elsewhere
    finally:
        context.close()
