"""Risk lists and reviews (README "Risk").

Before the network is asked to authorize, a payment's values (its card's fingerprint and issuing
country, the payer's e-mail, IP address and customer id) are looked up in the installation's value
lists. A value in a `block` list declines the payment with decline_code `fraudulent`: nothing is
authorized, nothing charged. A value in a `review` list, or a card the network rates `elevated` (the
sandbox's risk card 4100 0000 0000 0019), opens a review: the payment is authorized but not captured.

Review state machine (data, STYLE.md habit 7):

    open -> approved    POST /v1/radar/reviews/{id}/approve; approving again changes nothing

Approval lets the payment continue as its capture_method says: an automatic payment is captured at once
(under its processor key `<payment>:capture:<authorization>`, so it is never charged twice), a manual
one may now be captured by the merchant.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Sequence

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import get_settings
from moneyrail.customers import service as customers
from moneyrail.errors import Conflict, ParameterInvalid, ResourceMissing
from moneyrail.events.service import record_event
from moneyrail.kit import states
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import looks_like_id, new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.kit.ttl_cache import TtlCache
from moneyrail.models import PaymentIntent, PaymentMethod, Review, ValueList, ValueListItem
from moneyrail.payments import service as payments
from moneyrail.processor.interface import Processor, ProcessorUnavailable

from . import repository
from .repository import ListRule
from .schemas import ValueListCreate, ValueListItemCreate, render_review, render_value_list

logger = structlog.get_logger("moneyrail.risk")

REVIEW_TRANSITIONS: dict[str, frozenset[str]] = {"open": frozenset({"approved"}), "approved": frozenset()}


# --- value lists --------------------------------------------------------------------------------------
async def create_value_list(session: AsyncSession, tenant: Tenant, command: ValueListCreate) -> ValueList:
    value_list = ValueList(
        id=new_id("rl"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        alias=command.alias,
        name=command.name,
        item_type=command.item_type,
        action=command.action,
        metadata_=command.metadata,
        created_at=utcnow(),
    )
    if not await repository.insert_value_list(session, value_list):
        raise Conflict(f"A value list with the alias {command.alias!r} exists already.", param="alias")
    _lists_changed(tenant)
    await record_event(
        session, tenant, "radar.value_list.created", render_value_list(value_list).model_dump(mode="json")
    )
    return value_list


async def get_value_list(session: AsyncSession, tenant: Tenant, value_list_id: str) -> ValueList:
    value_list = await repository.get_value_list(session, tenant, value_list_id)
    if value_list is None:
        raise ResourceMissing(f"No such value_list: {value_list_id!r}", param="value_list")
    return value_list


async def list_value_lists(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[ValueList]:
    return await repository.list_value_lists(session, tenant, limit=limit, after=after)


def normalized(item_type: str, value: str) -> str:
    """The one spelling a value is stored and matched in; a value that cannot be of the type is refused."""
    value = value.strip()
    if item_type == "email":
        local, at, domain = value.partition("@")
        if not (at and local and "." in domain and " " not in value):
            raise ParameterInvalid(
                "An e-mail item must be an address such as ada@example.com.", param="value"
            )
        return value.lower()
    if item_type == "ip_address":
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise ParameterInvalid(
                "An ip_address item must be an IPv4 or IPv6 address.", param="value"
            ) from None
    if item_type == "card_country":
        if not (len(value) == 2 and value.isascii() and value.isalpha()):
            raise ParameterInvalid(
                "A card_country item is a two-letter country code, such as US.", param="value"
            )
        return value.upper()
    if item_type == "customer_id":
        if not looks_like_id(value, "cus"):
            raise ParameterInvalid("A customer_id item is a customer id (cus_…).", param="value")
        return value
    if not (value.isascii() and value.isalnum() and len(value) <= 64):
        raise ParameterInvalid(
            "A card_fingerprint item is a card's fingerprint (letters and digits).", param="value"
        )
    return value


async def add_item(
    session: AsyncSession, tenant: Tenant, value_list_id: str, command: ValueListItemCreate
) -> ValueListItem:
    value_list = await get_value_list(session, tenant, value_list_id)
    item = ValueListItem(
        id=new_id("rli"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        value_list_id=value_list.id,
        value=normalized(value_list.item_type, command.value),
        created_at=utcnow(),
    )
    if not await repository.insert_item(session, item):
        raise Conflict(f"The list holds {item.value!r} already.", param="value")
    _lists_changed(tenant)
    return item


async def list_items(
    session: AsyncSession, tenant: Tenant, value_list_id: str, *, limit: int, after: Position | None
) -> Sequence[ValueListItem]:
    value_list = await get_value_list(session, tenant, value_list_id)
    return await repository.list_items(session, value_list.id, limit=limit, after=after)


# --- the environment's lists, remembered between confirmations --------------------------------------------
# Every confirmation screens against the environment's lists, which change rarely (an operator adds an
# item). A process remembers them for `key_cache_seconds` (config.py; 5 s by default, as long as it
# remembers keys): a list or item added through another process (another web process, a worker) takes
# effect here within that lifetime. One added through this process takes effect at once: the entry is
# replaced by a mark that has the lists matched in the database for one lifetime, so a confirmation
# that read them before the change committed does not remember what it read.
# Lists holding more than REMEMBERED_ITEMS items in all are not kept in memory: asked per payment.
REMEMBERED_ITEMS = 1_000


class _AskTheDatabase:
    """Match each payment's values in the database: the lists changed in this process within the
    lifetime, or they hold too many items to remember."""


_ASK = _AskTheDatabase()


def _lists_seconds() -> float:
    return get_settings().key_cache_seconds


_remembered_lists: TtlCache[Tenant, tuple[tuple[ListRule, frozenset[str]], ...] | _AskTheDatabase] = TtlCache(
    _lists_seconds
)


def _lists_changed(tenant: Tenant) -> None:
    _remembered_lists.put(tenant, _ASK)


async def _matching_lists(session: AsyncSession, tenant: Tenant, values: dict[str, str]) -> list[ListRule]:
    """The environment's lists holding one of these (item_type -> value) pairs, in creation order."""
    remembered = _remembered_lists.get(tenant) if _lists_seconds() > 0 else _ASK
    if remembered is None:
        read = await repository.listed_values(session, tenant, limit=REMEMBERED_ITEMS)
        remembered = tuple(read) if read is not None else _ASK
        if _remembered_lists.get(tenant) is None:  # not changed here while they were read
            _remembered_lists.put(tenant, remembered)
    if isinstance(remembered, _AskTheDatabase):
        return await repository.matching_lists(session, tenant, values)
    return [rule for rule, listed in remembered if values.get(rule.item_type) in listed]


