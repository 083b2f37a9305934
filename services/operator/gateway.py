"""The one public URL: nginx in front of the lobby, the match service and the webhooks API,
serving the web client (services/web, built into its dist/) at ``/``.

One routing template serves both deployments: ``playtable stack`` renders it into its runtime
directory and runs nginx as its child; ``infra/deploy/gateway.conf`` (Docker) is rendered from
it too, and so is the Kubernetes gateway's ConfigMap (``python -m services.operator.gateway``
rewrites both). Every route answers only the credentials it takes (an app's or the operator's
key, a seat token). No gateway routes the operator's endpoints (``OPERATOR_ROUTES``: apps and
their keys), the local stack's included: the operator reaches the lobby's own port, as the
contract says of those paths. The web client is one page with hash routes and its hashed
assets, so no other path is ever served; only the local stack also hands it its development
app's publishable key (``WEB_CONFIG``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path
from string import Template
from typing import Any

from shared.edge.contract import DOCS_ASSETS
from shared.edge.errors import PROBLEM_MEDIA_TYPE, PROBLEM_TYPE_BASE

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_DIR = ROOT / "openapi"
WEB_DIR = ROOT / "services" / "web" / "dist"
"""The web client's build (``npm run build`` in services/web; ``./infra/up.sh`` runs it)."""
DEPLOYED_WEB_DIR = "/srv/playtable/dist"
"""Where the deployed gateways find that build, beside the contract: Kubernetes copies the
image's (the Dockerfile builds it), Compose mounts this checkout's."""
WEB_CONFIG = "web-config.json"
"""What ``playtable stack`` tells its web client (the development app's publishable key),
written into the gateway's runtime directory, never into the build."""
DEPLOY_CONFIG = ROOT / "infra" / "deploy" / "gateway.conf"
KUBERNETES_CONFIG = ROOT / "infra" / "deploy" / "kubernetes" / "gateway-config.yaml"
PUBLIC_ROUTES = ("games", "tables")
"""The lobby's path prefixes every gateway routes."""
OPERATOR_ROUTES = ("apps",)
"""The lobby's operator-only path prefixes (``AppsController``): no deployed gateway routes
them."""
UPSTREAMS = {"lobby": ["lobby:8001"], "match": ["match:8002"], "webhooks": ["webhooks-api:8004"]}
"""The deployed services' addresses: Compose service names, Kubernetes Service names."""
MAX_BODY = "1m"
"""Larger request bodies are refused at the edge (a whole match file is far smaller)."""
FEED_READ_TIMEOUT = "1h"
"""Feeds stay open for long; they send a keep-alive every 15 s."""
LOCAL_PEER = "127.0.0.2"
"""The address the local stack's gateway reaches its services from, a loopback address of its
own (Linux routes all of 127.0.0.0/8 to lo): the stack's services trust only it to name the
client in ``X-Forwarded-For``, so a client on 127.0.0.1 sending the header straight to a
service's port is still itself."""
WORKER_SHUTDOWN_TIMEOUT = "5s"
"""How long a reloaded gateway's old workers keep carrying open feeds (else they would until
each feed ends, an hour or more): long enough for the requests under way to finish."""


class _Config(Template):
    delimiter = "@"  # nginx's own variables start with $


_DOCS_SCRIPT = 'SwaggerUIBundle({url: "/openapi.json", dom_id: "#ui"})'
_DOCS_PAGE = (
    '<!DOCTYPE html><html><head><title>playtable API</title><meta charset="utf-8">'
    f'<link rel="icon" type="image/png" href="{DOCS_ASSETS}/favicon-32x32.png">'
    f'<link rel="stylesheet" href="{DOCS_ASSETS}/swagger-ui.css">'
    f'<script src="{DOCS_ASSETS}/swagger-ui-bundle.js"></script></head>'
    f'<body><div id="ui"></div><script>{_DOCS_SCRIPT}</script></body></html>'
)
"""The merged contract in Swagger UI, whose files the lobby serves from its installed package."""

