"""Every operation of /openapi.json has a stable `operationId` and one tag per resource, so clients
generated in other languages read well (`payment_intents_capture`, not FastAPI's
`capture_payment_intent_v1_payment_intents__payment_intent__capture_post`). The convention is in
src/moneyrail/api/openapi.py's docstring."""

from __future__ import annotations

import re
from typing import Any

import pytest

from moneyrail.app import create_app
from moneyrail.config import Settings

NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")

# The main flows' names, pinned: a generated client's method names depend on them.
PINNED = {
    ("GET", "/v1/account"): "account_retrieve",
    ("POST", "/v1/customers"): "customers_create",
    ("GET", "/v1/customers"): "customers_list",
    ("GET", "/v1/customers/{customer}"): "customers_retrieve",
    ("POST", "/v1/payment-intents"): "payment_intents_create",
    ("GET", "/v1/payment-intents"): "payment_intents_list",
    ("GET", "/v1/payment-intents/{payment_intent}"): "payment_intents_retrieve",
    ("POST", "/v1/payment-intents/{payment_intent}/update"): "payment_intents_update",
    ("POST", "/v1/payment-intents/{payment_intent}/confirm"): "payment_intents_confirm",
    ("POST", "/v1/payment-intents/{payment_intent}/capture"): "payment_intents_capture",
    ("POST", "/v1/payment-intents/{payment_intent}/cancel"): "payment_intents_cancel",
    ("POST", "/v1/refunds"): "refunds_create",
    ("GET", "/v1/refunds/{refund}"): "refunds_retrieve",
    ("GET", "/v1/balance"): "balance_retrieve",
    ("POST", "/v1/allocation-groups"): "allocation_groups_create",
    ("POST", "/v1/allocation-groups/{allocation_group}/allocations"): "allocation_groups_allocations_create",
    ("POST", "/v1/allocation-groups/{allocation_group}/commit"): "allocation_groups_commit",
    ("POST", "/v1/transfers"): "transfers_create",
    ("GET", "/v1/transfers"): "transfers_list",
    ("POST", "/v1/transfers/{transfer}/reversals"): "transfers_reversals_create",
    ("POST", "/v1/connected-accounts"): "connected_accounts_create",
    ("GET", "/v1/connected-accounts/{connected_account}/balance"): "connected_accounts_balance_retrieve",
    ("POST", "/v1/connected-accounts/{connected_account}/payouts"): "connected_accounts_payouts_create",
    ("POST", "/v1/payouts"): "payouts_create",
    ("POST", "/v1/payouts/{payout}/cancel"): "payouts_cancel",
    ("GET", "/v1/operations/{operation}"): "operations_retrieve",
    ("GET", "/v1/events"): "events_list",
    ("POST", "/v1/webhook-endpoints"): "webhook_endpoints_create",
    ("DELETE", "/v1/webhook-endpoints/{webhook_endpoint}"): "webhook_endpoints_delete",
    ("POST", "/v1/test-helpers/clock/advance"): "test_helpers_clock_advance",
    (
        "POST",
        "/v1/customer-sessions/{customer_session}/payment-methods",
    ): "customer_sessions_payment_methods_list",
    ("POST", "/v1/subscriptions"): "subscriptions_create",
    ("POST", "/commerce/v1/orders"): "commerce_orders_create",
    ("GET", "/healthz"): "health_liveness",
}


@pytest.fixture(scope="module")
def operations() -> list[tuple[str, str, dict[str, Any]]]:
    spec = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused")).openapi()
    return [
        (method.upper(), path, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
    ]


def test_every_operation_has_a_unique_name_in_the_convention(operations) -> None:
    names = [operation.get("operationId", "") for _method, _path, operation in operations]
    assert len(names) > 100
    assert len(set(names)) == len(names), sorted(name for name in names if names.count(name) > 1)
    for method, path, operation in operations:
        name = operation["operationId"]
        assert NAME.match(name), f"{method} {path}: {name!r}"
        assert "_v1_" not in name, f"FastAPI's default: {name}"


def test_every_operation_has_one_tag_that_starts_its_name(operations) -> None:
    for method, path, operation in operations:
        (tag,) = operation["tags"]
        assert operation["operationId"].startswith(tag.replace(" ", "_") + "_"), f"{method} {path}: {tag}"


def test_the_main_flows_keep_their_names(operations) -> None:
    named = {(method, path): operation["operationId"] for method, path, operation in operations}
    assert {key: named.get(key) for key in PINNED} == PINNED
