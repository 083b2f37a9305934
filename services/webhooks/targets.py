"""Refuse webhook targets on addresses the operator has not allowed (SSRF guard).

Checked when a subscription is saved and again before every attempt, since DNS may change.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(Exception):
    """The URL is malformed or resolves to an address webhooks may not reach."""


def allowed_networks(setting: str) -> list[Network]:
    return [ipaddress.ip_network(item.strip()) for item in setting.split(",") if item.strip()]


def _internal(address: Address) -> bool:
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def check_target(url: str, allowed: list[Network]) -> None:
    """Raise ``TargetRefused`` unless every address ``url``'s host resolves to is public or
    inside an allowed network."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetRefused(f"{url!r} is not an http(s) URL with a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as error:
        raise TargetRefused(f"cannot resolve {parts.hostname!r}: {error}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if _internal(address) and not any(address in network for network in allowed):
            raise TargetRefused(
                f"{parts.hostname!r} resolves to {address}, which webhooks may not reach"
            )
