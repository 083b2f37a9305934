"""Who a request comes from: its client's address (behind trusted proxies) and its key's bucket."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import ipaddress
import re
import socket

from litestar.types import Scope

from shared.edge.apps import PUBLISHABLE_PREFIX

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(setting: str) -> list[Network]:
    """The networks and addresses ``trusted_proxies`` names (its host names aside)."""
    return trusted_proxies(setting)[0]


def trusted_proxies(setting: str) -> tuple[list[Network], list[str]]:
    """``trusted_proxies``: its networks, and its host names (a Compose service, a Kubernetes
    headless Service of the gateway's pods), whose addresses the limiter looks up."""
    networks: list[Network] = []
    names: list[str] = []
    for item in (item.strip() for item in setting.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item))
        except ValueError as error:
            if not _HOST_NAME.fullmatch(item):
                raise SystemExit(f"bad setting trusted_proxies: {error}") from None
            names.append(item)
    return networks, names


_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.*[a-z]){_LABEL}(\.{_LABEL})*\.?", re.IGNORECASE)


async def resolved(names: list[str]) -> list[Network]:
    """The addresses ``names`` have now, each as a one-address network."""
    loop = asyncio.get_running_loop()
    found = set()
    for name in names:
        for *_, sockaddr in await loop.getaddrinfo(name, None, type=socket.SOCK_STREAM):
            found.add(ipaddress.ip_network(sockaddr[0].partition("%")[0]))
    return sorted(found, key=str)


def client_address(scope: Scope, trusted: list[Network]) -> str:
    """Who sent the request: the peer, unless the peer is a trusted proxy, then the right-most
    address of ``X-Forwarded-For`` that is not a trusted proxy's (the left ones are whatever
    the client chose to send). IPv6 clients count per /64, the least a host is given."""
    peer = (scope.get("client") or ("unknown", 0))[0]
    if not _is_trusted(peer, trusted):
        return _bucket_of(peer)
    forwarded = b",".join(v for k, v in scope["headers"] if k == b"x-forwarded-for").decode(
        "latin-1"
    )
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, trusted):
            return _bucket_of(hop)
    return _bucket_of(hops[0] if hops else peer)


@functools.lru_cache(maxsize=4096)  # parsing is a third of refusing a flooder's request
def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _is_trusted(text: str, trusted: list[Network]) -> bool:
    address = _address(text)
    return address is not None and any(address in network for network in trusted)


def _bucket_of(text: str) -> str:
    address = _address(text)
    if address is None:
        return text[:64]  # not an address (a test client's name): as it is, bounded
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def app_key_bucket(scope: Scope, address: str) -> str | None:
    """The bucket name of the request's ``X-API-Key``, if any: never the key itself. A
    publishable key is in every browser of its app, so its bucket is per client address too:
    one browser cannot spend the whole app's budget."""
    for name, value in scope["headers"]:
        if name == b"x-api-key":
            digest = hashlib.sha256(value).hexdigest()[:32]
            if value.startswith(PUBLISHABLE_PREFIX.encode()):
                return f"{digest}@{address}"
            return digest
    return None