_PAGE_POLICY = (
    "default-src 'self'; script-src 'self'@script; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self';"
    " frame-ancestors 'none'"
)
WEB_POLICY = _PAGE_POLICY.replace("@script", "")
"""The web client's Content-Security-Policy: its own files only (no inline script or style,
which its build has none of), its API and feeds on this origin, never framed (clickjacking)."""
DOCS_POLICY = _PAGE_POLICY.replace(
    "@script",
    f" 'sha256-{base64.b64encode(hashlib.sha256(_DOCS_SCRIPT.encode()).digest()).decode()}'",
)
"""The docs page's: the web client's, and the one inline script that starts Swagger UI."""
API_POLICY = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'"
"""Every other answer's (JSON, problems): a browser that opens one runs and loads nothing."""
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
"""On every answer: no type is guessed, and no page's URL (a table's, a match's) is sent on."""


def _add_headers(policy: str, indent: int = 12, cache: str | None = None) -> str:
    """``add_header`` lines for a location (nginx drops the server's once a location adds its
    own, so each one that adds any repeats them all), sent on errors too; ``cache``, the
    ``Cache-Control`` of its successful answers."""
    lines = [
        f'add_header {name} "{value}" always;'
        for name, value in {**SECURITY_HEADERS, "Content-Security-Policy": policy}.items()
    ]
    if cache is not None:
        lines.append(f'add_header Cache-Control "{cache}";')
    return f"\n{' ' * indent}".join(lines)


_NOT_FOUND = (
    f'{{"type":"{PROBLEM_TYPE_BASE}not-found","title":"Not found","status":404,'
    '"detail":"no such route on the public API"}'
)

_TEMPLATE = _Config(
    """\
# Rendered from services/operator/gateway.py (`python -m services.operator.gateway`): edit there.
@main
# a reload's old workers close the feeds they still carry after this; clients resume on the new
# ones from their Last-Event-ID
worker_shutdown_timeout @shutdown_timeout;
events {}

http {
    @http
    types { text/html html; application/json json; text/javascript js; text/css css; }
    default_type application/octet-stream;
    # which service answers for a path nginx refused a method on itself (TRACE)
    map $uri $refusing_upstream { ~^/matches match; ~^/webhooks webhooks; default lobby; }
@upstreams
    server {
        listen @listen;
        client_max_body_size @max_body;
        # nginx refuses TRACE before any location, with no Allow: the service answers it
        error_page 405 = @@method_refused;
        location @@method_refused {
            proxy_method TRACE;
            proxy_pass http://$refusing_upstream;
        }

        @api_headers

        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header X-Forwarded-Host $host;
        proxy_set_header X-Forwarded-Port $server_port;

        # Server-Sent Events go out as they come and stay open
        location ~ ^/tables/[^/]+/feed$ {
            proxy_pass http://lobby;
            proxy_buffering off;
            proxy_read_timeout @feed_timeout;
        }
        location ~ ^/matches/[^/]+/feed$ {
            proxy_pass http://match;
            proxy_buffering off;
            proxy_read_timeout @feed_timeout;
        }
        location ~ ^/(@lobby_routes)(/|$) { proxy_pass http://lobby; }
        location ~ ^/matches(/|$)             { proxy_pass http://match; }
        location ~ ^/webhooks(/|$)            { proxy_pass http://webhooks; }

        location = /openapi.json { root @contract_dir; }
        location = /docs {
            default_type text/html;
            @docs_headers
            return 200 '@docs_page';
        }
        location @docs_assets/ { proxy_pass http://lobby; }

        # the web client: its one page (always revalidated) and its content-hashed assets
        location = / {
            root @web_dir;
            try_files /index.html =404;
            @page_headers
        }
        location /assets/ {
            root @web_dir;
            @asset_headers
        }
@web_config
        # no other path is routed@unrouted_note
        location / {
            default_type @problem_type;
            return 404 '@not_found';
        }
    }
}
"""
)

_WEB_CONFIG_LOCATION = _Config(
    """\
        location = /@name {
            root @directory;
            @headers
        }
"""
)
"""The local stack's ``WEB_CONFIG``: never cached, as each start makes a new key."""


