"""Where a webhook may be sent: no server-side request forgery into private networks (CONVENTIONS.md §10).

The host is resolved once per delivery; the addresses are checked, and the connection goes to the
checked address (the URL's host name still in the Host header, in TLS SNI and in the certificate check),
so a DNS answer that changes between the check and the connection (rebinding) cannot redirect it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from moneyrail.kit.tls import default_tls

# host, port -> the addresses it resolves to (the system resolver unless a test brings its own)
Resolver = Callable[[str, int], Awaitable[list[str]]]


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


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True)
class PinnedTarget:
    """A URL whose host was resolved and checked once: connect to `url` (the checked address)."""

    url: str
    host_header: str
    server_name: str
    address: str


async def resolve_checked(
    url: str, *, public_only: bool, resolver: Resolver = system_resolver
) -> PinnedTarget:
    """Resolve the URL's host once; with `public_only`, every address must be public."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = await resolver(host, port)
    except (socket.gaierror, UnicodeError) as error:
        raise AddressRefused(f"host {host!r} does not resolve") from error
    if not found:
        raise AddressRefused(f"host {host!r} does not resolve")
    addresses = [ipaddress.ip_address(address.split("%", 1)[0]) for address in found]
    if public_only and any(not address.is_global for address in addresses):
        raise AddressRefused(f"host {host!r} resolves to a non-public address")
    chosen = addresses[0]
    literal = f"[{chosen}]" if chosen.version == 6 else str(chosen)
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    host_header = f"{host}:{parts.port}" if parts.port else host
    if ":" in host and not host.startswith("["):  # an IPv6 literal host keeps its brackets in Host
        host_header = f"[{host}]:{parts.port}" if parts.port else f"[{host}]"
    return PinnedTarget(
        url=urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")),
        host_header=host_header,
        server_name=host,
        address=str(chosen),
    )


async def check_resolves_publicly(url: str, resolver: Resolver = system_resolver) -> None:
    """At creation and update; each delivery checks again (resolve_checked), since DNS can change."""
    await resolve_checked(url, public_only=True, resolver=resolver)


async def post_pinned(
    url: str,
    *,
    content: str,
    headers: dict[str, str],
    public_only: bool,
    timeout_seconds: float,
    resolver: Resolver = system_resolver,
    verify: ssl.SSLContext | None = None,
) -> tuple[PinnedTarget, httpx.Response]:
    """POST to the address `url` resolved to and passed the check: AddressRefused before any connection
    otherwise. Redirects are not followed (their target was never checked). `verify`: httpx's CA bundle
    unless a test brings its own; the certificate is checked against the URL's name either way."""
    target = await resolve_checked(url, public_only=public_only, resolver=resolver)
    tls = verify if verify is not None else default_tls()
    async with httpx.AsyncClient(timeout=timeout_seconds, follow_redirects=False, verify=tls) as client:
        response = await client.post(
            target.url,
            content=content,
            headers={**headers, "host": target.host_header},
            extensions={"sni_hostname": target.server_name},  # TLS: SNI and certificate of the URL's name
        )
    return target, response
