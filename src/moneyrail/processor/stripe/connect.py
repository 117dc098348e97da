"""Stripe Connect: connected accounts, transfers to them (separate charges and transfers), reversals,
payouts (the platform's, or a connected account's own, made as that account with `Stripe-Account`),
and the transfers listing that reconciliation compares with moneyrail's books.

Stripe has no batch of transfers: each transfer is its own call under its own key, the batch's calls
run together. A batch asked again under the same keys gets every transfer Stripe made the first time
back, never a second one, which is what the Protocol's "nothing was made, ask again" promises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import stripe

from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import (
    AccountHolder,
    BatchedTransfer,
    PayoutResult,
    ProcessorAccount,
    ProcessorRefused,
    ProcessorTransferRecord,
    ProcessorUnavailable,
    TransferRequest,
    TransferResult,
    TransferReversalResult,
)

from .connection import (
    PAGE_SIZE,
    StripeConnection,
    fetched,
    items,
    keyed,
    metadata,
    reference,
    tenant_metadata,
    text,
    whole,
)

CONCURRENT_CALLS = 8  # a batch's calls in flight at once (Stripe's rate limit is per account)
CHARGE_PREFIXES = ("ch_", "py_")


@dataclass(frozen=True)
class ConnectedAccount(ProcessorAccount):
    """A Stripe connected account as moneyrail keeps it (`processor_id` stays internal)."""

    country: str
    charges_enabled: bool
    payouts_enabled: bool
    details_submitted: bool


def account_of(answer: Mapping[str, Any]) -> ConnectedAccount:
    return ConnectedAccount(
        processor_id=text(answer, "id") or "",
        country=text(answer, "country") or "",
        charges_enabled=answer.get("charges_enabled") is True,
        payouts_enabled=answer.get("payouts_enabled") is True,
        details_submitted=answer.get("details_submitted") is True,
    )


async def create_connected_account(
    connection: StripeConnection,
    tenant: Tenant,
    *,
    idempotency_key: str,
    country: str,
    email: str | None = None,
    reference: str | None = None,
    bank_account: str | None = None,
    holder: AccountHolder | None = None,
) -> ConnectedAccount:
    """A Custom account that can receive transfers (`reference`: moneyrail's connected account id):
    moneyrail onboards the person on its own hosted page, so the platform holds the relationship and
    Stripe never writes to them. `bank_account` (an IBAN or account number) becomes its default
    external account, where its payouts go; `holder`, the person, as onboarded."""
    params: stripe.params.AccountCreateParams = {
        "type": "custom",
        "country": country.upper(),
        "capabilities": {"transfers": {"requested": True}},
        "metadata": tenant_metadata(tenant, **({"reference": reference} if reference else {})),
    }
    if email is not None:
        params["email"] = email
    details = account_details(country, bank_account, holder)
    if "external_account" in details:
        params["external_account"] = details["external_account"]
    if "individual" in details and "tos_acceptance" in details:
        params["business_type"] = "individual"
        params["individual"] = details["individual"]
        params["tos_acceptance"] = details["tos_acceptance"]
    return account_of(await fetched(connection.v1.accounts.create_async(params, keyed(idempotency_key))))


def account_details(
    country: str, bank_account: str | None, holder: AccountHolder | None
) -> stripe.params.AccountUpdateParams:
    """The parameters that say where an account's payouts go and who it pays, the same on its creation
    and on an update."""
    details: stripe.params.AccountUpdateParams = {}
    if bank_account:
        details["external_account"] = {
            "object": "bank_account",
            "country": country.upper(),
            "account_number": bank_account,
        }
    if holder is not None:
        details["business_type"] = "individual"
        details["individual"] = {
            "first_name": holder.first_name,
            "last_name": holder.last_name,
            "dob": {"day": holder.born.day, "month": holder.born.month, "year": holder.born.year},
        }
        accepted: stripe.params.AccountUpdateParamsTosAcceptance = {
            "date": int(holder.terms_accepted_at.timestamp())
        }
        if holder.terms_accepted_from:
            accepted["ip"] = holder.terms_accepted_from
        details["tos_acceptance"] = accepted
    return details


async def update_connected_account(
    connection: StripeConnection,
    *,
    idempotency_key: str,
    account_id: str,
    country: str,
    bank_account: str | None = None,
    holder: AccountHolder | None = None,
) -> ConnectedAccount:
    """What moneyrail learnt after the account was made: a bank account (Stripe makes it the default for
    its currency and deletes the old default) and the onboarded person."""
    details = account_details(country, bank_account, holder)
    updated = connection.v1.accounts.update_async(account_id, details, keyed(idempotency_key))
    return account_of(await fetched(updated))


async def connected_account(connection: StripeConnection, account_id: str) -> ConnectedAccount:
    return account_of(await fetched(connection.v1.accounts.retrieve_async(account_id)))


class ChargeIds:
    """The charge behind each captured payment intent a transfer draws on (`source_transaction` takes
    a charge), remembered: a transfer batch of one payment asks Stripe once."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._known: dict[str, str] = {}

    def remember(self, intent_id: str, charge_id: str) -> None:
        if len(self._known) >= self.LIMIT:
            del self._known[next(iter(self._known))]
        self._known[intent_id] = charge_id

    async def of(self, connection: StripeConnection, authorization_id: str) -> str:
        if authorization_id.startswith(CHARGE_PREFIXES):
            return authorization_id
        known = self._known.get(authorization_id)
        if known is not None:
            return known
        intent = await fetched(connection.v1.payment_intents.retrieve_async(authorization_id))
        charge = reference(intent, "latest_charge")
        if charge is None:
            raise ProcessorRefused(
                "source_not_captured", "The payment has no charge at Stripe to transfer from."
            )
        self.remember(authorization_id, charge)
        return charge


async def create_transfer(
    connection: StripeConnection,
    tenant: Tenant,
    charges: ChargeIds,
    *,
    idempotency_key: str,
    amount: int,
    currency: str,
    destination: str,
    source_authorization_id: str | None,
) -> TransferResult:
    params: stripe.params.TransferCreateParams = {
        "amount": amount,
        "currency": currency,
        "destination": destination,
        "metadata": tenant_metadata(tenant),
    }
    if source_authorization_id is not None:
        params["source_transaction"] = await charges.of(connection, source_authorization_id)
    transfer = await fetched(connection.v1.transfers.create_async(params, keyed(idempotency_key)))
    return TransferResult(
        text(transfer, "id") or "",
        whole(transfer, "amount", amount),
        text(transfer, "currency") or currency,
        reference(transfer, "destination") or destination,
    )


async def create_transfers(
    connection: StripeConnection, tenant: Tenant, charges: ChargeIds, transfers: Sequence[TransferRequest]
) -> list[BatchedTransfer]:
    """Each transfer under its own key, the calls run together. A refusal is that transfer's answer;
    an outage of any call raises once all are done (those made replay when asked again)."""
    gate = asyncio.Semaphore(CONCURRENT_CALLS)

    async def one(asked: TransferRequest) -> BatchedTransfer:
        async with gate:
            try:
                made = await create_transfer(
                    connection,
                    tenant,
                    charges,
                    idempotency_key=asked.idempotency_key,
                    amount=asked.amount,
                    currency=asked.currency,
                    destination=asked.destination,
                    source_authorization_id=asked.source_authorization_id,
                )
            except ProcessorUnavailable:
                raise
            except ProcessorRefused as refused:
                return BatchedTransfer(
                    asked.idempotency_key,
                    "refused",
                    failure_code=refused.code,
                    failure_message=refused.message,
                )
            return BatchedTransfer(asked.idempotency_key, "paid", processor_id=made.processor_id)

    answers = await asyncio.gather(*(one(asked) for asked in transfers), return_exceptions=True)
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
    return [answer for answer in answers if isinstance(answer, BatchedTransfer)]


async def reverse_transfer(
    connection: StripeConnection, tenant: Tenant, *, idempotency_key: str, transfer_id: str, amount: int
) -> TransferReversalResult:
    reversal = await fetched(
        connection.v1.transfers.reversals.create_async(
            transfer_id, {"amount": amount, "metadata": tenant_metadata(tenant)}, keyed(idempotency_key)
        )
    )
    return TransferReversalResult(text(reversal, "id") or "", transfer_id, whole(reversal, "amount", amount))


async def create_payout(
    connection: StripeConnection,
    tenant: Tenant,
    *,
    idempotency_key: str,
    amount: int,
    currency: str,
    bank_account: str,
    connected_account: str | None,
) -> PayoutResult:
    params: stripe.params.PayoutCreateParams = {
        "amount": amount,
        "currency": currency,
        "metadata": tenant_metadata(tenant),
    }
    if bank_account:
        params["destination"] = bank_account
    payout = await fetched(
        connection.v1.payouts.create_async(params, keyed(idempotency_key, account=connected_account))
    )
    return _payout(payout, amount, currency)


async def reverse_payout(
    connection: StripeConnection,
    tenant: Tenant,
    *,
    idempotency_key: str,
    payout_id: str,
    amount: int,
    currency: str,
    connected_account: str | None,
) -> PayoutResult:
    """Stripe reverses a payout whole: a different `amount` is refused before anything is asked."""
    reading: stripe.RequestOptions = (
        {} if connected_account is None else {"stripe_account": connected_account}
    )
    original = await fetched(connection.v1.payouts.retrieve_async(payout_id, None, reading))
    if whole(original, "amount") != amount:
        raise ProcessorRefused(
            "amount_invalid", f"Stripe reverses a payout whole: {whole(original, 'amount')}, not {amount}."
        )
    reversal = await fetched(
        connection.v1.payouts.reverse_async(
            payout_id,
            {"metadata": tenant_metadata(tenant)},
            keyed(idempotency_key, account=connected_account),
        )
    )
    return _payout(reversal, amount, currency)


def _payout(answer: Mapping[str, Any], amount: int, currency: str) -> PayoutResult:
    return PayoutResult(
        text(answer, "id") or "",
        whole(answer, "amount", amount),
        text(answer, "currency") or currency,
        text(answer, "status") or "pending",
    )


async def list_transfers(connection: StripeConnection, tenant: Tenant) -> list[ProcessorTransferRecord]:
    """Every transfer of the account but those another installation made on it (metadata), oldest
    first; one made outside moneyrail is listed, so reconciliation can report it."""
    params: stripe.params.TransferListParams = {"limit": PAGE_SIZE}
    found: list[tuple[int, ProcessorTransferRecord]] = []
    while True:
        page = await fetched(connection.v1.transfers.list_async(params))
        listed = items(page, "data")
        for transfer in listed:
            owner = metadata(transfer).get("installation_id")
            if owner is not None and owner != tenant.installation_id:
                continue
            amount, reversed_amount = whole(transfer, "amount"), whole(transfer, "amount_reversed")
            status = "reversed" if transfer.get("reversed") is True or reversed_amount >= amount else "paid"
            record = ProcessorTransferRecord(
                text(transfer, "id") or "",
                amount,
                text(transfer, "currency") or "",
                reference(transfer, "destination") or "",
                status,
                reversed_amount,
            )
            found.append((whole(transfer, "created"), record))
        if page.get("has_more") is not True or not listed:
            break
        params["starting_after"] = text(listed[-1], "id") or ""
    found.sort(key=lambda pair: (pair[0], pair[1].processor_id))
    return [record for _, record in found]
