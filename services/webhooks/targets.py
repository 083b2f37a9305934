"""Refuse webhook targets on addresses the operator has not allowed (SSRF guard).

Checked when a subscription is saved and again before every attempt, since DNS may change.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import NamedTuple
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(Exception):
    """The URL is malformed or resolves to an address webhooks may not reach."""


def allowed_networks(setting: str) -> list[Network]:
    return [ipaddress.ip_network(item.strip()) for item in setting.split(",") if item.strip()]


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""The well-known NAT64 prefix: its last 32 bits are an IPv4 address."""


class Target(NamedTuple):
    """A URL whose host was resolved and checked: deliveries connect to ``address`` (never
    resolving again, so DNS cannot answer differently in between) and name ``host``."""

    url: str
    host: str
    address: Address


def _embedded(address: Address) -> list[Address]:
    """The address and every IPv4 address an IPv6 one carries (mapped, 6to4, Teredo, NAT64),
    which a router may forward to: each must be reachable."""
    found: list[Address] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            found.append(address.ipv4_mapped)
        if address.sixtofour:
            found.append(address.sixtofour)
        if address.teredo:
            found.extend(address.teredo)
        if address in NAT64:
            found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def _global(address: Address) -> bool:
    """Globally routable: none of IANA's special-purpose ranges (private, loopback, shared
    100.64.0.0/10, benchmarking 198.18.0.0/15, link- and site-local, multicast, reserved...)."""
    if address.is_multicast or address.is_reserved or address.is_unspecified:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return False
    return address.is_global


def reachable(address: Address, allowed: list[Network]) -> bool:
    """Inside a network the operator allowed, or global with everything it embeds global."""
    if any(address in network for network in allowed):
        return True
    return all(_global(part) for part in _embedded(address))


def check_target(url: str, allowed: list[Network]) -> Target:
    """The checked target of ``url``, or ``TargetRefused`` unless every address its host
    resolves to is reachable (one bad address refuses it: a name may rotate among them)."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:  # an unclosed IPv6 bracket, say
        hostname = None
    if not hostname or parts.scheme not in ("http", "https"):
        raise TargetRefused(f"{url!r} is not an http(s) URL with a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as error:
        raise TargetRefused(f"cannot resolve {hostname!r}: {error}") from None
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    for address in addresses:
        if not reachable(address, allowed):
            # which address, only in the log: told to the caller, it would answer DNS queries
            # for the operator's internal names
            log.info("webhook target host %r refused: it resolves to %s", hostname, address)
            raise TargetRefused(
                f"{hostname!r} resolves to a private, loopback or other special-purpose address,"
                " which webhooks may not reach"
            )
    return Target(url=url, host=hostname, address=addresses[0])
