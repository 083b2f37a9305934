"""``/docs`` works without internet: its page loads only files the service itself serves."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
from litestar.testing import TestClient

from services.lobby.app import create_app
from shared.infra.settings import Settings

ASSET = re.compile(r"""<(?:script|link)\b[^>]*?\b(?:src|href)=["']([^"']+)["']""")
ASSET_TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png"}


def assert_docs_self_contained(get: Callable[[str], httpx.Response]) -> list[str]:
    """GET /docs through ``get``: every file it loads is a local path answering with its type."""
    page = get("/docs")
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    urls = ASSET.findall(page.text)
    assert urls, page.text
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), f"{url} is not local"
        asset = get(url)
        assert asset.status_code == 200, url
        kind = next(kind for suffix, kind in ASSET_TYPES.items() if url.endswith(suffix))
        assert kind in asset.headers["content-type"], (url, asset.headers["content-type"])
    assert "SwaggerUIBundle(" in page.text
    return urls


def test_a_service_serves_its_docs_from_the_installed_package() -> None:
    app = create_app(Settings(instance_id="docs"))
    client = TestClient(app)  # not entered: no lifespan, so no Postgres or Redis
    urls = assert_docs_self_contained(client.get)
    assert any(url.endswith("swagger-ui-bundle.js") for url in urls)
    assert any(url.endswith(".css") for url in urls)
