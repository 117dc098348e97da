"""The bank's authentication of a payment that requires action (the sandbox bank's page)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.errors import Conflict, ResourceMissing
from moneyrail.installations import service as installations
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent
from moneyrail.payment_methods import service as methods
from moneyrail.payments import phases, repository
from moneyrail.processor.interface import Processor

from .answers import _authorization_or_decline
from .confirm import _apply_authorization


# --- bank authentication (the sandbox bank's page) -------------------------------------------------
@dataclass(frozen=True)
class AuthenticationView:
    payment: PaymentIntent
    seller: str


async def authentication_view(session: AsyncSession, token: str) -> AuthenticationView:
    payment = await repository.get_payment_by_authentication_token(session, hash_secret(token))
    if payment is None or payment.status != "requires_action":
        raise ResourceMissing("This authentication link is no longer valid.")
    installation = await installations.require_installation(session, payment.installation_id)
    return AuthenticationView(payment, installation.name)


@dataclass(frozen=True)
class AuthenticationOutcome:
    payment: PaymentIntent
    succeeded: bool
    redirect_url: str | None


async def complete_authentication(
    session: AsyncSession, processor: Processor, token: str, *, approved: bool, base_url: str
) -> AuthenticationOutcome:
    view = await authentication_view(session, token)
    tenant = Tenant(view.payment.installation_id, view.payment.livemode)
    # locked as committed (the view read it before): a second completion waits, then sees it done
    payment = await repository.lock_payment_as_committed(session, tenant, view.payment.id)
    if payment is None or payment.status != "requires_action":
        raise ResourceMissing("This authentication link is no longer valid.")
    phases.check_claim(payment)
    await _finish_authentication(session, tenant, processor, payment, approved=approved, base_url=base_url)
    succeeded = payment.status in {"succeeded", "requires_capture"}
    redirect = None
    if payment.return_url:
        redirect = _with_query(
            payment.return_url,
            {"payment_intent": payment.id, "redirect_status": "succeeded" if succeeded else "failed"},
        )
    return AuthenticationOutcome(payment, succeeded, redirect)


async def _finish_authentication(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    *,
    approved: bool,
    base_url: str,
) -> None:
    """The network's word on a payment that required action (the payer approved at the bank, or did
    not), recorded on the payment: authorized (then captured where automatic), or declined."""
    assert payment.processor_authorization is not None  # requires_action always has one
    authorization = await _authorization_or_decline(
        payment,
        processor.complete_authentication(
            tenant,
            idempotency_key=f"{payment.id}:authenticate:{payment.confirmations}",
            authorization_id=payment.processor_authorization,
            approved=approved,
        ),
    )
    method = await methods.get_method(session, tenant, payment.payment_method_id or "")
    assert method is not None
    await _apply_authorization(session, tenant, processor, payment, authorization, method, base_url=base_url)


async def abandon_authentication(
    session: AsyncSession, tenant: Tenant, processor: Processor, payment: PaymentIntent, *, base_url: str
) -> None:
    """The payer cannot authenticate where they are (the hosted checkout on Stripe, which does not run
    Stripe.js's own authentication): the processor lets the authorization go, and the payment is declined
    (authentication_failed) and may be paid with another card. `payment` is locked, in requires_action."""
    if payment.status != "requires_action":
        raise Conflict(f"This payment is {payment.status}; only one that requires action is abandoned.")
    await _finish_authentication(session, tenant, processor, payment, approved=False, base_url=base_url)


def _with_query(url: str, extra: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), *extra.items()])
    return urlunsplit(parts._replace(query=query))