def _upstream(name: str, addresses: list[str], *, resolve: bool) -> str:
    servers = [f"server {address}{' resolve' if resolve else ''};" for address in addresses]
    shared = [f"zone {name} 64k;"] if resolve else []  # re-resolved addresses live there
    # Idle upstream connections are let go well before the services' own keep-alive would
    # close them (PLAYTABLE_HTTP_KEEP_ALIVE_S), so nginx never sends one on a closing connection.
    lines = [*servers, *shared, "keepalive 16;", "keepalive_timeout 4s;"]
    return f"    upstream {name} {{\n" + "".join(f"        {line}\n" for line in lines) + "    }\n"


_LOG_NAME = "without_query"
_LOG_FORMAT = (
    f"log_format {_LOG_NAME} '$remote_addr [$time_local] \"$request_method $uri $server_protocol\"'"
    " ' $status $body_bytes_sent $request_time resumed_after=$http_last_event_id';"
)
"""Access logs leave the query string out: a browser's live feed carries its ticket there (its
EventSource sends no header; tokens never go in a URL, as the error log keeps request lines), and
no log needs one. A feed reopened by a reconnecting browser shows the version it resumed after
(its ``Last-Event-ID``)."""


def render(
    upstreams: dict[str, list[str]],
    *,
    listen: str,
    contract_dir: Path | str,
    main: list[str],
    http: list[str],
    web_dir: Path | str,
    web_config_dir: Path | None = None,
    resolve: bool = False,
) -> str:
    """The gateway config: ``upstreams`` names the addresses of each service's copies;
    ``web_config_dir``, where ``WEB_CONFIG`` is served from (the local stack's only)."""
    unrouted = f" (the operator's /{', /'.join(OPERATOR_ROUTES)} either)"
    config = _TEMPLATE.substitute(
        lobby_routes="|".join(PUBLIC_ROUTES),
        unrouted_note=unrouted,
        main="\n".join(main),
        http="\n    ".join([_LOG_FORMAT, *http]),
        upstreams="".join(
            _upstream(name, addresses, resolve=resolve) for name, addresses in upstreams.items()
        ),
        listen=listen,
        max_body=MAX_BODY,
        feed_timeout=FEED_READ_TIMEOUT,
        shutdown_timeout=WORKER_SHUTDOWN_TIMEOUT,
        contract_dir=contract_dir,
        web_dir=web_dir,
        web_config=""
        if web_config_dir is None
        else _WEB_CONFIG_LOCATION.substitute(
            name=WEB_CONFIG,
            directory=web_config_dir,
            headers=_add_headers(API_POLICY, cache="no-store"),
        ),
        api_headers=_add_headers(API_POLICY, indent=8),
        docs_headers=_add_headers(DOCS_POLICY),
        page_headers=_add_headers(WEB_POLICY, cache="no-cache"),
        asset_headers=_add_headers(API_POLICY, cache="public, max-age=31536000, immutable"),
        docs_page=_DOCS_PAGE,
        docs_assets=DOCS_ASSETS,
        problem_type=PROBLEM_MEDIA_TYPE,
        not_found=_NOT_FOUND,
    )
    return "".join(f"{line.rstrip()}\n" for line in config.splitlines())


def deploy_config(upstreams: dict[str, list[str]] | None = None) -> str:
    """The Docker deployment's config: copies found through Docker's DNS (every 10 s).
    ``upstreams`` replaces the services' addresses (a test runs it on loopback)."""
    return render(
        upstreams or UPSTREAMS,
        listen="8080",
        contract_dir="/srv/playtable",
        main=[],
        http=["resolver 127.0.0.11 valid=10s ipv6=off;", f"access_log /dev/stdout {_LOG_NAME};"],
        web_dir=DEPLOYED_WEB_DIR,
        resolve=upstreams is None,
    )


def kubernetes_config(upstreams: dict[str, list[str]] | None = None) -> str:
    """The Kubernetes deployment's config: each service's ClusterIP Service, which spreads
    connections over its pods (no resolver to name: the Services' addresses never change)."""
    return render(
        upstreams or UPSTREAMS,
        listen="8080",
        contract_dir="/srv/playtable",
        main=[],
        http=[f"access_log /dev/stdout {_LOG_NAME};"],
        web_dir=DEPLOYED_WEB_DIR,
    )


