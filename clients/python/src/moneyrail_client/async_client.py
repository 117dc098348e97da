"""The asynchronous client, `AsyncMoneyrail`; generate.py makes sync_client.py (`Moneyrail`) from this file.

One client per API key. Every request names the API version the models were generated from; every
POST and DELETE carries an `Idempotency-Key` (yours, or one made for the call) that each retry of that
call repeats; answers are parsed into the generated models; errors are raised as errors.py's classes.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Mapping
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


class AsyncPager(Generic[ModelT]):
    """A list that follows its cursor: iterating it yields every object, page after page, fetched as
    needed (`async for payment in client.payment_intents.list(limit=100)`)."""

    def __init__(
        self, client: AsyncMoneyrail, path: str, model: type[ModelT], params: Mapping[str, Any]
    ) -> None:
        self._client = client
        self._path = path
        self._model = model
        self._params = query_of(params)

    def __aiter__(self) -> AsyncIterator[ModelT]:
        return self._objects()

    async def _objects(self) -> AsyncIterator[ModelT]:
        async for page in self.pages():
            for item in page.data:
                yield item

    async def pages(self) -> AsyncIterator[ListPage[ModelT]]:
        """Every page, from the first."""
        cursor = self._params.get("cursor")
        while True:
            page = await self._page(cursor)
            yield page
            if not page.has_more or not page.next_cursor:
                return
            cursor = page.next_cursor

    async def first_page(self) -> ListPage[ModelT]:
        return await self._page(self._params.get("cursor"))

    async def _page(self, cursor: str | None) -> ListPage[ModelT]:
        body = await self._client.request("GET", self._path, params={**self._params, "cursor": cursor})
        return ListPage(
            data=[self._model.model_validate(item) for item in body["data"]],
            has_more=bool(body.get("has_more")),
            next_cursor=body.get("next_cursor"),
        )


class AsyncResource:
    def __init__(self, client: AsyncMoneyrail) -> None:
        self._client = client

    async def _get(self, path: str, model: type[ModelT], params: Mapping[str, Any] | None = None) -> ModelT:
        return model.model_validate(await self._client.request("GET", path, params=params))

    async def _post(
        self,
        path: str,
        model: type[ModelT],
        body: Mapping[str, Any] | None,
        idempotency_key: str | None,
        api_key: str | None = None,
    ) -> ModelT:
        answer = await self._client.request(
            "POST", path, json=body, idempotency_key=idempotency_key, api_key=api_key
        )
        return model.model_validate(answer)

    async def _delete(self, path: str, model: type[ModelT], idempotency_key: str | None) -> ModelT:
        return model.model_validate(
            await self._client.request("DELETE", path, idempotency_key=idempotency_key)
        )

    def _list(self, path: str, model: type[ModelT], **params: Any) -> AsyncPager[ModelT]:
        return AsyncPager(self._client, path, model, params)


class AsyncAccount(AsyncResource):
    async def retrieve(self) -> m.AccountOut:
        return await self._get("/v1/account", m.AccountOut)


class AsyncBalance(AsyncResource):
    async def retrieve(self) -> m.BalanceOut:
        return await self._get("/v1/balance", m.BalanceOut)


class AsyncCustomers(AsyncResource):
    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.CustomerCreate]
    ) -> m.CustomerOut:
        return await self._post("/v1/customers", m.CustomerOut, params, idempotency_key)

    async def retrieve(self, customer: str) -> m.CustomerOut:
        return await self._get(f"/v1/customers/{customer}", m.CustomerOut)

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> AsyncPager[m.CustomerOut]:
        return self._list("/v1/customers", m.CustomerOut, limit=limit, cursor=cursor)


class AsyncPaymentIntents(AsyncResource):
    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.PaymentIntentCreate]
    ) -> m.PaymentIntentOut:
        return await self._post("/v1/payment-intents", m.PaymentIntentOut, params, idempotency_key)

    async def retrieve(self, payment_intent: str) -> m.PaymentIntentOut:
        return await self._get(f"/v1/payment-intents/{payment_intent}", m.PaymentIntentOut)

    def list(
        self, *, customer: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> AsyncPager[m.PaymentIntentOut]:
        return self._list(
            "/v1/payment-intents", m.PaymentIntentOut, customer=customer, limit=limit, cursor=cursor
        )

    async def update(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.PaymentIntentUpdate],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/update"
        return await self._post(path, m.PaymentIntentOut, params, idempotency_key)

    async def confirm(
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
            publishable_key = (await self.retrieve(payment_intent)).publishable_key
        path = f"/v1/payment-intents/{payment_intent}/confirm"
        return await self._post(path, m.PaymentIntentOut, params, idempotency_key, api_key=publishable_key)

    async def capture(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.PaymentIntentCapture],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/capture"
        return await self._post(path, m.PaymentIntentOut, params, idempotency_key)

    async def cancel(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.PaymentIntentCancel],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/cancel"
        return await self._post(path, m.PaymentIntentOut, params, idempotency_key)

    async def increment_authorization(
        self,
        payment_intent: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.IncrementAuthorization],
    ) -> m.PaymentIntentOut:
        path = f"/v1/payment-intents/{payment_intent}/increment-authorization"
        return await self._post(path, m.PaymentIntentOut, params, idempotency_key)


class AsyncRefunds(AsyncResource):
    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.RefundCreate]
    ) -> m.RefundOut:
        return await self._post("/v1/refunds", m.RefundOut, params, idempotency_key)

    async def retrieve(self, refund: str) -> m.RefundOut:
        return await self._get(f"/v1/refunds/{refund}", m.RefundOut)

    def list(
        self, *, payment_intent: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> AsyncPager[m.RefundOut]:
        return self._list(
            "/v1/refunds", m.RefundOut, payment_intent=payment_intent, limit=limit, cursor=cursor
        )


class AsyncAllocationGroups(AsyncResource):
    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.AllocationGroupCreate]
    ) -> m.AllocationGroupOut:
        return await self._post("/v1/allocation-groups", m.AllocationGroupOut, params, idempotency_key)

    async def retrieve(self, allocation_group: str) -> m.AllocationGroupOut:
        return await self._get(f"/v1/allocation-groups/{allocation_group}", m.AllocationGroupOut)

    async def add_allocation(
        self,
        allocation_group: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.AllocationCreate],
    ) -> m.AllocationGroupOut:
        path = f"/v1/allocation-groups/{allocation_group}/allocations"
        return await self._post(path, m.AllocationGroupOut, params, idempotency_key)

    async def commit(
        self,
        allocation_group: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.AllocationGroupCommit],
    ) -> m.OperationOut:
        """Commit the allocations as transfers: answers the operation that carries them out."""
        path = f"/v1/allocation-groups/{allocation_group}/commit"
        return await self._post(path, m.OperationOut, params, idempotency_key)


class AsyncTransfers(AsyncResource):
    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.TransferCreate]
    ) -> m.TransferOut:
        return await self._post("/v1/transfers", m.TransferOut, params, idempotency_key)

    async def retrieve(self, transfer: str) -> m.TransferOut:
        return await self._get(f"/v1/transfers/{transfer}", m.TransferOut)

    def list(
        self,
        *,
        destination: str | None = None,
        allocation_group: str | None = None,
        source_transaction: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> AsyncPager[m.TransferOut]:
        return self._list(
            "/v1/transfers",
            m.TransferOut,
            destination=destination,
            allocation_group=allocation_group,
            source_transaction=source_transaction,
            limit=limit,
            cursor=cursor,
        )

    async def create_reversal(
        self, transfer: str, *, idempotency_key: str | None = None, **params: Unpack[p.ReversalCreate]
    ) -> m.ReversalOut:
        path = f"/v1/transfers/{transfer}/reversals"
        return await self._post(path, m.ReversalOut, params, idempotency_key)


class AsyncPayouts(AsyncResource):
    """The installation's own payouts (a direct installation); a connected account's are under
    `connected_accounts`. Both are read here."""

    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.PayoutCreate]
    ) -> m.PayoutOut:
        return await self._post("/v1/payouts", m.PayoutOut, params, idempotency_key)

    async def retrieve(self, payout: str) -> m.PayoutOut:
        return await self._get(f"/v1/payouts/{payout}", m.PayoutOut)

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> AsyncPager[m.PayoutOut]:
        return self._list("/v1/payouts", m.PayoutOut, limit=limit, cursor=cursor)

    async def cancel(self, payout: str, *, idempotency_key: str | None = None) -> m.PayoutOut:
        return await self._post(f"/v1/payouts/{payout}/cancel", m.PayoutOut, None, idempotency_key)

    async def reverse(
        self, payout: str, *, idempotency_key: str | None = None, **params: Unpack[p.PayoutReverse]
    ) -> m.PayoutOut:
        return await self._post(f"/v1/payouts/{payout}/reverse", m.PayoutOut, params, idempotency_key)


class AsyncConnectedAccounts(AsyncResource):
    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.ConnectedAccountCreate]
    ) -> m.ConnectedAccountOut:
        return await self._post("/v1/connected-accounts", m.ConnectedAccountOut, params, idempotency_key)

    async def retrieve(self, connected_account: str) -> m.ConnectedAccountOut:
        return await self._get(f"/v1/connected-accounts/{connected_account}", m.ConnectedAccountOut)

    def list(
        self, *, kind: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> AsyncPager[m.ConnectedAccountOut]:
        return self._list(
            "/v1/connected-accounts", m.ConnectedAccountOut, kind=kind, limit=limit, cursor=cursor
        )

    async def requirements(self, connected_account: str) -> m.AccountRequirementsOut:
        path = f"/v1/connected-accounts/{connected_account}/requirements"
        return await self._get(path, m.AccountRequirementsOut)

    async def create_onboarding_link(
        self,
        connected_account: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.OnboardingLinkCreate],
    ) -> m.OnboardingLinkOut:
        path = f"/v1/connected-accounts/{connected_account}/onboarding-links"
        return await self._post(path, m.OnboardingLinkOut, params, idempotency_key)

    async def balance(self, connected_account: str) -> m.ConnectedAccountBalanceOut:
        path = f"/v1/connected-accounts/{connected_account}/balance"
        return await self._get(path, m.ConnectedAccountBalanceOut)

    async def create_payout(
        self, connected_account: str, *, idempotency_key: str | None = None, **params: Unpack[p.PayoutCreate]
    ) -> m.PayoutOut:
        path = f"/v1/connected-accounts/{connected_account}/payouts"
        return await self._post(path, m.PayoutOut, params, idempotency_key)

    def list_payouts(
        self, connected_account: str, *, limit: int | None = None, cursor: str | None = None
    ) -> AsyncPager[m.PayoutOut]:
        path = f"/v1/connected-accounts/{connected_account}/payouts"
        return self._list(path, m.PayoutOut, limit=limit, cursor=cursor)


class AsyncWebhookEndpoints(AsyncResource):
    async def create(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.WebhookEndpointCreate]
    ) -> m.WebhookEndpointOut:
        """Register an endpoint; the answer carries its signing `secret`, once."""
        return await self._post("/v1/webhook-endpoints", m.WebhookEndpointOut, params, idempotency_key)

    async def retrieve(self, webhook_endpoint: str) -> m.WebhookEndpointOut:
        return await self._get(f"/v1/webhook-endpoints/{webhook_endpoint}", m.WebhookEndpointOut)

    def list(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> AsyncPager[m.WebhookEndpointOut]:
        return self._list("/v1/webhook-endpoints", m.WebhookEndpointOut, limit=limit, cursor=cursor)

    async def update(
        self,
        webhook_endpoint: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.WebhookEndpointUpdate],
    ) -> m.WebhookEndpointOut:
        path = f"/v1/webhook-endpoints/{webhook_endpoint}"
        return await self._post(path, m.WebhookEndpointOut, params, idempotency_key)

    async def delete(self, webhook_endpoint: str, *, idempotency_key: str | None = None) -> m.DeletedOut:
        return await self._delete(f"/v1/webhook-endpoints/{webhook_endpoint}", m.DeletedOut, idempotency_key)

    async def rotate_secret(
        self,
        webhook_endpoint: str,
        *,
        idempotency_key: str | None = None,
        **params: Unpack[p.SecretRotation],
    ) -> m.WebhookEndpointOut:
        path = f"/v1/webhook-endpoints/{webhook_endpoint}/rotate-secret"
        return await self._post(path, m.WebhookEndpointOut, params, idempotency_key)


class AsyncEvents(AsyncResource):
    async def retrieve(self, event: str) -> m.EventOut:
        return await self._get(f"/v1/events/{event}", m.EventOut)

    def list(
        self, *, type: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> AsyncPager[m.EventOut]:
        return self._list("/v1/events", m.EventOut, type=type, limit=limit, cursor=cursor)


class AsyncOperations(AsyncResource):
    async def retrieve(self, operation: str) -> m.OperationOut:
        return await self._get(f"/v1/operations/{operation}", m.OperationOut)

    async def wait(self, operation: str, *, timeout: float = 60.0, interval: float = 0.25) -> m.OperationOut:
        """Poll the operation until it is final (`succeeded`, `failed`, `dead_letter` or `canceled`) and
        answer it; OperationTimeoutError when it is not within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            current = await self.retrieve(operation)
            if current.status in TERMINAL_OPERATION_STATUSES:
                return current
            if time.monotonic() >= deadline:
                raise OperationTimeoutError(
                    f"operation {operation} is still {current.status} after {timeout} s", operation=current
                )
            await asyncio.sleep(min(interval, max(0.0, deadline - time.monotonic())))


