"""The synchronous client, `Moneyrail`.

Generated from moneyrail's async_client.py by clients/python/generate.py: do not edit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel
from typing_extensions import Unpack

from moneyrail_client import models as m
from moneyrail_client import params as p
from moneyrail_client.core import (
    API_KEY_VARIABLE,
    BASE_URL_VARIABLE,
    DEFAULT_BASE_URL,
    IDEMPOTENT_METHODS,
    TERMINAL_OPERATION_STATUSES,
    RetryPolicy,
    answer_of,
    error_of,
    new_idempotency_key,
    query_of,
    request_headers,
)
from moneyrail_client.errors import APIConnectionError, MoneyrailError, OperationTimeoutError

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class ListPage(Generic[ModelT]):
    """One page of a list: `data`, newest first, and the cursor of the next page."""

    data: list[ModelT]
    has_more: bool
    next_cursor: str | None


class Pager(Generic[ModelT]):
    """A list that follows its cursor: iterating it yields every object, page after page, fetched as
    needed (`for payment in client.payment_intents.list(limit=100)`)."""

    def __init__(self, client: Moneyrail, path: str, model: type[ModelT], params: Mapping[str, Any]) -> None:
        self._client = client
        self._path = path
        self._model = model
        self._params = query_of(params)

    def __iter__(self) -> Iterator[ModelT]:
        return self._objects()

    def _objects(self) -> Iterator[ModelT]:
        for page in self.pages():
            for item in page.data:
                yield item

    def pages(self) -> Iterator[ListPage[ModelT]]:
        """Every page, from the first."""
        cursor = self._params.get("cursor")
        while True:
            page = self._page(cursor)
            yield page
            if not page.has_more or not page.next_cursor:
                return
            cursor = page.next_cursor

    def first_page(self) -> ListPage[ModelT]:
        return self._page(self._params.get("cursor"))

    def _page(self, cursor: str | None) -> ListPage[ModelT]:
        body = self._client.request("GET", self._path, params={**self._params, "cursor": cursor})
        return ListPage(
            data=[self._model.model_validate(item) for item in body["data"]],
            has_more=bool(body.get("has_more")),
            next_cursor=body.get("next_cursor"),
        )


class Resource:
    def __init__(self, client: Moneyrail) -> None:
        self._client = client

    def _get(self, path: str, model: type[ModelT], params: Mapping[str, Any] | None = None) -> ModelT:
        return model.model_validate(self._client.request("GET", path, params=params))

    def _post(
        self,
        path: str,
        model: type[ModelT],
        body: Mapping[str, Any] | None,
        idempotency_key: str | None,
        api_key: str | None = None,
    ) -> ModelT:
        answer = self._client.request(
            "POST", path, json=body, idempotency_key=idempotency_key, api_key=api_key
        )
        return model.model_validate(answer)

    def _delete(self, path: str, model: type[ModelT], idempotency_key: str | None) -> ModelT:
        return model.model_validate(self._client.request("DELETE", path, idempotency_key=idempotency_key))

    def _list(self, path: str, model: type[ModelT], **params: Any) -> Pager[ModelT]:
        return Pager(self._client, path, model, params)


class Account(Resource):
    def retrieve(self) -> m.AccountOut:
        return self._get("/v1/account", m.AccountOut)


class Balance(Resource):
    def retrieve(self) -> m.BalanceOut:
        return self._get("/v1/balance", m.BalanceOut)


class Customers(Resource):
    def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.CustomerCreate]
    ) -> m.CustomerOut:
        return self._post("/v1/customers", m.CustomerOut, params, idempotency_key)

    def retrieve(self, customer: str) -> m.CustomerOut:
        return self._get(f"/v1/customers/{customer}", m.CustomerOut)

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Pager[m.CustomerOut]:
        return self._list("/v1/customers", m.CustomerOut, limit=limit, cursor=cursor)


class PaymentIntents(Resource):
    def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.PaymentIntentCreate]
    ) -> m.PaymentIntentOut:
        return self._post("/v1/payment-intents", m.PaymentIntentOut, params, idempotency_key)

    def retrieve(self, payment_intent: str) -> m.PaymentIntentOut:
        return self._get(f"/v1/payment-intents/{payment_intent}", m.PaymentIntentOut)

    def list(
        self, *, customer: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Pager[m.PaymentIntentOut]:
        return self._list(
            "/v1/payment-intents", m.PaymentIntentOut, customer=customer, limit=limit, cursor=cursor
        )

    def update(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.PaymentIntentUpdate],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/update"
        return self._post(path, m.PaymentIntentOut, params, idempotency_key)

    def confirm(
        self,
        payment_intent: str,
        *,
        publishable_key: str | None = None,
        idempotency_key: str | None = None,
        **params: Unpack[p.PaymentIntentConfirm],
    ) -> m.PaymentIntentOut:
        """Confirm as the payer's side does: with the publishable key and the payment's `client_secret`
        (a raw `card` in the sandbox only). Without `publishable_key`, the payment's own is used."""
        if publishable_key is None:
            publishable_key = self._client.publishable_key
        if publishable_key is None:
            publishable_key = (self.retrieve(payment_intent)).publishable_key
        path = f"/v1/payment-intents/{payment_intent}/confirm"
        return self._post(path, m.PaymentIntentOut, params, idempotency_key, api_key=publishable_key)

    def capture(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.PaymentIntentCapture],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/capture"
        return self._post(path, m.PaymentIntentOut, params, idempotency_key)

    def cancel(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.PaymentIntentCancel],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/cancel"
        return self._post(path, m.PaymentIntentOut, params, idempotency_key)

    def increment_authorization(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.IncrementAuthorization],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/increment-authorization"
        return self._post(path, m.PaymentIntentOut, params, idempotency_key)


