"""A web process remembers the environment's value lists between confirmations (risk/service.py):
a list changed through another process takes effect within the lifetime, one changed through this
process at once. Two real web processes over HTTP: the session's, and one remembering for LIFETIME."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from moneyrail.risk import service as risk_service
from tests.harness import TLS, Servers
from tests.helpers import assert_error
from tests.payments.support import SUCCEEDS, confirm, create_payment
from tests.web_process import another_web_process

from .test_risk import value_list

LIFETIME = 2.0  # seconds: MONEYRAIL_KEY_CACHE_SECONDS of the second process
LISTED = "late@example.com"


@pytest.fixture(scope="module")
def other_web(servers: Servers) -> Iterator[str]:
    with another_web_process(
        servers, "web-remembered-lists", MONEYRAIL_KEY_CACHE_SECONDS=str(LIFETIME)
    ) as base_url:
        yield base_url


def status_of_a_payment_by(client: httpx.Client) -> tuple[int, str | None]:
    """Create and confirm a payment whose receipt e-mail is LISTED (or about to be)."""
    response = confirm(client, create_payment(client, 1500, receipt_email=LISTED), SUCCEEDS)
    if response.status_code == 402:
        return 402, assert_error(response, 402, "card_declined")["decline_code"]
    assert response.status_code == 200, response.text
    return 200, response.json()["status"]


def test_a_list_changed_elsewhere_applies_within_the_lifetime_and_here_at_once(api, other_web):
    blocking = value_list(api, "email", "block")  # no items yet: nothing is blocked
    with httpx.Client(
        base_url=other_web, headers={"Authorization": f"Bearer {api.keys.secret}"}, timeout=30, verify=TLS
    ) as other:
        # both processes read the lists on a confirmation and remember them
        assert status_of_a_payment_by(api) == (200, "succeeded")
        assert status_of_a_payment_by(other) == (200, "succeeded")
        read_by_other = time.monotonic()

        added = api.post(f"/v1/radar/value-lists/{blocking['id']}/items", json={"value": LISTED})
        assert added.status_code == 200, added.text
        changed = time.monotonic()

        # the process the change went through matches it at once
        assert status_of_a_payment_by(api) == (402, "fraudulent")
        # the other still answers from what it read, while that is younger than the lifetime (the check
        # means something only when this machine got here within it)
        seen = status_of_a_payment_by(other)
        if time.monotonic() - read_by_other < LIFETIME * 0.8:
            assert seen == (200, "succeeded"), "the other process read the lists again before the lifetime"

        # and no later than the lifetime after the change, the other process blocks it too
        time.sleep(max(0.0, changed + LIFETIME + 0.2 - time.monotonic()))
        assert status_of_a_payment_by(other) == (402, "fraudulent")


@pytest.mark.parametrize("bound", [100, 2])
def test_remembered_lists_match_as_the_database_does_and_too_many_items_are_asked_per_payment(
    api, bridge, monkeypatch, bound
):
    """In this process: with room for them, the lists are remembered; past REMEMBERED_ITEMS (the
    bound), each payment's values are matched in the database. Either way the same lists match."""
    monkeypatch.setattr(risk_service, "REMEMBERED_ITEMS", bound)
    reviewing = value_list(api, "email", "review", "a@example.com", "b@example.com", alias="first")
    blocking = value_list(api, "card_country", "block", "DE", alias="second")
    value_list(api, "ip_address", "block", "192.0.2.1", alias="third")
    tenant = api.keys.tenant
    values = {"email": "b@example.com", "card_country": "DE", "ip_address": "192.0.2.9"}

    async def matching(session):
        return await risk_service._matching_lists(session, tenant, values)

    matched = bridge.in_unit_of_work(matching)
    assert [(rule.id, rule.action) for rule in matched] == [
        (reviewing["id"], "review"),
        (blocking["id"], "block"),
    ]
    remembered = risk_service._remembered_lists.get(tenant)
    if bound == 2:  # four items: matched in the database, and so again for the next payment
        assert isinstance(remembered, risk_service._AskTheDatabase)
    else:
        assert isinstance(remembered, tuple) and len(remembered) == 3
    assert bridge.in_unit_of_work(matching) == matched
