"""A webhook delivery connects to the address it checked: the host is resolved once, so a DNS answer that
changes between the check and the connection (rebinding) cannot send it into a private network.

The resolver is the one stand-in here (no DNS server to rebind on a test machine); the receiver is a real
HTTP server on loopback, the private address a rebinding attack would aim at."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from moneyrail.events.addresses import AddressRefused, post_pinned
from tests.events.receiver import receiver

PUBLIC = "93.184.216.34"  # a global address, never reached from the test machine


class RebindingResolver:
    """Answers `first` to the first lookup and `later` to every other one, counting them."""

    def __init__(self, first: list[str], later: list[str]) -> None:
        self.first, self.later, self.lookups = first, later, 0

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups += 1
        return self.first if self.lookups == 1 else self.later


def post(url: str, resolver: RebindingResolver, *, public_only: bool) -> httpx.Response:
    async def go() -> httpx.Response:
        _target, response = await post_pinned(
            url,
            content='{"id": "evt_1"}',
            headers={"content-type": "application/json"},
            public_only=public_only,
            timeout_seconds=1.0,
            resolver=resolver,
        )
        return response

    return asyncio.run(go())


def test_the_request_goes_to_the_address_resolved_once_with_the_url_s_host_name():
    with receiver() as hooks:
        port = urlsplit(hooks.url).port
        resolver = RebindingResolver(first=["127.0.0.1"], later=["192.0.2.1"])
        response = post(f"http://hooks.example.test:{port}/hooks?x=1", resolver, public_only=False)
    assert response.status_code == 200
    assert resolver.lookups == 1
    (delivery,) = hooks.deliveries
    assert delivery.headers["host"] == f"hooks.example.test:{port}" and delivery.path == "/hooks?x=1"


def test_a_name_that_rebinds_to_loopback_after_the_check_never_reaches_it():
    """Checked public, then answering 127.0.0.1: the connection still goes to the checked address."""
    with receiver() as hooks:
        port = urlsplit(hooks.url).port
        resolver = RebindingResolver(first=[PUBLIC], later=["127.0.0.1"])
        with pytest.raises(httpx.HTTPError):  # the public address is not reachable from here
            post(f"http://rebind.example.test:{port}/hooks", resolver, public_only=True)
    assert hooks.deliveries == [] and resolver.lookups == 1


@pytest.mark.parametrize("answer", [["10.0.0.5"], [PUBLIC, "127.0.0.1"], ["169.254.169.254"], ["::1"]])
def test_a_live_host_with_any_private_address_is_refused_before_connecting(answer):
    with receiver() as hooks:
        port = urlsplit(hooks.url).port
        with pytest.raises(AddressRefused, match="non-public"):
            post(
                f"https://mixed.example.test:{port}/hooks",
                RebindingResolver(answer, answer),
                public_only=True,
            )
    assert hooks.deliveries == []


# --- https: the connection goes to the checked address, the TLS name check stays the URL's ---------
def _certificate_authority(tmp_path: Path, server_name: str) -> tuple[ssl.SSLContext, Path, Path]:
    """A test CA (the client's only trust) and a server certificate for `server_name`, signed by it."""
    now = datetime.now(UTC)

    def build(subject: str, key: ec.EllipticCurvePrivateKey, issuer: str, signer: Any, ca: bool) -> Any:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = build("moneyrail test CA", ca_key, "moneyrail test CA", ca_key, ca=True)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf_cert = build(server_name, leaf_key, "moneyrail test CA", ca_key, ca=False)
    cert_path, key_path = tmp_path / "server.pem", tmp_path / "server.key"
    cert_path.write_bytes(leaf_cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    client = ssl.create_default_context(cadata=ca_cert.public_bytes(serialization.Encoding.PEM).decode())
    return client, cert_path, key_path


@contextmanager
def tls_receiver(cert_path: Path, key_path: Path) -> Iterator[tuple[int, list[str | None], list[str]]]:
    """A real HTTPS server on loopback: the SNI names it was asked for and the Host headers it got."""
    server_names: list[str | None] = []
    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            hosts.append(self.headers["host"])
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    context.sni_callback = lambda _socket, name, _context: server_names.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], server_names, hosts
    finally:
        server.shutdown()
        server.server_close()


def post_tls(url: str, client: ssl.SSLContext) -> httpx.Response:
    async def go() -> httpx.Response:
        _target, response = await post_pinned(
            url,
            content="{}",
            headers={},
            public_only=False,
            timeout_seconds=5.0,
            resolver=RebindingResolver(["127.0.0.1"], ["192.0.2.1"]),
            verify=client,
        )
        return response

    return asyncio.run(go())


def test_https_to_the_checked_address_sends_the_url_s_name_in_sni_and_verifies_its_certificate(tmp_path):
    client, cert_path, key_path = _certificate_authority(tmp_path, "hooks.example.test")
    with tls_receiver(cert_path, key_path) as (port, server_names, hosts):
        response = post_tls(f"https://hooks.example.test:{port}/hooks", client)
    assert response.status_code == 200
    assert server_names == ["hooks.example.test"] and hosts == [f"hooks.example.test:{port}"]


def test_https_refuses_a_certificate_for_another_name_at_the_checked_address(tmp_path):
    client, cert_path, key_path = _certificate_authority(tmp_path, "someone-else.example.test")
    with (
        tls_receiver(cert_path, key_path) as (port, _server_names, hosts),
        pytest.raises(httpx.ConnectError, match=r"(?i)certificate"),
    ):
        post_tls(f"https://hooks.example.test:{port}/hooks", client)
    assert hosts == []
