"""What the contract fuzz test needs besides schemathesis: where requests go, real resources to
aim at, and a webhook sink that keeps fuzzed subscriptions on this machine.

Kept apart from the test so the rules confining fuzzed traffic to loopback are easy to audit.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from shared.edge.apps import API_KEY_HEADER
from shared.infra.settings import Settings
from tests.e2e.conftest import Gateway
from tests.e2e.play import auth, open_table

LOOPBACK = "127.0.0.1"
GAMES = ("hanabi", "carcassonne", "dingo", "breaking_news")


@dataclass(frozen=True)
class Routes:
    """Where the contract's servers run in this test: the gateway, and the lobby's own port
    for the operator's paths (no gateway routes them)."""

    public: str
    operator: str

    def base_url(self, declared: str) -> str:
        """The gateway, for the contract's server, the lobby for the operator's; a server the
        harness does not know fails loudly. Schemathesis gives operations under the contract's
        global ``servers`` a bare path (the contract was read from a file)."""
        parts = urlsplit(declared)
        if not parts.netloc:
            return self.public + parts.path.rstrip("/")
        if parts.port == Settings().gateway_port:
            return self.public
        if parts.port == Settings().lobby_port:
            return self.operator
        raise LookupError(f"the contract names server {declared!r}, unknown to the harness")