def kubernetes_configmap() -> str:
    """``infra/deploy/kubernetes/gateway-config.yaml``: the ConfigMap the gateway's nginx reads."""
    config = "".join(f"    {line}".rstrip() + "\n" for line in kubernetes_config().splitlines())
    return (
        "# Rendered from services/operator/gateway.py (`python -m services.operator.gateway`):"
        " edit there.\n"
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: playtable-gateway\n"
        "  labels: {app.kubernetes.io/part-of: playtable, app.kubernetes.io/name: gateway}\n"
        "data:\n"
        "  nginx.conf: |\n" + config
    )


def local_peer(host: str) -> str | None:
    """Where the local gateway connects to services on ``host`` from: ``LOCAL_PEER`` for an
    IPv4 host; None (the system's choice, which no service trusts) for an IPv6 one, which has
    one loopback address only."""
    return LOCAL_PEER if ":" not in host else None


def local_config(
    host: str,
    port: int,
    upstreams: dict[str, list[int]],
    directory: Path,
) -> str:
    """The local stack's config: every path nginx writes is inside ``directory``, so it runs
    unprivileged or as root without touching /etc/nginx or /var; it reaches the services from
    ``local_peer``."""
    temp = directory / "gateway-temp"
    main = [f"pid {directory / 'gateway.pid'};", "error_log stderr warn;"]
    if os.geteuid() == 0:  # workers read the contract: run them as the owner of the files
        main.insert(0, f"user {pwd.getpwuid(CONTRACT_DIR.stat().st_uid).pw_name};")
    http = [f"access_log {directory / 'gateway-access.log'} {_LOG_NAME};"] + [
        f"{kind}_temp_path {temp / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    ]
    if (peer := local_peer(host)) is not None:
        http.append(f"proxy_bind {peer};")
    return render(
        {name: [f"{host}:{copy}" for copy in ports] for name, ports in upstreams.items()},
        listen=f"{host}:{port}",
        contract_dir=CONTRACT_DIR,
        main=main,
        http=http,
        web_dir=WEB_DIR,
        web_config_dir=directory,
    )


def runtime_dir(port: int) -> Path:
    """Where a local gateway keeps its config, pid, logs and temporary files: one per port,
    so several stacks on one machine keep apart."""
    return ROOT / ".stack" / f"gateway-{port}"


def write_web_config(directory: Path, app_key: str) -> None:
    """Hand the web client the stack's development app's publishable key (a new one each
    start), so its lobby works at once; only the local stack's gateway serves this file, to
    anyone: never a secret key."""
    (directory / WEB_CONFIG).write_text(json.dumps({"appKey": app_key}))


def find_nginx() -> str | None:
    """nginx on the PATH, or where the OS package puts it (/usr/sbin is not on every PATH)."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def start_gateway(
    host: str, port: int, upstreams: dict[str, list[int]], directory: Path, log: Any = None
) -> subprocess.Popen[bytes] | None:
    """Run nginx in the foreground as a child (stopped with SIGTERM); None without nginx.
    Its errors go to ``log`` (a file) if given, else to this process's stderr."""
    nginx = find_nginx()
    if nginx is None:
        print(
            "nginx is not installed (./infra/up.sh installs it as root): no gateway, use each"
            " service's own port",
            file=sys.stderr,
        )
        return None
    (directory / "gateway-temp").mkdir(parents=True, exist_ok=True)
    config = directory / "gateway.conf"
    config.write_text(local_config(host, port, upstreams, directory))
    command = [nginx, "-p", str(directory), "-e", "stderr", "-c", str(config)]
    return subprocess.Popen([*command, "-g", "daemon off;"], stdout=log, stderr=log)


if __name__ == "__main__":
    DEPLOY_CONFIG.write_text(deploy_config())
    KUBERNETES_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    KUBERNETES_CONFIG.write_text(kubernetes_configmap())
    print(f"wrote {DEPLOY_CONFIG} and {KUBERNETES_CONFIG}")