class AsyncTestHelpers(AsyncResource):
    """The sandbox's helpers (a live key gets 404)."""

    async def clock(self) -> m.ClockOut:
        return await self._get("/v1/test-helpers/clock", m.ClockOut)

    async def advance_clock(
        self, *, idempotency_key: str | None = None, **params: Unpack[p.ClockAdvance]
    ) -> m.ClockOut:
        """Move the installation's sandbox clock on, running what fell due (fee reports, payout arrivals)."""
        return await self._post("/v1/test-helpers/clock/advance", m.ClockOut, params, idempotency_key)


class AsyncMoneyrail:
    """The moneyrail API for one key: `AsyncMoneyrail(api_key="sk_test_…", base_url="https://…")`.

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
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        key = api_key or os.environ.get(API_KEY_VARIABLE)
        if not key:
            raise MoneyrailError(f"no API key: pass api_key=… or set {API_KEY_VARIABLE}")
        self.api_key = key
        self.base_url = (base_url or os.environ.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL).rstrip("/")
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self.account = AsyncAccount(self)
        self.balance = AsyncBalance(self)
        self.customers = AsyncCustomers(self)
        self.payment_intents = AsyncPaymentIntents(self)
        self.refunds = AsyncRefunds(self)
        self.allocation_groups = AsyncAllocationGroups(self)
        self.transfers = AsyncTransfers(self)
        self.payouts = AsyncPayouts(self)
        self.connected_accounts = AsyncConnectedAccounts(self)
        self.webhook_endpoints = AsyncWebhookEndpoints(self)
        self.events = AsyncEvents(self)
        self.operations = AsyncOperations(self)
        self.test_helpers = AsyncTestHelpers(self)

    @property
    def publishable_key(self) -> str | None:
        """The client's own key when it is a publishable one (`pk_…`)."""
        return self.api_key if self.api_key.startswith("pk_") else None

    async def request(
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
                response = await self._http.request(method, url, json=body, params=query, headers=headers)
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
            await asyncio.sleep(delay)
            attempt += 1

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMoneyrail:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