@dataclass
class Stage:
    """Real resources valid requests are aimed at half the time (random ids only reach 404s)."""

    seat_token: str
    invitation: str
    app_key: str
    operator_key: str
    ids: dict[str, list[str]] = field(default_factory=dict)
    """Path parameter name -> real values."""

    @classmethod
    def open(cls, gateway: Gateway, operator_key: str) -> Stage:
        """A running public Hanabi match and a private Dingo table with its host seated."""
        match_id, tokens = open_table(gateway.stack, "hanabi", 2, seed=7)
        match = gateway.client.get(f"/matches/{match_id}", headers=auth(tokens[0]))
        assert match.status_code == 200, match.text
        private = gateway.client.post(
            "/tables", json={"game": "dingo", "seats": 3, "visibility": "private"}
        )
        assert private.status_code == 201, private.text
        table_id, invitation = private.json()["table_id"], private.json()["invitation_token"]
        joined = gateway.client.post(
            f"/tables/{table_id}/seats", json={"name": "host"}, headers=auth(invitation)
        )
        assert joined.status_code == 201, joined.text
        return cls(
            seat_token=tokens[0],
            invitation=invitation,
            app_key=gateway.stack.app_key,
            operator_key=operator_key,
            ids={
                "match_id": [match_id],
                "table_id": [match.json()["table_id"], table_id],
                "game": list(GAMES),
            },
        )

    def credentials_for(
        self, security: list[dict[str, Any]] | None, *, tokens: bool = True
    ) -> dict[str, str]:
        """The headers of the credentials an operation declares: the app's or the operator's
        key, and (with ``tokens``) a seat's token before a table's invitation."""
        schemes = {name for requirement in security or [] for name in requirement}
        headers = {}
        if "appKey" in schemes:
            headers[API_KEY_HEADER] = self.app_key
        if "operatorKey" in schemes:
            headers[API_KEY_HEADER] = self.operator_key
        if not tokens:
            return headers
        if "seatToken" in schemes:
            headers["Authorization"] = f"Bearer {self.seat_token}"
        elif "invitationToken" in schemes:
            headers["Authorization"] = f"Bearer {self.invitation}"
        return headers

    def aim(self, path_parameters: dict[str, Any] | None, body: Any) -> None:
        """Swap about half of the generated ids (and games named in a body) for real ones, chosen
        from the generated value itself (crc32, not ``hash``) so every run sends the same."""
        if path_parameters:
            for name, value in path_parameters.items():
                path_parameters[name] = self._real(name, value)
        if isinstance(body, dict) and "game" in body:
            body["game"] = self._real("game", body["game"])

    def _real(self, name: str, value: Any) -> Any:
        real = self.ids.get(name)
        if not real or not isinstance(value, str):
            return value
        digest = zlib.crc32(value.encode("utf-8", "surrogatepass"))
        return real[digest // 2 % len(real)] if digest % 2 == 0 else value


class LinkCredentials:
    """The seat token a scenario's step sends, as the contract's links say.

    A token is the security scheme, not a parameter, so the contract names it in a link's own
    ``x-authorization`` (``Bearer {$response.body#/token}``), which schemathesis does not read.
    A step taken along such a link sends that; one taken along any other link sends the token
    of the step it leaves from (the same player goes on: start, then the legal moves, then one).
    """

    TEMPLATE = re.compile(r"\{\$response\.body#(/[^}]*)\}")

    def __init__(self, contract: dict[str, Any]) -> None:
        self.contract = contract
        self.sent: dict[str, tuple[str | None, Any]] = {}
        """Case id -> the token it was given (if any) and its response's JSON body."""

    def authorization(self, transition: Any) -> str | None:
        if transition is None or transition.parent_id not in self.sent:
            return None
        token, body = self.sent[transition.parent_id]
        template = self._link(transition.id).get("x-authorization")
        if template is None:
            return token
        try:
            return self.TEMPLATE.sub(lambda match: str(_pointed(body, match[1])), template)
        except LookupError:
            return None

    def record(self, case: Any, token: str | None, response: Any) -> None:
        try:
            body = response.json()
        except ValueError:
            body = None
        self.sent[case.id] = (token, body)

    def _link(self, transition_id: str) -> dict[str, Any]:
        """The link a transition id (``POST /a -> [201] Name -> GET /b``) names."""
        source, _, rest = transition_id.partition(" -> ")
        status, _, rest = rest.partition(" ")
        name, _, _ = rest.partition(" -> ")
        method, _, path = source.partition(" ")
        operation = self.contract["paths"].get(path, {}).get(method.lower(), {})
        response = operation.get("responses", {}).get(status.strip("[]"), {})
        return (response.get("links") or {}).get(name, {})


def _pointed(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer; LookupError when there is none."""
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(document, list) and part.isdigit():
            document = document[int(part)]
        elif isinstance(document, dict):
            document = document[part]
        else:
            raise LookupError(pointer)
    if document is None:
        raise LookupError(pointer)
    return document


def prepare(case: Any, sink: str) -> None:
    """What every fuzzed request goes through before it is sent."""
    confine_webhook_target(case.body, sink)
    key_per_request(case)


def key_per_request(case: Any) -> None:
    """Give a valid request's ``Idempotency-Key`` a digest of the request, as a client would use
    one key per request: the fuzzer draws keys like ``0`` again and again, and a key reused for
    another request is refused (422) as documented, which is no finding."""
    headers = case.headers
    meta = case.meta
    if not headers or meta is None or not meta.generation.mode.is_positive:
        return
    for name, value in headers.items():
        if name.lower() == "idempotency-key" and isinstance(value, str):
            others = {key: item for key, item in headers.items() if key != name}
            request = [case.method, case.path, case.path_parameters, case.query, others, case.body]
            digest = json.dumps(request, sort_keys=True, default=repr).encode()
            headers[name] = hashlib.sha256(digest).hexdigest()[:32]


def confine_webhook_target(body: Any, sink: str) -> None:
    """Point any http(s) ``url`` in a request body at the loopback ``sink`` (``host:port``).

    The webhooks API resolves such URLs (DNS) and delivers events to public addresses without
    asking anyone: fuzzed subscriptions must do neither. Mirrors ``services/webhooks/targets.py``:
    a URL it would not resolve is left alone (it is refused as it is). The length is kept, so a
    case generated too long (or not) stays so.
    """
    if isinstance(body, list):
        for item in body:
            confine_webhook_target(item, sink)
    if not isinstance(body, dict):
        return
    for key, value in body.items():
        if key == "url" and isinstance(value, str):
            body[key] = _loopback_url(value, sink)
        else:
            confine_webhook_target(value, sink)


def _loopback_url(url: str, sink: str) -> str:
    try:
        parts = urlsplit(url)
        resolvable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # the service's own urlsplit fails the same way, before any lookup
        return url
    if not resolvable:
        return url

    def confined(path: str) -> str:
        return urlunsplit(("http", sink, path or "/", parts.query, parts.fragment))

    shortest = confined(parts.path)
    if len(shortest) < len(url):
        return confined((parts.path or "/") + "x" * (len(url) - len(shortest)))
    if len(url) >= len(confined("")):
        return shortest[: len(url)]
    return shortest


class WebhookSink:
    """An HTTP server on loopback that takes every webhook delivery, and the stack's HTTP proxy.

    Deliveries to confined URLs arrive directly; anything else the stack tries to reach comes
    through it as a proxy request, is noted in ``left_loopback`` and goes no further.
    """

    def __init__(self) -> None:
        self.deliveries = 0
        self.left_loopback: list[str] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "CONNECT" or not self.path.startswith("/"):
                    sink.left_loopback.append(f"{self.command} {self.path}")
                    self.send_response(403)
                else:
                    sink.deliveries += 1
                    self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_CONNECT = _answer

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.server.daemon_threads = True
        self.netloc = f"{LOOPBACK}:{self.server.server_address[1]}"
        self.url = f"http://{self.netloc}"

    def proxy_env(self) -> dict[str, str]:
        """Environment sending the stack's outgoing HTTP (webhook deliveries) through the sink,
        loopback excepted: the sink itself and the services' own health checks."""
        env = {"NO_PROXY": "127.0.0.1,localhost,::1"}
        env.update({name: self.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")})
        return {**env, **{name.lower(): value for name, value in env.items()}}

    @contextmanager
    def running(self) -> Iterator[WebhookSink]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join(5)