class Refunds(Resource):
    def create(self, *, idempotency_key: str | None = None, **params: Unpack[p.RefundCreate]) -> m.RefundOut:
        return self._post("/v1/refunds", m.RefundOut, params, idempotency_key)

    def retrieve(self, refund: str) -> m.RefundOut:
        return self._get(f"/v1/refunds/{refund}", m.RefundOut)

    def list(
        self, *, payment_intent: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Pager[m.RefundOut]:
        return self._list(
            "/v1/refunds", m.RefundOut, payment_intent=payment_intent, limit=limit, cursor=cursor
        )


class AllocationGroups(Resource):
    def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.AllocationGroupCreate]
    ) -> m.AllocationGroupOut:
        return self._post("/v1/allocation-groups", m.AllocationGroupOut, params, idempotency_key)

    def retrieve(self, allocation_group: str) -> m.AllocationGroupOut:
        return self._get(f"/v1/allocation-groups/{allocation_group}", m.AllocationGroupOut)

    def add_allocation(
        self,
        allocation_group: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.AllocationCreate],
    ) -> m.AllocationGroupOut:
        path = f"/v1/allocation-groups/{allocation_group}/allocations"
        return self._post(path, m.AllocationGroupOut, params, idempotency_key)

    def commit(
        self,
        allocation_group: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.AllocationGroupCommit],
    ) -> m.OperationOut:
        """Commit the allocations as transfers: answers the operation that carries them out."""
        path = f"/v1/allocation-groups/{allocation_group}/commit"
        return self._post(path, m.OperationOut, params, idempotency_key)


