"""Authorizations and captures: the answers of the single calls, the off-session batch, the cost."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.processor import cards
from moneyrail.processor.interface import (
    Authorization,
    Capture,
    ChargeAnswer,
    OffSessionCharge,
    ProcessorRefused,
)

from . import statements as sql
from .books import Answer, AnsweredConcurrently, Books, dumps, json_value, keyed, sandbox_id

# The network's processing cost of a captured payment: 2.9 % plus 30 minor units, rounded up.
COST_BASIS_POINTS = 290
COST_FIXED_AMOUNT = 30


def processing_cost(amount_captured: int) -> int:
    # integer ceiling: a float product loses cents on large amounts
    return -(-amount_captured * COST_BASIS_POINTS // 10_000) + COST_FIXED_AMOUNT


def authorize_answer(
    tenant: Tenant,
    card_token: str,
    amount: int,
    currency: str,
    reference: str,
    off_session: bool,
    *,
    saves_card: bool = False,
) -> Answer:
    async def answer(books: Books) -> dict[str, Any]:
        if amount < 0:
            raise ProcessorRefused("amount_invalid", "The amount must not be negative.")
        behaviour = await books.connection.fetchval(
            sql.CARD_BEHAVIOUR, card_token, tenant.installation_id, tenant.livemode
        )
        if behaviour is None:  # another tenant's token looks exactly like an unknown one
            raise ProcessorRefused("no_such_card", "No such card: the token is unknown.")
        status, decline_code = cards.authorization_outcome(
            behaviour, amount, off_session=off_session, saves_card=saves_card
        )
        authorization_id = sandbox_id("sbx_auth")
        await books.connection.execute(
            sql.INSERT_AUTHORIZATION,
            authorization_id,
            tenant.installation_id,
            tenant.livemode,
            card_token,
            amount,
            currency,
            status,
            decline_code,
            reference,
        )
        return authorization_answer(authorization_id, status, amount, currency, decline_code)

    return answer


def capture_answer(tenant: Tenant, authorization_id: str, amount: int) -> Answer:
    async def answer(books: Books) -> dict[str, Any]:
        row = await books.locked_for("capture", authorization_id)
        if amount < 1:
            raise ProcessorRefused("amount_invalid", "The amount to capture must be at least 1.")
        if amount > row["amount"]:
            raise ProcessorRefused(
                "amount_too_large", f"At most {row['amount']} can be captured on this authorization."
            )
        # the tenant's clock came with the row: no second round trip for it
        offset = 0 if tenant.livemode else row["clock_offset_seconds"]  # as tenant_now: live is real time
        captured_at = utcnow() + timedelta(seconds=offset)
        await books.connection.execute(sql.CAPTURE, authorization_id, amount, captured_at)
        return {
            "authorization_id": authorization_id,
            "amount_captured": amount,
            "captured_at": captured_at.isoformat(),
        }

    return answer


async def charge_at_once(
    books: Books, tenant: Tenant, charges: Sequence[OffSessionCharge]
) -> list[ChargeAnswer] | None:
    """The usual batch in four statements: no key asked before (nothing to replay), no fault waiting
    for an authorization or a capture, every card known and every amount positive. Each charge gets
    the rows and the recorded calls `charge_one` would write for it alone; None (nothing written) when
    the batch is not that usual one, and `charge_one` answers each in turn."""
    keys = [charge.idempotency_key for charge in charges]
    tokens = list({charge.card_token for charge in charges})
    state = await books.connection.fetchrow(
        sql.BATCH_STATE, tenant.installation_id, tenant.livemode, keys, tokens
    )
    if state["stored"] or state["faulted"] or any(charge.amount < 1 for charge in charges):
        return None
    behaviours = dict(json_value(state["behaviours"]) or {})
    if any(charge.card_token not in behaviours for charge in charges):
        return None
    captured_at = utcnow() + timedelta(seconds=0 if tenant.livemode else state["offset_seconds"])
    answers: list[ChargeAnswer] = []
    rows: list[tuple[Any, ...]] = []  # authorizations
    calls: list[tuple[str, str, str, str]] = []  # key, operation type, request, response
    for charge in charges:
        status, decline_code = cards.authorization_outcome(
            behaviours[charge.card_token], charge.amount, off_session=True
        )
        authorization_id = sandbox_id("sbx_auth")
        authorized = authorization_answer(
            authorization_id, status, charge.amount, charge.currency, decline_code
        )
        request = {
            "card": charge.card_fingerprint,
            "amount": charge.amount,
            "currency": charge.currency,
            "off_session": True,
            "reference": charge.reference,
        }
        calls.append((charge.idempotency_key, "authorize", dumps(request), dumps(authorized)))
        capture: Capture | None = None
        if status == "authorized" and charge.capture_key is not None:
            capture = Capture(authorization_id, charge.amount)
            calls.append(
                (
                    charge.capture_key(authorization_id),
                    "capture",
                    dumps({"authorization_id": authorization_id, "amount": charge.amount}),
                    dumps({"authorization_id": authorization_id, "amount_captured": charge.amount}),
                )
            )
        rows.append(
            (
                authorization_id,
                charge.card_token,
                charge.amount,
                charge.currency,
                "captured" if capture is not None else status,
                decline_code,
                charge.reference,
                charge.amount if capture is not None else 0,
                captured_at if capture is not None else None,
            )
        )
        answers.append(ChargeAnswer(authorization_from(authorized), capture))
    await books.connection.execute(
        sql.INSERT_AUTHORIZATIONS,
        tenant.installation_id,
        tenant.livemode,
        *map(list, zip(*rows, strict=True)),
    )
    recorded = await books.connection.fetchval(
        sql.RECORD_CALLS, tenant.installation_id, tenant.livemode, *map(list, zip(*calls, strict=True))
    )
    if recorded != len(calls):  # a concurrent call with one of these keys answered first
        raise AnsweredConcurrently
    return answers


async def charge_one(books: Books, tenant: Tenant, charge: OffSessionCharge) -> ChargeAnswer:
    """One charge of a batch: authorize, and capture what was authorized when asked (as the single
    path asks `authorize` then `capture`, with the same keys and requests)."""
    request = {
        "card": charge.card_fingerprint,
        "amount": charge.amount,
        "currency": charge.currency,
        "off_session": True,
        "reference": charge.reference,
    }
    answer = authorize_answer(
        tenant, charge.card_token, charge.amount, charge.currency, charge.reference, True
    )
    try:
        authorization = authorization_from(
            await keyed(books, "authorize", charge.idempotency_key, request, answer)
        )
    except ProcessorRefused as refused:
        return ChargeAnswer(refused, None)
    if authorization.status != "authorized" or charge.capture_key is None:
        return ChargeAnswer(authorization, None)
    capture_request = {"authorization_id": authorization.id, "amount": charge.amount}
    try:
        captured = await keyed(
            books,
            "capture",
            charge.capture_key(authorization.id),
            capture_request,
            capture_answer(tenant, authorization.id, charge.amount),
        )
    except ProcessorRefused as refused:
        return ChargeAnswer(authorization, refused)
    return ChargeAnswer(authorization, capture_from(captured))


def authorization_answer(
    authorization_id: str, status: str, amount: int, currency: str, decline_code: str | None
) -> dict[str, Any]:
    return {
        "id": authorization_id,
        "status": status,
        "amount": amount,
        "currency": currency,
        "decline_code": decline_code,
    }


def capture_from(answer: dict[str, Any]) -> Capture:
    # an answer recorded before captures said when (and a batch's) has no `captured_at`
    captured_at = answer.get("captured_at")
    return Capture(
        answer["authorization_id"],
        answer["amount_captured"],
        datetime.fromisoformat(captured_at) if captured_at is not None else None,
    )


def authorization_from(answer: dict[str, Any]) -> Authorization:
    return Authorization(
        id=answer["id"],
        status=answer["status"],
        amount=answer["amount"],
        currency=answer["currency"],
        decline_code=answer["decline_code"],
    )
