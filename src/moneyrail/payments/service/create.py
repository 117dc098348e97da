"""Creating payments (one at a time, in one statement for the create route, or many together) and
updating them before confirmation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import API_VERSIONS
from moneyrail.customers import service as customers
from moneyrail.db.raw import StatementClaim, from_row, transaction_open
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import (
    AmountInvalid,
    Conflict,
    FeeAmountImmutable,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.events.repository import NewEvent
from moneyrail.events.service import planned_deliveries, record_events
from moneyrail.installations import service as installations
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.tenant import Tenant
from moneyrail.merchants import service as merchants
from moneyrail.models import PaymentIntent, PaymentMethod
from moneyrail.payment_methods import service as methods
from moneyrail.payments import distribution as distributions
from moneyrail.payments import fees, repository
from moneyrail.payments.distribution import DistributionPlan
from moneyrail.payments.schemas import (
    DistributionIn,
    PaymentIntentCreate,
    PaymentIntentOut,
    PaymentIntentUpdate,
    render_payment_intent,
)
from moneyrail.processor import provider

from .hooks import _facts_of, _refuse_if_owned
from .state import CONFIRMABLE, _locked, _move, announce

logger = structlog.get_logger("moneyrail.payments")


class FundsFlow(NamedTuple):
    merchant_id: str | None
    plan: DistributionPlan | None


async def resolve_funds_flow(
    session: AsyncSession,
    tenant: Tenant,
    merchant: str | None,
    distribution: DistributionIn | None,
    *,
    amount: int,
    commission: int,
) -> FundsFlow:
    """Marketplace recipients: the merchant the payment is for and the distribution's plan.

    `merchant`: an active merchant of this installation and environment that can take payments (else
    400 naming `merchant`). A distribution is checked whole (payments/distribution.py) and answers the
    allocations with the commission each merchant allocation carries.
    """
    merchant_id = (
        (await merchants.merchant_for_payment(session, tenant, merchant)).id if merchant is not None else None
    )
    if distribution is None:
        return FundsFlow(merchant_id, None)
    installation = await installations.require_installation(session, tenant.installation_id)
    plan = await distributions.plan_distribution(
        session,
        tenant,
        distribution,
        installation_kind=installation.kind,
        amount=amount,
        commission=commission,
    )
    return FundsFlow(merchant_id, plan)


async def _customer_for(session: AsyncSession, tenant: Tenant, customer_id: str | None) -> str | None:
    if customer_id is None:
        return None
    try:
        return (await customers.get_customer(session, tenant, customer_id)).id
    except ResourceMissing:
        raise ReferencedResourceMissing(f"No such customer: {customer_id!r}", param="customer") from None


@dataclass(frozen=True)
class CommissionPolicy:
    basis_points: int
    fixed_amount: int

    @property
    def is_set(self) -> bool:
        return self.basis_points != 0 or self.fixed_amount != 0

    def reserve(self, amount: int) -> int | None:
        return fees.commission_reserve(amount, self.basis_points, self.fixed_amount) if self.is_set else None


async def commission_policy(work: AsyncSession | UnitOfWork, tenant: Tenant) -> CommissionPolicy:
    terms = await installations.commission_terms(work, tenant)
    return CommissionPolicy(terms.basis_points, terms.fixed_amount)


def check_amount_covers(amount: int, reserve: int | None, param: str) -> None:
    if reserve is not None and amount <= reserve:
        raise AmountInvalid(
            f"The amount ({amount}) must be more than the commission it carries ({reserve}).", param=param
        )


def _new_payment_row(
    tenant: Tenant,
    payment_id: str,
    client_secret: str,
    policy: CommissionPolicy,
    *,
    amount: int,
    currency: str,
    capture_method: str,
    description: str | None,
    metadata: dict[str, Any],
    now: datetime,
    customer_id: str | None = None,
    payment_method_id: str | None = None,
    merchant_id: str | None = None,
    has_distribution: bool = False,
    external_reference: str | None = None,
    receipt_email: str | None = None,
    receipt_phone: str | None = None,
) -> dict[str, Any]:
    """Every column a new payment is written with (`repository.NEW_PAYMENT_ATTRIBUTES`), whichever way
    it is created: alone, in one statement, or many together. Its status follows from its card: given
    one, it awaits confirmation; else a payment method. Its fee reserve is the commission it carries."""
    return {
        "id": payment_id,
        "installation_id": tenant.installation_id,
        "livemode": tenant.livemode,
        "amount": amount,
        "currency": currency,
        "status": "requires_confirmation" if payment_method_id is not None else "requires_payment_method",
        "capture_method": capture_method,
        "amount_capturable": 0,
        "amount_received": 0,
        "amount_refunded": 0,
        "customer_id": customer_id,
        "payment_method_id": payment_method_id,
        "merchant_id": merchant_id,
        "has_distribution": has_distribution,
        "external_reference": external_reference,
        "description": description,
        "metadata_": metadata,
        "receipt_email": receipt_email,
        "receipt_phone": receipt_phone,
        "client_secret_hash": hash_secret(client_secret),
        "commission_basis_points": policy.basis_points,
        "commission_fixed_amount": policy.fixed_amount,
        "fee_reserve": policy.reserve(amount),
        "fee_status": "pending",
        "fee_prior_recovery": 0,
        "amount_pending_settlement": 0,
        "confirmations": 0,
        "save_payment_method": False,
        "created_at": now,  # a sandbox payment's is stamped by the database (its tenant's clock)
        "updated_at": now,
    }


@dataclass(frozen=True)
class CreatedPayment:
    payment: PaymentIntent
    client_secret: str
    # the route's answer (`create_payment_intent_answered`'s `answer`) rendered once with `created` still
    # to come, where the one statement wrote the payment; None on the transactional path
    answer_awaiting_created: bytes | None = None


async def create_payment_intent(
    session: AsyncSession, tenant: Tenant, command: PaymentIntentCreate
) -> CreatedPayment:
    await provider.require_processor(session, tenant)  # a live payment that no processor could take: 403
    policy = await commission_policy(session, tenant)
    reserve = policy.reserve(command.amount)
    merchant_id, plan = await resolve_funds_flow(
        session,
        tenant,
        command.merchant,
        command.distribution,
        amount=command.amount,
        commission=reserve or 0,
    )
    customer_id = await _customer_for(session, tenant, command.customer)
    method: PaymentMethod | None = None
    if command.payment_method is not None:
        method = await methods.usable_method(
            session,
            tenant,
            command.payment_method,
            customer_id=customer_id,
            account=await methods.payment_account(session, tenant, merchant_id),
        )
    check_amount_covers(command.amount, reserve, "amount")

    payment_id = new_id("pi")
    client_secret = f"{payment_id}_secret_{random_base62(24)}"
    now = utcnow()
    payment = PaymentIntent(
        **_new_payment_row(
            tenant,
            payment_id,
            client_secret,
            policy,
            amount=command.amount,
            currency=command.currency,
            capture_method=command.capture_method,
            description=command.description,
            metadata=command.metadata,
            now=now,
            customer_id=customer_id,
            payment_method_id=method.id if method is not None else None,
            merchant_id=merchant_id,
            has_distribution=plan is not None,
            external_reference=command.external_reference,
            receipt_email=command.receipt_email,
            receipt_phone=command.receipt_phone,
        )
    )
    session.add(payment)
    await session.flush()
    if plan is not None:
        await distributions.record_distribution(session, tenant, payment.id, plan)
    await announce(session, tenant, payment, "payment_intent.created")
    logger.info(
        "payment_intent_created", payment_intent=payment.id, amount=payment.amount, currency=payment.currency
    )
    return CreatedPayment(payment, client_secret)


# Operation ids the one-statement create makes for the deliveries of its event: an environment with more
# endpoints listening for `payment_intent.created` takes the transactional path (most have one or two).
DELIVERIES_IN_ONE_STATEMENT = 4


def _is_plain(command: PaymentIntentCreate) -> bool:
    """Nothing to resolve or write beyond the payment's own row and its event: no customer to check, no
    saved card, no merchant, no distribution (its rows reference the payment's)."""
    return (
        command.customer is None
        and command.payment_method is None
        and command.merchant is None
        and command.distribution is None
    )


# Every column of a payment the create leaves unset, as the row read back holds them: a payment made
# without a flush renders from these (no attribute of it is ever loaded, so none can lazy-load).
_UNSET_AT_CREATION: dict[str, Any] = {}


def _unset_at_creation() -> dict[str, Any]:
    if not _UNSET_AT_CREATION:
        attributes = PaymentIntent.__mapper__.column_attrs
        _UNSET_AT_CREATION.update(
            {
                attribute.key: None
                for attribute in attributes
                if attribute.key not in repository.NEW_PAYMENT_ATTRIBUTES
            }
        )
    return _UNSET_AT_CREATION


async def create_payment_intent_answered(
    uow: UnitOfWork,
    tenant: Tenant,
    command: PaymentIntentCreate,
    claim: StatementClaim | None,
    answer: Callable[[PaymentIntentOut], bytes],
) -> CreatedPayment:
    """`create_payment_intent` for the create route: a plain payment (`_is_plain`) in one statement that
    commits by itself, with its event, a delivery to each endpoint listening for it and, given a claim,
    the Idempotency-Key's claim and stored answer.

    `claim`: the request's key, not claimed yet (`scoped(..., claim_in_statement=True)`); its replay or
    refusal is raised. `answer`: the route's answer bytes, given the payment rendered once with its
    client secret, with its `created` still to come (api/idempotency.py, `awaiting_created`); kept as
    `answer_awaiting_created` where the one statement wrote the payment. Anything else, and whatever the one
    statement could not settle alone (it then kept nothing), takes the transactional path, which claims
    the key first as the gate would: a refusal there (an amount below its commission, an unknown
    customer) is stored under the key as before.
    """
    await provider.require_processor(uow, tenant)  # before anything, the key's claim included
    created = await _create_in_one_statement(uow, tenant, command, claim, answer)
    if created is not None:
        return created
    session = uow.session
    if claim is not None:
        await repository.claim_in_transaction(session, claim)
    return await create_payment_intent(session, tenant, command)


async def _create_in_one_statement(
    uow: UnitOfWork,
    tenant: Tenant,
    command: PaymentIntentCreate,
    claim: StatementClaim | None,
    answer: Callable[[PaymentIntentOut], bytes],
) -> CreatedPayment | None:
    if not _is_plain(command) or transaction_open(uow):
        return None
    # remembered lookups: on a miss a lone statement, no session
    policy = await commission_policy(uow, tenant)
    publishable_key = await installations.publishable_key(uow, tenant)
    reserve = policy.reserve(command.amount)
    if reserve is not None and command.amount <= reserve:
        return None  # a refusal to store under the key: the transactional path

    payment_id = new_id("pi")
    client_secret = f"{payment_id}_secret_{random_base62(24)}"
    now = utcnow()
    # what create_payment_intent writes for a plain command
    row = _new_payment_row(
        tenant,
        payment_id,
        client_secret,
        policy,
        amount=command.amount,
        currency=command.currency,
        capture_method=command.capture_method,
        description=command.description,
        metadata=command.metadata,
        now=now,
        external_reference=command.external_reference,
        receipt_email=command.receipt_email,
        receipt_phone=command.receipt_phone,
    )
    payment = from_row(PaymentIntent, {**_unset_at_creation(), **row})  # for rendering: never flushed
    # rendered once: the answer, and the object `announce` records (no client secret; a new payment has
    # no authentication link to leave out); the statement sets the event object's `created`
    shown = render_payment_intent(payment, publishable_key=publishable_key, client_secret=client_secret)
    template = answer(shown)
    announced = shown.model_dump(mode="json")
    announced["client_secret"] = None
    event = NewEvent(
        new_id("evt"), "payment_intent.created", API_VERSIONS["payments"][0], {"object": announced}, utcnow()
    )
    at_once = await repository.insert_created(
        uow,
        tenant,
        row,
        event,
        planned_deliveries(DELIVERIES_IN_ONE_STATEMENT),
        claim,
        template if claim is not None else None,
    )
    if at_once.created_at is None:
        return None
    payment.created_at = at_once.created_at
    logger.info(
        "payment_intent_created", payment_intent=payment.id, amount=payment.amount, currency=payment.currency
    )
    return CreatedPayment(payment, client_secret, answer_awaiting_created=template)


@dataclass(frozen=True)
class PlainPayment:
    """A payment of the tenant's own (no merchant, no distribution, no card yet) for one of its customers,
    whose existence the caller has checked: what `create_payment_intents` writes set-based."""

    amount: int
    currency: str
    customer_id: str
    description: str
    metadata: dict[str, Any]


async def create_payment_intents(
    session: AsyncSession, tenant: Tenant, commands: Sequence[PlainPayment]
) -> list[PaymentIntent]:
    """`create_payment_intent` for many plain payments of one tenant at once (a clock advance opening
    its renewals): the rows in one INSERT, their `payment_intent.created` events in one statement. Each
    payment is exactly what the single path writes for the same command; the caller sends a payment
    whose amount does not cover its commission (AmountInvalid there) the single way."""
    if not commands:
        return []
    policy = await commission_policy(session, tenant)
    now = utcnow()
    created: list[PaymentIntent] = []
    for command in commands:
        reserve = policy.reserve(command.amount)
        check_amount_covers(command.amount, reserve, "amount")
        payment_id = new_id("pi")
        # nobody confirms these with a client secret: it exists (hashed) as for every payment
        client_secret = f"{payment_id}_secret_{random_base62(24)}"
        created.append(
            PaymentIntent(
                **_new_payment_row(
                    tenant,
                    payment_id,
                    client_secret,
                    policy,
                    amount=command.amount,
                    currency=command.currency,
                    capture_method="automatic",
                    description=command.description,
                    metadata=command.metadata,
                    now=now,
                    customer_id=command.customer_id,
                )
            )
        )
    session.add_all(created)
    await session.flush()  # one INSERT (insertmanyvalues), the sandbox clock's created_at read back
    key = await installations.publishable_key(session, tenant)
    await record_events(
        session,
        tenant,
        [
            (
                "payment_intent.created",
                render_payment_intent(
                    payment, publishable_key=key, with_authentication_link=False
                ).model_dump(mode="json"),
            )
            for payment in created
        ],
    )
    logger.info("payment_intents_created", count=len(created))
    return created


# --- updating -----------------------------------------------------------------------------------
async def update_payment_intent(
    session: AsyncSession, tenant: Tenant, payment_id: str, command: PaymentIntentUpdate
) -> PaymentIntent:
    payment = await _locked(session, tenant, payment_id)
    if payment.status in {"succeeded", "canceled"}:
        raise Conflict(f"This payment is {payment.status}: it can no longer be updated.")
    changes_terms = command.amount is not None or command.payment_method is not None
    if changes_terms and payment.status not in CONFIRMABLE:
        raise Conflict(
            f"The amount and payment method can change only before confirmation; this payment is "
            f"{payment.status}. Cancel it and create a new one, or increment an authorization."
        )
    if command.amount is not None and command.amount != payment.amount:
        await _refuse_if_owned(session, tenant, payment, "update", await _facts_of(session, payment))
        if payment.fee_reserve is not None:
            raise FeeAmountImmutable(
                "This payment carries a fee reserve, so its amount is fixed: cancel it and create a new "
                "payment for the new amount.",
                param="amount",
            )
        payment.amount = command.amount
    if command.payment_method is not None:
        method = await methods.usable_method(
            session,
            tenant,
            command.payment_method,
            customer_id=payment.customer_id,
            account=await methods.payment_account(session, tenant, payment.merchant_id),
        )
        payment.payment_method_id = method.id
        if payment.status == "requires_payment_method":
            _move(payment, "requires_confirmation")
    if command.description is not None:
        payment.description = command.description
    if command.receipt_email is not None:
        payment.receipt_email = command.receipt_email
    if command.metadata is not None:
        merged = {**payment.metadata_, **command.metadata}
        payment.metadata_ = {key: value for key, value in merged.items() if value != ""}
    payment.updated_at = utcnow()
    await session.flush()
    return payment