# --- screening (called by payments at confirmation) -----------------------------------------------------
async def _payment_values(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    method: PaymentMethod,
    confirmation: payments.Confirmation,
    country: str | None,
) -> dict[str, str]:
    values = {"card_fingerprint": method.fingerprint}
    email = payment.receipt_email
    if email is None and payment.customer_id is not None:
        email = (await customers.get_customer(session, tenant, payment.customer_id)).email
    if email:
        values["email"] = email.strip().lower()
    if confirmation.ip_address:
        with contextlib.suppress(ValueError):  # not an address (a proxy's odd header): no IP to match
            values["ip_address"] = str(ipaddress.ip_address(confirmation.ip_address))
    if payment.customer_id is not None:
        values["customer_id"] = payment.customer_id
    if country:
        values["card_country"] = country.upper()
    return values


async def screen(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    method: PaymentMethod,
    confirmation: payments.Confirmation,
) -> payments.RiskVerdict:
    """`block`, `review` or `allow`, writing nothing; a review is opened (or the payment's earlier one
    kept) by the verdict's `then`, once the card is known to the network (payments.RiskVerdict)."""
    try:
        risk = await processor.card_risk(tenant, card_token=method.processor_token)
        risk_level, country = risk.risk_level, risk.country
    except ProcessorUnavailable as fault:
        # the network's risk score is unknown: the lists still apply, and the payment goes to a review
        logger.warning("card_risk_unavailable", payment_intent=payment.id, error=str(fault))
        risk_level, country = "elevated", None
    values = await _payment_values(session, tenant, payment, method, confirmation, country)
    matches = await _matching_lists(session, tenant, values)
    blocking = [rule for rule in matches if rule.action == "block"]
    if blocking:

        async def blocked() -> None:
            logger.info(
                "payment_blocked_by_risk",
                payment_intent=payment.id,
                value_list=blocking[0].id,
                item_type=blocking[0].item_type,
            )

        return payments.RiskVerdict("block", blocked)
    reviewing = [rule for rule in matches if rule.action == "review"]
    if not reviewing and risk_level == "normal":
        return payments.RiskVerdict("allow")

    async def held() -> None:
        await _open_review(session, tenant, payment, reviewing)

    return payments.RiskVerdict("review", held)


async def _open_review(
    session: AsyncSession, tenant: Tenant, payment: PaymentIntent, reviewing: Sequence[ListRule]
) -> None:
    if await repository.review_of_payment(session, payment.id) is not None:
        return
    matched = {"value_list": reviewing[0].id, "item_type": reviewing[0].item_type} if reviewing else {}
    review = Review(
        id=new_id("rv"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        payment_intent_id=payment.id,
        reason="value_list" if reviewing else "rule",
        matched=matched,
        status="open",
        created_at=utcnow(),
        updated_at=utcnow(),
    )
    session.add(review)
    await session.flush()
    await record_event(session, tenant, "review.opened", render_review(review).model_dump(mode="json"))
    logger.info("payment_held_for_review", payment_intent=payment.id, review=review.id)


async def held_among(session: AsyncSession, payment_ids: Sequence[str]) -> set[str]:
    return await repository.open_reviews_among(session, payment_ids)


payments.register_risk_screen(screen, held_among=held_among)
payments.register_payment_fact(payments.HELD_FOR_REVIEW, repository.holds_payment)


# --- reviews ------------------------------------------------------------------------------------------
async def get_review(
    session: AsyncSession, tenant: Tenant, review_id: str, *, for_update: bool = False
) -> Review:
    review = await repository.get_review(session, tenant, review_id, for_update=for_update)
    if review is None:
        raise ResourceMissing(f"No such review: {review_id!r}", param="review")
    return review


async def list_reviews(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, open_only: bool | None
) -> Sequence[Review]:
    return await repository.list_reviews(session, tenant, limit=limit, after=after, open_only=open_only)


async def approve_review(
    session: AsyncSession, tenant: Tenant, processor: Processor, review_id: str
) -> Review:
    """Approve once; the payment continues as its capture_method says. Approving again changes nothing."""
    found = await get_review(session, tenant, review_id)
    # the payment first, then the review: the order a capture takes them in
    payment = await payments.lock_payment_intent(session, tenant, found.payment_intent_id)
    review = await get_review(session, tenant, review_id, for_update=True)
    if review.status == "approved":
        return review
    states.move(review, "approved", REVIEW_TRANSITIONS, "A review")
    review.approved_at = review.updated_at
    await session.flush()
    await record_event(session, tenant, "review.closed", render_review(review).model_dump(mode="json"))
    logger.info("review_approved", review=review.id, payment_intent=payment.id)
    if payment.status == "requires_capture" and payment.capture_method == "automatic":
        await payments.capture_payment_intent(session, tenant, processor, payment.id, None)
    return review
