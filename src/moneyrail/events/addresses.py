"""Where a webhook may be sent: no server-side request forgery into private networks (CONVENTIONS.md §10)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit


class AddressRefused(ValueError):
    pass


def check_shape(url: str, *, livemode: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise AddressRefused("must be an absolute http(s) URL")
    if livemode and parts.scheme != "https":
        raise AddressRefused("live endpoints must use https")
    if parts.username or parts.password:
        raise AddressRefused("must not carry credentials")


async def check_resolves_publicly(url: str) -> None:
    """Every address the host resolves to must be public. Checked at creation and at each delivery,
    since DNS can change in between."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise AddressRefused(f"host {host!r} does not resolve") from error
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise AddressRefused(f"host {host!r} resolves to a non-public address")