class Transfers(Resource):
    def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.TransferCreate]
    ) -> m.TransferOut:
        return self._post("/v1/transfers", m.TransferOut, params, idempotency_key)

    def retrieve(self, transfer: str) -> m.TransferOut:
        return self._get(f"/v1/transfers/{transfer}", m.TransferOut)

    def list(
        self,
        *,
        destination: str | None = None,
        allocation_group: str | None = None,
        source_transaction: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Pager[m.TransferOut]:
        return self._list(
            "/v1/transfers",
            m.TransferOut,
            destination=destination,
            allocation_group=allocation_group,
            source_transaction=source_transaction,
            limit=limit,
            cursor=cursor,
        )

    def create_reversal(
        self, transfer: str, *, idempotency_key: str | None = None, **params: Unpack[p.ReversalCreate]
    ) -> m.ReversalOut:
        path = f"/v1/transfers/{transfer}/reversals"
        return self._post(path, m.ReversalOut, params, idempotency_key)


class Payouts(Resource):
    """The installation's own payouts (a direct installation); a connected account's are under
    `connected_accounts`. Both are read here."""

    def create(self, *, idempotency_key: str | None = None, **params: Unpack[p.PayoutCreate]) -> m.PayoutOut:
        return self._post("/v1/payouts", m.PayoutOut, params, idempotency_key)

    def retrieve(self, payout: str) -> m.PayoutOut:
        return self._get(f"/v1/payouts/{payout}", m.PayoutOut)

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Pager[m.PayoutOut]:
        return self._list("/v1/payouts", m.PayoutOut, limit=limit, cursor=cursor)

    def cancel(self, payout: str, *, idempotency_key: str | None = None) -> m.PayoutOut:
        return self._post(f"/v1/payouts/{payout}/cancel", m.PayoutOut, None, idempotency_key)

    def reverse(
        self, payout: str, *, idempotency_key: str | None = None, **params: Unpack[p.PayoutReverse]
    ) -> m.PayoutOut:
        return self._post(f"/v1/payouts/{payout}/reverse", m.PayoutOut, params, idempotency_key)


class ConnectedAccounts(Resource):
    def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.ConnectedAccountCreate]
    ) -> m.ConnectedAccountOut:
        return self._post("/v1/connected-accounts", m.ConnectedAccountOut, params, idempotency_key)

    def retrieve(self, connected_account: str) -> m.ConnectedAccountOut:
        return self._get(f"/v1/connected-accounts/{connected_account}", m.ConnectedAccountOut)

    def list(
        self, *, kind: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Pager[m.ConnectedAccountOut]:
        return self._list(
            "/v1/connected-accounts", m.ConnectedAccountOut, kind=kind, limit=limit, cursor=cursor
        )

    def requirements(self, connected_account: str) -> m.AccountRequirementsOut:
        path = f"/v1/connected-accounts/{connected_account}/requirements"
        return self._get(path, m.AccountRequirementsOut)

    def create_onboarding_link(
        self,
        connected_account: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.OnboardingLinkCreate],
    ) -> m.OnboardingLinkOut:
        path = f"/v1/connected-accounts/{connected_account}/onboarding-links"
        return self._post(path, m.OnboardingLinkOut, params, idempotency_key)

    def balance(self, connected_account: str) -> m.ConnectedAccountBalanceOut:
        path = f"/v1/connected-accounts/{connected_account}/balance"
        return self._get(path, m.ConnectedAccountBalanceOut)

    def create_payout(
        self, connected_account: str, *, idempotency_key: str | None = None, **params: Unpack[p.PayoutCreate]
    ) -> m.PayoutOut:
        path = f"/v1/connected-accounts/{connected_account}/payouts"
        return self._post(path, m.PayoutOut, params, idempotency_key)

    def list_payouts(
        self, connected_account: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Pager[m.PayoutOut]:
        path = f"/v1/connected-accounts/{connected_account}/payouts"
        return self._list(path, m.PayoutOut, limit=limit, cursor=cursor)


class WebhookEndpoints(Resource):
    def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.WebhookEndpointCreate]
    ) -> m.WebhookEndpointOut:
        """Register an endpoint; the answer carries its signing `secret`, once."""
        return self._post("/v1/webhook-endpoints", m.WebhookEndpointOut, params, idempotency_key)

    def retrieve(self, webhook_endpoint: str) -> m.WebhookEndpointOut:
        return self._get(f"/v1/webhook-endpoints/{webhook_endpoint}", m.WebhookEndpointOut)

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Pager[m.WebhookEndpointOut]:
        return self._list("/v1/webhook-endpoints", m.WebhookEndpointOut, limit=limit, cursor=cursor)

    def update(
        self,
        webhook_endpoint: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.WebhookEndpointUpdate],
    ) -> m.WebhookEndpointOut:
        path = f"/v1/webhook-endpoints/{webhook_endpoint}"
        return self._post(path, m.WebhookEndpointOut, params, idempotency_key)

    def delete(self, webhook_endpoint: str, *, idempotency_key: str | None = None) -> m.DeletedOut:
        return self._delete(f"/v1/webhook-endpoints/{webhook_endpoint}", m.DeletedOut, idempotency_key)

    def rotate_secret(
        self,
        webhook_endpoint: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.SecretRotation],
    ) -> m.WebhookEndpointOut:
        path = f"/v1/webhook-endpoints/{webhook_endpoint}/rotate-secret"
        return self._post(path, m.WebhookEndpointOut, params, idempotency_key)


