"""The client's main flows against the real service: typed objects, the marketplace walk (a distributed
payment, its capture, transfers and a refund through real workers), lists that follow the cursor,
errors as typed exceptions, the async client."""

from __future__ import annotations

import asyncio
import time

import pytest

from moneyrail_client import (
    API_VERSION,
    APIConnectionError,
    AsyncMoneyrail,
    AuthenticationError,
    CardDeclinedError,
    InvalidRequestError,
    Moneyrail,
    NotFoundError,
    RetryPolicy,
    models,
)
from tests.client.conftest import Recorder
from tests.harness import free_port

CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}
DECLINED = {**CARD, "number": "4000000000009995"}


def test_a_customer_is_created_and_read_as_a_typed_object(client: Moneyrail) -> None:
    customer = client.customers.create(email="ada@example.com", external_reference="user-42", name="Ada")
    assert isinstance(customer, models.CustomerOut)
    assert customer.id.startswith("cus_") and customer.email == "ada@example.com"
    assert client.customers.retrieve(customer.id) == customer
    # a second create with the same reference answers the same customer (the service's rule)
    assert client.customers.create(external_reference="user-42").id == customer.id


def test_a_marketplace_payment_is_distributed_captured_and_refunded(make_client, client_stack) -> None:
    client = make_client(kind="platform")
    courier = client.connected_accounts.create(
        kind="courier", external_account={"account_number": "DE89370400440532013000"}
    )
    shop = client.connected_accounts.create(
        kind="merchant", external_account={"account_number": "DE89370400440532013000"}
    )
    payment = client.payment_intents.create(
        amount=2500,
        currency="eur",
        capture_method="manual",
        distribution={
            "merchant_of_record": shop.id,
            "allocations": [
                {"recipient": shop.id, "role": "merchant", "amount": 2000},
                {"recipient": courier.id, "role": "courier", "amount": 500},
            ],
        },
    )
    assert payment.status == "requires_payment_method"
    assert payment.client_secret is not None
    authorized = client.payment_intents.confirm(payment.id, client_secret=payment.client_secret, card=CARD)
    assert authorized.status == "requires_capture"
    captured = client.payment_intents.capture(payment.id)
    assert captured.status == "succeeded"

    transfers = wait_for_transfers(client, payment.id, 2)
    group = client.allocation_groups.retrieve(transfers[0].allocation_group)
    assert group.operation is not None
    assert client.operations.wait(group.operation, timeout=30).status == "succeeded"
    paid = {
        transfer.destination: transfer.amount
        for transfer in client.transfers.list(source_transaction=payment.id)
    }
    assert paid == {shop.id: 2000, courier.id: 500}

    refund = client.refunds.create(payment_intent=payment.id, amount=300)
    assert refund.operation is not None
    assert client.operations.wait(refund.operation, timeout=30).status == "succeeded"
    assert client.refunds.retrieve(refund.id).status == "succeeded"
    assert [r.id for r in client.refunds.list(payment_intent=payment.id)] == [refund.id]


def wait_for_transfers(client: Moneyrail, payment_id: str, count: int) -> list[models.TransferOut]:
    """The transfers the capture's commit made, once it made them (a worker's work, within seconds)."""
    deadline = time.monotonic() + 30
    while len(found := list(client.transfers.list(source_transaction=payment_id))) < count:
        assert time.monotonic() < deadline, found
        time.sleep(0.1)
    return found


def test_a_list_follows_its_cursor_through_every_page(client: Moneyrail) -> None:
    made = [client.customers.create(email=f"c{n}@example.com").id for n in range(5)]
    pager = client.customers.list(limit=2)
    assert [customer.id for customer in pager] == list(reversed(made))  # newest first, all 5
    pages = list(client.customers.list(limit=2).pages())
    assert [len(page.data) for page in pages] == [2, 2, 1]
    assert pages[-1].has_more is False and pages[0].next_cursor


