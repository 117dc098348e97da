"""Assertions every HTTP test uses."""

from __future__ import annotations

import time
from typing import Any

import httpx
import psutil

from tests.harness import KEY_CACHE_SECONDS, TLS


def assert_error(
    response: httpx.Response, status: int, code: str, param: str | None = None
) -> dict[str, Any]:
    """The response is the documented error envelope with this status, code and param."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert {"type", "code", "message", "param", "request_id"} <= set(error), error
    assert error["code"] == code, error
    assert error["param"] == param, error
    assert error["request_id"] == response.headers["Request-Id"]
    assert error["message"]
    return error


def count_rows(db: Any, table: str, installation_id: str) -> int:
    row = db.execute(
        f"SELECT count(*) FROM {table} WHERE installation_id = %s", (installation_id,)
    ).fetchone()
    assert row is not None
    return int(row[0])


def refused_within_key_cache_lifetime(url: str, headers: dict[str, str]) -> httpx.Response:
    """A web process remembers keys for `key_cache_seconds`: a key revoked elsewhere (the CLI, a test)
    must be refused within that lifetime. Polls the route until it answers other than 200; fails when
    the key outlives the lifetime (plus a second for the requests themselves)."""
    deadline = time.monotonic() + KEY_CACHE_SECONDS + 1.0
    while (response := httpx.get(url, headers=headers, verify=TLS)).status_code == 200:
        assert time.monotonic() < deadline, "the revoked key outlived the key cache lifetime"
        time.sleep(0.1)
    return response


def backends_of(db: Any, pid: int) -> list[tuple[int, str, str]]:
    """(pid, state, query) of the PostgreSQL backends whose client is the process `pid` or one of its
    children: each names its process in application_name (db/engine.py), over TCP or a unix socket alike."""
    parent = psutil.Process(pid)
    names = [f"moneyrail pid {member.pid} on %" for member in [parent, *parent.children(recursive=True)]]
    rows = db.execute(
        "SELECT pid, state, query FROM pg_stat_activity WHERE application_name LIKE ANY(%s)", (names,)
    ).fetchall()
    return [(row[0], row[1], row[2]) for row in rows]
