"""The deployed gateways route exactly like the local stack's (one template), nginx accepts
their configs, and the public ones never route the operator's endpoints."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from services.operator.cli import CONTRACT_PATH
from services.operator.gateway import (
    DEPLOY_CONFIG,
    KUBERNETES_CONFIG,
    OPERATOR_ROUTES,
    WEB_CONFIG,
    deploy_config,
    find_nginx,
    kubernetes_config,
    kubernetes_configmap,
    local_config,
)

LOOPBACK = {
    "lobby": ["127.0.0.1:8001"],
    "match": ["127.0.0.1:8002"],
    "webhooks": ["127.0.0.1:8004"],
}
"""nginx -t resolves the upstreams' names: these stand for Docker's and Kubernetes' services."""

PUBLIC_CONFIGS = {"compose": deploy_config, "kubernetes": kubernetes_config}
ROUTED_CONFIGS = {
    **PUBLIC_CONFIGS,
    "local stack": lambda: local_config(
        "127.0.0.1", 8080, {"lobby": [8001], "match": [8002], "webhooks": [8004]}, Path("/run")
    ),
}
"""Every gateway's routing: the deployed ones and ``playtable stack``'s."""


def test_committed_deploy_config_is_current() -> None:
    assert DEPLOY_CONFIG.read_text() == deploy_config(), (
        "infra/deploy/gateway.conf is stale: run `python -m services.operator.gateway`"
    )


def test_committed_kubernetes_configmap_is_current() -> None:
    assert KUBERNETES_CONFIG.read_text() == kubernetes_configmap(), (
        "infra/deploy/kubernetes/gateway-config.yaml is stale:"
        " run `python -m services.operator.gateway`"
    )
    configmap = yaml.safe_load(KUBERNETES_CONFIG.read_text())
    assert configmap["data"]["nginx.conf"] == kubernetes_config()


@pytest.mark.parametrize("name", PUBLIC_CONFIGS)
def test_nginx_accepts_the_deployed_config(name: str, tmp_path: Path) -> None:
    nginx = find_nginx()
    if nginx is None:
        pytest.skip("nginx is not installed (./infra/test.sh installs it with apt-get as root)")
    config = tmp_path / "gateway.conf"
    config.write_text(PUBLIC_CONFIGS[name](LOOPBACK))
    (tmp_path / "logs").mkdir()
    checked = subprocess.run(
        [nginx, "-t", "-q", "-p", str(tmp_path), "-e", "stderr", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, checked.stderr


# --- which location nginx picks for a path ---------------------------------------------------

LOCATION = re.compile(r"location\s+(?:(=|\^~|~\*?)\s+)?([^\s{]+)\s*\{")


def locations(config: str) -> list[tuple[str, str, str]]:
    """Each location of the server block: (modifier, pattern, body)."""
    found = []
    for start in LOCATION.finditer(config):
        depth, end = 1, start.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(config[end], 0)
            end += 1
        found.append((start.group(1) or "", start.group(2), config[start.end() : end - 1]))
    return found


def chosen(config: str, path: str) -> str:
    """The body of the location nginx uses for ``path`` (exact, then the longest prefix
    unless it is ``^~``, then the first regex that matches, then that prefix)."""
    named = [(modifier, pattern, body) for modifier, pattern, body in locations(config)]
    for modifier, pattern, body in named:
        if modifier == "=" and pattern == path:
            return body
    prefixes = [
        (pattern, modifier, body)
        for modifier, pattern, body in named
        if modifier in ("", "^~") and not pattern.startswith("@") and path.startswith(pattern)
    ]
    longest = max(prefixes, key=lambda prefix: len(prefix[0]), default=None)
    if longest is not None and longest[1] == "^~":
        return longest[2]
    for modifier, pattern, body in named:
        flags = re.IGNORECASE if modifier == "~*" else 0
        if modifier.startswith("~") and re.search(pattern, path, flags):
            return body
    assert longest is not None, f"no location for {path}"
    return longest[2]


def operator_paths() -> list[str]:
    """Every path of the contract that only the operator's key opens, parameters filled."""
    contract = json.loads(CONTRACT_PATH.read_text())
    paths = []
    for path, item in contract["paths"].items():
        schemes = {
            name
            for operation in item.values()
            if isinstance(operation, dict)
            for requirement in operation.get("security") or [{}]
            for name in requirement
        }
        if schemes == {"operatorKey"}:
            paths.append(re.sub(r"\{[^}]+\}", "x", path))
    return paths


NOT_PUBLIC = ["/health", "/ready", "/metrics", "/schema", "/schema/openapi.json"]
"""Each service's own endpoints: for its orchestrator and monitoring, never the public."""


def test_the_operator_routes_are_the_contracts() -> None:
    paths = operator_paths()
    assert paths, "the contract names no operator-only path"
    assert {path.split("/")[1] for path in paths} == set(OPERATOR_ROUTES)


@pytest.mark.parametrize("name", ROUTED_CONFIGS)
def test_no_gateway_routes_an_operator_endpoint(name: str) -> None:
    config = ROUTED_CONFIGS[name]()
    for path in [*operator_paths(), "/apps/", *NOT_PUBLIC]:
        body = chosen(config, path)
        assert "proxy_pass" not in body and "return 404" in body, (path, body)
    routed = {
        "/games": "lobby",
        "/tables/x/feed": "lobby",
        "/matches/x/actions": "match",
        "/webhooks/subscriptions": "webhooks",
        "/docs/assets/swagger-ui.css": "lobby",
    }
    for path, upstream in routed.items():
        assert f"proxy_pass http://{upstream};" in chosen(config, path), path


@pytest.mark.parametrize("name", ROUTED_CONFIGS)
def test_every_gateway_serves_the_web_client_and_no_other_file(name: str) -> None:
    """The page at / and its assets; any other path stays unrouted (its hash routes never reach
    the server). Only the local stack hands it an app key."""
    config = ROUTED_CONFIGS[name]()
    assert "try_files /index.html =404;" in chosen(config, "/")
    assert re.search(r"root \S+/dist;", chosen(config, "/assets/index-1a2b3c.js"))
    for path in ["/index.html", "/src/main.tsx", "/package.json"]:
        assert "return 404" in chosen(config, path), path
    web_config = chosen(config, f"/{WEB_CONFIG}")
    assert ("return 404" in web_config) == (name != "local stack"), web_config


@pytest.mark.parametrize("name", ROUTED_CONFIGS)
def test_no_gateway_logs_a_query_string(name: str) -> None:
    """A live feed's seat token travels in its query string (a browser's EventSource sends no
    header): every access log leaves the query out."""
    config = ROUTED_CONFIGS[name]()
    logs = re.findall(r"^\s*access_log .*;$", config, re.MULTILINE)
    assert logs and all(line.rstrip(";").endswith(" without_query") for line in logs), logs
    formats = re.findall(r"^\s*log_format without_query (.*);$", config, re.MULTILINE)
    assert len(formats) == 1 and "$uri" in formats[0]
    assert "$request " not in formats[0] and "$args" not in formats[0]
    assert "$request_uri" not in formats[0] and "$query_string" not in formats[0]