def test_a_declined_card_is_its_own_exception_with_the_decline_code(client: Moneyrail) -> None:
    payment = client.payment_intents.create(amount=1500, currency="eur")
    assert payment.client_secret is not None
    with pytest.raises(CardDeclinedError) as raised:
        client.payment_intents.confirm(payment.id, client_secret=payment.client_secret, card=DECLINED)
    error = raised.value
    assert error.http_status == 402 and error.type == "card_error" and error.code == "card_declined"
    assert error.decline_code == "insufficient_funds"
    assert error.request_id and error.request_id.startswith("req_")


def test_an_error_carries_its_type_code_param_request_id_and_status(client: Moneyrail) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        client.payment_intents.create(amount=-5, currency="eur")
    error = raised.value
    assert (error.http_status, error.type, error.param) == (400, "invalid_request_error", "amount")
    assert error.code and error.message and error.request_id and error.request_id.startswith("req_")
    with pytest.raises(NotFoundError) as missing:
        client.customers.retrieve("cus_000000000000000000000000")
    assert (missing.value.http_status, missing.value.code) == (404, "resource_missing")


def test_a_live_key_on_a_sandbox_only_call_gets_the_services_error_typed(make_client) -> None:
    live = make_client(livemode=True)
    with pytest.raises(NotFoundError) as raised:
        live.test_helpers.advance_clock(seconds=60)
    assert raised.value.http_status == 404 and raised.value.request_id


def test_a_wrong_key_is_an_authentication_error(web) -> None:
    with (
        Moneyrail(api_key="sk_test_not_a_key", base_url=web.base_url) as client,
        pytest.raises(AuthenticationError),
    ):
        client.account.retrieve()


def test_every_call_names_the_version_and_every_post_an_idempotency_key_that_replays(make_client) -> None:
    recorder = Recorder()
    client = make_client(http_client=recorder.http_client())
    first = client.payment_intents.create(amount=700, currency="eur", idempotency_key="order-7")
    again = client.payment_intents.create(amount=700, currency="eur", idempotency_key="order-7")
    client.payment_intents.create(amount=700, currency="eur")
    client.payment_intents.retrieve(first.id)
    assert again.id == first.id and recorder.replayed[:2] == [False, True]
    assert {request.headers["Service-Version"] for request in recorder.requests} == {API_VERSION}
    posts = [request for request in recorder.requests if request.method == "POST"]
    assert [request.headers["Idempotency-Key"] for request in posts[:2]] == ["order-7", "order-7"]
    assert posts[2].headers["Idempotency-Key"] not in {"order-7", ""}
    assert "Idempotency-Key" not in recorder.requests[-1].headers  # a GET


def test_the_async_client_does_the_same(web, make_client) -> None:
    keys = make_client().keys

    async def walk() -> tuple[list[str], list[str], int]:
        async with AsyncMoneyrail(api_key=keys.secret, base_url=web.base_url) as client:
            made = [(await client.customers.create(email=f"a{n}@example.com")).id for n in range(3)]
            listed = [customer.id async for customer in client.customers.list(limit=2)]
            try:
                await client.customers.retrieve("cus_000000000000000000000000")
            except NotFoundError as error:
                return made, listed, error.http_status
            raise AssertionError("no error")

    made, listed, status = asyncio.run(walk())
    assert listed == list(reversed(made)) and status == 404


def test_an_unreachable_service_is_a_connection_error_after_the_retries() -> None:
    recorder = Recorder()
    policy = RetryPolicy(max_retries=2, initial_delay=0.01)
    with (
        Moneyrail(
            api_key="sk_test_x",
            base_url=f"http://127.0.0.1:{free_port()}",
            retry_policy=policy,
            http_client=recorder.http_client(),
        ) as client,
        pytest.raises(APIConnectionError),
    ):
        client.customers.create(email="nobody@example.com")
    assert len(recorder.requests) == 3  # the first attempt and two retries
    assert len({request.headers["Idempotency-Key"] for request in recorder.requests}) == 1
