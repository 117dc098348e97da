from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.idempotency import AnswerWithEffect, awaiting_created, pending_claim, with_created
from moneyrail.api.openapi import CHARGES_CARD, NEEDS_PROCESSOR
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, client_side, scoped
from moneyrail.installations import service as installations
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent
from moneyrail.payments import distribution as distributions
from moneyrail.processor.provider import processor_for
from moneyrail.web import public_base_url

from . import (
    balance,
    phases,
    refunds,
    reports,  # noqa: F401 - registers the cost reports that a sandbox clock advance collects
    service,
)
from .schemas import (
    BalanceAmount,
    BalanceOut,
    FundsFlowItem,
    IncrementAuthorization,
    PaymentIntentCancel,
    PaymentIntentCapture,
    PaymentIntentConfirm,
    PaymentIntentCreate,
    PaymentIntentOut,
    PaymentIntentUpdate,
    PaymentQuoteCreate,
    PaymentQuoteOut,
    QuoteFeesOut,
    RefundCreate,
    RefundOut,
    render_payment_intent,
    render_refund,
)

router = APIRouter(route_class=MoneyrailRoute, tags=["payments"])


async def _render(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> PaymentIntentOut:
    return render_payment_intent(
        payment,
        publishable_key=await installations.publishable_key(session, tenant),
        distribution=(await distributions.describe(session, [payment])).get(payment.id),
    )


def _answered(answer: AnswerWithEffect) -> Response:
    """A step's answer, serialized once by its last statement: the bytes stored under its key
    (`response_model` stays for /openapi.json)."""
    if answer.body is None:
        raise RuntimeError("the step returned without writing its answer")
    return Response(answer.body, media_type="application/json")


_JSON = "application/json"


def _json(answer: PaymentIntentOut) -> bytes:
    return answer.__pydantic_serializer__.to_json(answer)


@router.post("/payment-intents", response_model=PaymentIntentOut, responses=NEEDS_PROCESSOR)
async def create_payment_intent(
    request: Request,
    body: PaymentIntentCreate,
    principal: Annotated[Principal, scoped("payments:write", claim_in_statement=True)],
) -> Response:
    """Create a payment intent.

    Creates a payment in `requires_payment_method`; the payer confirms it client side or on a hosted
    checkout page. The answer carries the `client_secret`, shown once.
    """
    uow = request_uow(request)

    def answer_awaiting_created(shown: PaymentIntentOut) -> bytes:
        """The answer, serialized once before the database stamps the payment's `created` (a plain
        payment: no distribution to show): sealed into the key's record and, filled in, sent."""
        return awaiting_created(_json(shown.model_copy(update={"created": 0})))

    created = await service.create_payment_intent_answered(
        uow, principal.tenant, body, pending_claim(request), answer_awaiting_created
    )
    payment = created.payment
    if created.answer_awaiting_created is not None:  # the one statement wrote it: the same bytes as stored
        return Response(with_created(created.answer_awaiting_created, payment.created_at), media_type=_JSON)
    session = uow.session  # the transactional path made it
    shown = render_payment_intent(
        payment,
        publishable_key=await installations.publishable_key(session, principal.tenant),
        client_secret=created.client_secret,
        distribution=(await distributions.describe(session, [payment])).get(payment.id),
    )
    # serialized once, here: the same bytes as the stored answer (response_model stays for the docs)
    return Response(_json(shown), media_type=_JSON)


@router.get("/payment-intents", response_model=ListEnvelope[PaymentIntentOut])
async def list_payment_intents(
    request: Request,
    principal: Annotated[Principal, scoped("payments:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    customer: Annotated[str | None, Query(description="Only this customer's payments")] = None,
) -> ListEnvelope[PaymentIntentOut]:
    """List payment intents.

    The environment's payments, newest first, a page at a time; `customer` keeps one customer's.
    """
    session = request_session(request)
    rows = await service.list_payment_intents(
        session, principal.tenant, limit=page.limit, after=page.after, customer=customer
    )
    key = await installations.publishable_key(session, principal.tenant)
    declared = await distributions.describe(session, rows)
    return list_envelope(
        rows,
        page,
        lambda payment: render_payment_intent(
            payment, publishable_key=key, distribution=declared.get(payment.id)
        ),
    )


@router.get("/payment-intents/{payment_intent}", response_model=PaymentIntentOut)
async def get_payment_intent(
    request: Request, payment_intent: str, principal: Annotated[Principal, scoped("payments:read")]
) -> PaymentIntentOut:
    """Retrieve a payment intent.

    One payment by its `pi_` id, with its amounts, status, fees and last error.
    """
    session = request_session(request)
    payment = await service.get_payment_intent(session, principal.tenant, payment_intent)
    return await _render(session, principal.tenant, payment)


@router.post("/payment-intents/{payment_intent}/update", response_model=PaymentIntentOut)
async def update_payment_intent(
    request: Request,
    payment_intent: str,
    body: PaymentIntentUpdate,
    principal: Annotated[Principal, scoped("payments:write")],
) -> PaymentIntentOut:
    """Update a payment intent.

    Changes the amount, the card, the description, the receipt e-mail or the metadata of a payment
    not yet confirmed. The amount of a payment bound to a commerce order is the order's total: changing
    it is 409 `resource_state_invalid`.
    """
    session = request_session(request)
    payment = await service.update_payment_intent(session, principal.tenant, payment_intent, body)
    return await _render(session, principal.tenant, payment)


@router.post(
    "/payment-intents/{payment_intent}/confirm", response_model=PaymentIntentOut, responses=CHARGES_CARD
)
async def confirm_payment_intent(
    request: Request,
    payment_intent: str,
    body: PaymentIntentConfirm,
    principal: Annotated[Principal, client_side("payments:write", claim_in_statement=True)],
) -> Response:
    """Confirm a payment (client side).

    Called with the publishable key and the payment's `client_secret`, never the secret key. The
    card is a saved one (`payment_method`) or a new one: `card`, the typed digits, on the sandbox
    simulator only; `card_token`, the token Stripe.js made in the payer's browser, on every live
    environment and on a sandbox on Stripe's test mode (a typed `card` is refused there, 400). The
    network authorizes the card: a decline answers 402 and is recorded on the payment; bank
    authentication answers `requires_action` with the page to visit.
    """
    uow, tenant = request_uow(request), principal.tenant
    network = await processor_for(uow, tenant)
    answer = AnswerWithEffect(request)
    claim, base_url = pending_claim(request), public_base_url(request)
    ip_address = request.client.host if request.client is not None else None
    await phases.run_in_phases(
        uow,
        network,
        tenant,
        payment_intent,
        phases.request_token(request, tenant),
        lambda session, processor: service.confirm_payment_intent(
            session,
            tenant,
            processor,
            payment_intent,
            body,
            base_url=base_url,
            ip_address=ip_address,
            claim=claim,
            answer=answer.write,
        ),
    )
    return _answered(answer)


@router.post(
    "/payment-intents/{payment_intent}/capture", response_model=PaymentIntentOut, responses=CHARGES_CARD
)
async def capture_payment_intent(
    request: Request,
    payment_intent: str,
    principal: Annotated[Principal, scoped("payments:write", claim_in_statement=True)],
    body: PaymentIntentCapture | None = None,
) -> Response:
    """Capture a payment.

    Captures an authorized payment (`requires_capture`): all of it, or `amount_to_capture`; the rest
    of the hold is released. A payment bound to a commerce order is captured by starting the order's
    preparation: here it is 409 `resource_state_invalid`.
    """
    uow, tenant = request_uow(request), principal.tenant
    network = await processor_for(uow, tenant)
    answer = AnswerWithEffect(request)
    claim = pending_claim(request)
    amount = body.amount_to_capture if body is not None else None
    await phases.run_in_phases(
        uow,
        network,
        tenant,
        payment_intent,
        phases.request_token(request, tenant),
        lambda session, processor: service.capture_payment_intent(
            session, tenant, processor, payment_intent, amount, claim=claim, answer=answer.write
        ),
    )
    return _answered(answer)


@router.post(
    "/payment-intents/{payment_intent}/cancel", response_model=PaymentIntentOut, responses=CHARGES_CARD
)
async def cancel_payment_intent(
    request: Request,
    payment_intent: str,
    principal: Annotated[Principal, scoped("payments:write", claim_in_statement=True)],
    body: PaymentIntentCancel | None = None,
) -> PaymentIntentOut:
    """Cancel a payment.

    Cancels a payment not yet captured; an authorization is released at the network. A payment bound
    to a commerce order is cancelled with the order: here it is 409 `resource_state_invalid`.
    """
    uow, tenant = request_uow(request), principal.tenant
    network = await processor_for(uow, tenant)
    reason = body.cancellation_reason if body is not None else None
    claim = pending_claim(request)
    payment = await phases.run_in_phases(
        uow,
        network,
        tenant,
        payment_intent,
        phases.request_token(request, tenant),
        lambda session, processor: service.cancel_payment_intent(
            session, tenant, processor, payment_intent, reason, claim=claim
        ),
    )
    return await _render(uow.session, tenant, payment)


@router.post(
    "/payment-intents/{payment_intent}/increment-authorization",
    response_model=PaymentIntentOut,
    responses=CHARGES_CARD,
)
async def increment_authorization(
    request: Request,
    payment_intent: str,
    body: IncrementAuthorization,
    principal: Annotated[Principal, scoped("payments:write", claim_in_statement=True)],
) -> PaymentIntentOut:
    """Increase an authorization.

    Raises the amount held on an authorized card (`requires_capture`) to `amount`. A payment bound to
    a commerce order keeps the order's total: 409 `resource_state_invalid`.
    """
    uow, tenant = request_uow(request), principal.tenant
    network = await processor_for(uow, tenant)
    claim = pending_claim(request)
    payment = await phases.run_in_phases(
        uow,
        network,
        tenant,
        payment_intent,
        phases.request_token(request, tenant),
        lambda session, processor: service.increment_authorization(
            session, tenant, processor, payment_intent, body.amount, claim=claim
        ),
    )
    return await _render(uow.session, tenant, payment)


@router.post("/refunds", response_model=RefundOut, responses=NEEDS_PROCESSOR)
async def create_refund(
    request: Request, body: RefundCreate, principal: Annotated[Principal, scoped("payments:write")]
) -> RefundOut:
    """Refund a payment.

    Accepted at once (`pending`) and carried out by a worker through the processor; follow it by its
    `operation` or its events. At most what was captured and not yet refunded.
    """
    return render_refund(await refunds.create_refund(request_session(request), principal.tenant, body))


@router.get("/refunds", response_model=ListEnvelope[RefundOut])
async def list_refunds(
    request: Request,
    principal: Annotated[Principal, scoped("payments:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    payment_intent: Annotated[str | None, Query(description="Only this payment's refunds")] = None,
) -> ListEnvelope[RefundOut]:
    """List refunds.

    The environment's refunds, newest first; `payment_intent` keeps one payment's.
    """
    rows = await refunds.list_refunds(
        request_session(request),
        principal.tenant,
        limit=page.limit,
        after=page.after,
        payment_intent=payment_intent,
    )
    return list_envelope(rows, page, render_refund)


@router.get("/refunds/{refund}", response_model=RefundOut)
async def get_refund(
    request: Request, refund: str, principal: Annotated[Principal, scoped("payments:read")]
) -> RefundOut:
    """Retrieve a refund.

    One refund by its `re_` id.
    """
    return render_refund(await refunds.get_refund(request_session(request), principal.tenant, refund))


def _amounts(per_currency: dict[str, int]) -> list[BalanceAmount]:
    return [
        BalanceAmount(amount=amount, currency=currency) for currency, amount in sorted(per_currency.items())
    ]


@router.get("/balance", response_model=BalanceOut)
async def get_balance(
    request: Request, principal: Annotated[Principal, scoped("payouts:read")]
) -> BalanceOut:
    """Retrieve the balance.

    Funds available and pending, per currency, and processing costs still to be recovered from later
    payments.
    """
    view = await balance.get_balance(request_session(request), principal.tenant)
    return BalanceOut(
        livemode=principal.tenant.livemode,
        available=_amounts(view.available),
        pending=_amounts(view.pending),
        fees_outstanding=_amounts(view.fees_outstanding),
    )


@router.post("/payment-quotes", response_model=PaymentQuoteOut)
async def create_payment_quote(
    request: Request, body: PaymentQuoteCreate, principal: Annotated[Principal, scoped("payments:write")]
) -> PaymentQuoteOut:
    """Quote a payment.

    What a payment of this amount would carry: where every minor unit would go and the commission
    reserved. Nothing is created.
    """
    quote = await balance.quote_payment(request_session(request), principal.tenant, body)
    return PaymentQuoteOut(
        livemode=principal.tenant.livemode,
        amount=quote.amount,
        currency=quote.currency,
        funds_flow=[
            FundsFlowItem.model_validate({"party": party, "role": role, "amount": amount})
            for party, role, amount in quote.funds_flow()
        ],
        fees=QuoteFeesOut(
            commission_basis_points=quote.basis_points,
            commission_fixed_amount=quote.fixed_amount,
            commission_reserve=quote.reserve,
            prior_recovery=quote.prior_recovery,
            amount_fixed=quote.amount_fixed,
        ),
    )
