"""One TLS context per process for outgoing HTTPS (webhook deliveries, the developer's event forwarder)."""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def default_tls() -> ssl.SSLContext:
    """httpx's own default (its CA bundle, `SSL_CERT_FILE` honoured), built once per process: a client
    made with `verify=True` loads the bundle again, ~20 ms of CPU for every request it is made for."""
    return httpx.create_ssl_context()
