"""CONVENTIONS.md §4 under a race the claim cannot see: the claim is one statement (the key's lock and
the stored record's lookup), whose snapshot is taken before its lock. A first request that commits in
that moment is invisible to the second's lookup; the second's store must then refuse, so its effect
rolls back and the key keeps the first answer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from moneyrail.api.context import Principal
from moneyrail.api.idempotency import ClaimedKey, store
from moneyrail.errors import IdempotencyKeyInUse


def claimed(keys: Any, fingerprint: str, retention: timedelta = timedelta(hours=24)) -> ClaimedKey:
    principal = Principal(keys.tenant, keys.key_id, "secret", frozenset({"*"}))
    return ClaimedKey(key="raced", fingerprint=fingerprint, principal=principal, retention=retention)


def stored_answer(db: Any, keys: Any) -> tuple[str, int]:
    row = db.execute(
        "SELECT fingerprint, status_code FROM idempotency_records "
        "WHERE installation_id = %s AND key = 'raced'",
        (keys.installation_id,),
    ).fetchone()
    return row[0], row[1]


def test_a_request_whose_claim_missed_a_committed_first_answer_rolls_back_as_in_flight(bridge, tenant, db):
    async def first(session: Any) -> None:
        await store(session, claimed(tenant, "first"), 200, b'{"first": true}')

    bridge.in_unit_of_work(first)  # committed after the second request's claim looked

    async def second(session: Any) -> None:
        await store(session, claimed(tenant, "second"), 201, b'{"second": true}')

    with pytest.raises(IdempotencyKeyInUse):
        bridge.in_unit_of_work(second)
    assert stored_answer(db, tenant) == ("first", 200)


def test_an_expired_answer_under_the_key_is_still_replaced(bridge, tenant, db):
    async def first(session: Any) -> None:
        await store(session, claimed(tenant, "first"), 200, b'{"first": true}')

    bridge.in_unit_of_work(first)
    db.execute(
        "UPDATE idempotency_records SET created_at = now() - interval '25 hours' "
        "WHERE installation_id = %s AND key = 'raced'",
        (tenant.installation_id,),
    )

    async def second(session: Any) -> None:
        await store(session, claimed(tenant, "second"), 201, b'{"second": true}')

    bridge.in_unit_of_work(second)
    assert stored_answer(db, tenant) == ("second", 201)