class Events(Resource):
    def retrieve(self, event: str) -> m.EventOut:
        return self._get(f"/v1/events/{event}", m.EventOut)

    def list(
        self, *, type: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Pager[m.EventOut]:
        return self._list("/v1/events", m.EventOut, type=type, limit=limit, cursor=cursor)


class Operations(Resource):
    def retrieve(self, operation: str) -> m.OperationOut:
        return self._get(f"/v1/operations/{operation}", m.OperationOut)

    def wait(self, operation: str, *, timeout: float = 60.0, interval: float = 0.25) -> m.OperationOut:
        """Poll the operation until it is final (`succeeded`, `failed`, `dead_letter` or `canceled`) and
        answer it; OperationTimeoutError when it is not within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            current = self.retrieve(operation)
            if current.status in TERMINAL_OPERATION_STATUSES:
                return current
            if time.monotonic() >= deadline:
                raise OperationTimeoutError(
                    f"operation {operation} is still {current.status} after {timeout} s", operation=current
                )
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


class TestHelpers(Resource):
    """The sandbox's helpers (a live key gets 404)."""

    def clock(self) -> m.ClockOut:
        return self._get("/v1/test-helpers/clock", m.ClockOut)

    def advance_clock(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.ClockAdvance]
    ) -> m.ClockOut:
        """Move the installation's sandbox clock on, running what fell due (fee reports, payout arrivals)."""
        return self._post("/v1/test-helpers/clock/advance", m.ClockOut, params, idempotency_key)


class Moneyrail:
    """The moneyrail API for one key: `Moneyrail(api_key="sk_test_…", base_url="https://…")`.

    `api_key` defaults to $MONEYRAIL_API_KEY and `base_url` to $MONEYRAIL_BASE_URL (else
    http://127.0.0.1:8000, where `moneyrail dev` listens). `max_retries` bounds the retries of one call
    (RetryPolicy says which answers are retried); `timeout` is each attempt's, in seconds.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        max_retries: int = 3,
        timeout: float | httpx.Timeout = 30.0,
        retry_policy: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        key = api_key or os.environ.get(API_KEY_VARIABLE)
        if not key:
            raise MoneyrailError(f"no API key: pass api_key=… or set {API_KEY_VARIABLE}")
        self.api_key = key
        self.base_url = (base_url or os.environ.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL).rstrip("/")
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._http = http_client or httpx.Client(timeout=timeout)
        self.account = Account(self)
        self.balance = Balance(self)
        self.customers = Customers(self)
        self.payment_intents = PaymentIntents(self)
        self.refunds = Refunds(self)
        self.allocation_groups = AllocationGroups(self)
        self.transfers = Transfers(self)
        self.payouts = Payouts(self)
        self.connected_accounts = ConnectedAccounts(self)
        self.webhook_endpoints = WebhookEndpoints(self)
        self.events = Events(self)
        self.operations = Operations(self)
        self.test_helpers = TestHelpers(self)

    @property
    def publishable_key(self) -> str | None:
        """The client's own key when it is a publishable one (`pk_…`)."""
        return self.api_key if self.api_key.startswith("pk_") else None

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        api_key: str | None = None,
    ) -> Any:
        """Any call of the API, answered as parsed JSON: the resources above are built on it.

        A POST or DELETE gets an `Idempotency-Key` (`idempotency_key`, else a new one) that every retry
        of this call repeats."""
        method = method.upper()
        headers = request_headers(api_key or self.api_key)
        if method in IDEMPOTENT_METHODS:
            headers["Idempotency-Key"] = idempotency_key or new_idempotency_key()
        url = self.base_url + path
        query = query_of(params)
        body = dict(json) if json is not None else None
        attempt = 0
        while True:
            try:
                response = self._http.request(method, url, json=body, params=query, headers=headers)
            except httpx.TransportError as failure:  # refused, reset, timed out: no answer
                delay = self.retry_policy.delay_after_no_answer(attempt)
                if delay is None:
                    raise APIConnectionError(
                        f"{method} {path}: no answer from {self.base_url} after {attempt + 1} attempts: "
                        f"{type(failure).__name__}: {failure}"
                    ) from failure
            else:
                if response.is_success:
                    return answer_of(response)
                error = error_of(response)
                delay = self.retry_policy.delay_after_error(attempt, response, error)
                if delay is None:
                    raise error
            time.sleep(delay)
            attempt += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Moneyrail:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
