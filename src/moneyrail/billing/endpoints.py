from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from moneyrail.api.context import Principal, request_session
from moneyrail.api.openapi import CALLS_PROCESSOR, CHARGES_CARD, NEEDS_PROCESSOR
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.engine.schemas import OperationOut, render_operation
from moneyrail.errors import InsufficientScope
from moneyrail.kit.scopes import grants
from moneyrail.payments import phases

from . import catalog, distribution, service
from .schemas import (
    ChangeCancel,
    ChangeCreate,
    DistributionUpdate,
    EmptyBody,
    PriceCreate,
    PriceOut,
    ProductCreate,
    ProductOut,
    ProductUpdate,
    QuoteOut,
    QuoteRequest,
    SubscriptionCancel,
    SubscriptionChangeOut,
    SubscriptionCreate,
    SubscriptionInvoiceOut,
    SubscriptionOut,
)
from .service import changes

router = APIRouter(route_class=MoneyrailRoute, tags=["billing"])
ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"description": "Accepted: follow the operation until `succeeded` or `dead_letter`"}
}


# --- products ---------------------------------------------------------------------------------
@router.post("/products", response_model=ProductOut)
async def create_product(
    request: Request, body: ProductCreate, principal: Annotated[Principal, scoped("billing:write")]
) -> ProductOut:
    """Create a product.

    A product groups prices; it carries no financial terms. The billing catalog belongs to this
    installation and environment (it is not the commerce API's catalog). `Idempotency-Key` is required.
    """
    return catalog.render_product(
        await catalog.create_product(request_session(request), principal.tenant, body)
    )


@router.get("/products", response_model=ListEnvelope[ProductOut])
async def list_products(
    request: Request,
    principal: Annotated[Principal, scoped("billing:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[ProductOut]:
    """List products.

    The environment's products, archived ones included, newest first, a page at a time.
    """
    rows = await catalog.list_products(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, catalog.render_product)


@router.get("/products/{product}", response_model=ProductOut)
async def get_product(
    request: Request, product: str, principal: Annotated[Principal, scoped("billing:read")]
) -> ProductOut:
    """Retrieve a product.

    One product by its `prod_` id.
    """
    return catalog.render_product(
        await catalog.get_product(request_session(request), principal.tenant, product)
    )


@router.post("/products/{product}/update", response_model=ProductOut)
async def update_product(
    request: Request,
    product: str,
    body: ProductUpdate,
    principal: Annotated[Principal, scoped("billing:write")],
) -> ProductOut:
    """Update a product.

    Presentation and availability: name, description, `active`, metadata; never financial terms (those
    live on immutable prices). An archived product cannot be made active again (409).
    """
    updated = await catalog.update_product(request_session(request), principal.tenant, product, body)
    return catalog.render_product(updated)


@router.post("/products/{product}/archive", response_model=ProductOut)
async def archive_product(
    request: Request,
    product: str,
    principal: Annotated[Principal, scoped("billing:write")],
    body: EmptyBody | None = None,
) -> ProductOut:
    """Archive a product.

    Closed to new prices and subscriptions for good; existing subscriptions keep renewing until they are
    cancelled. Archiving an archived product answers it unchanged.
    """
    archived = await catalog.archive_product(request_session(request), principal.tenant, product)
    return catalog.render_product(archived)


# --- prices -----------------------------------------------------------------------------------
@router.post("/prices", response_model=PriceOut)
async def create_price(
    request: Request, body: PriceCreate, principal: Annotated[Principal, scoped("billing:write")]
) -> PriceOut:
    """Create a price.

    Immutable terms for an active product: `per_unit` (`amount`), `volume` or `graduated` (`tiers`, up to
    50, ascending `up_to`, the last null), every `month` or `year` (`interval_count` 1 to 12). Broken tier
    rules answer 400 `tiers_invalid`; an amount out of range 400 `amount_invalid`.
    """
    return catalog.render_price(await catalog.create_price(request_session(request), principal.tenant, body))


@router.get("/prices", response_model=ListEnvelope[PriceOut])
async def list_prices(
    request: Request,
    principal: Annotated[Principal, scoped("billing:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[PriceOut]:
    """List prices.

    The environment's prices, archived ones included, newest first, a page at a time.
    """
    rows = await catalog.list_prices(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, catalog.render_price)


@router.get("/prices/{price}", response_model=PriceOut)
async def get_price(
    request: Request, price: str, principal: Annotated[Principal, scoped("billing:read")]
) -> PriceOut:
    """Retrieve a price.

    One price by its `price_` id, with its terms.
    """
    return catalog.render_price(await catalog.get_price(request_session(request), principal.tenant, price))


@router.post("/prices/{price}/archive", response_model=PriceOut)
async def archive_price(
    request: Request,
    price: str,
    principal: Annotated[Principal, scoped("billing:write")],
    body: EmptyBody | None = None,
) -> PriceOut:
    """Archive a price.

    Closed to new subscriptions (`active` false); existing subscriptions on it are unchanged. Create
    another price for new offers.
    """
    archived = await catalog.archive_price(request_session(request), principal.tenant, price)
    return catalog.render_price(archived)


@router.post("/prices/{price}/quote", response_model=QuoteOut)
async def quote_price(
    request: Request, price: str, body: QuoteRequest, principal: Annotated[Principal, scoped("billing:write")]
) -> QuoteOut:
    """Quote a price.

    The exact total for `quantity` under this price's terms, as `amount`; informative, nothing is
    charged. A total outside 1 to 99999999 minor units, or not above the commission it would carry,
    answers 400 `amount_invalid`.
    """
    session = request_session(request)
    found = await catalog.get_price(session, principal.tenant, price)
    amount = await catalog.quote_price(session, principal.tenant, price, body.quantity)
    return QuoteOut(price=found.id, quantity=body.quantity, amount=amount, currency=found.currency)


# --- subscriptions ----------------------------------------------------------------------------
@router.post("/subscriptions", response_model=SubscriptionOut, responses=NEEDS_PROCESSOR)
async def create_subscription(
    request: Request, body: SubscriptionCreate, principal: Annotated[Principal, scoped("billing:write")]
) -> SubscriptionOut:
    """Create a subscription.

    Prepares the subscription without charging: it answers `incomplete`, with its first
    `subscription_invoice` and that invoice's payment; the customer pays it through a checkout session
    created with `subscription`, consenting to renewals. Exactly one of `price` and `price_data`. A
    platform installation must send `distribution`, and the key then also needs `payments:write` and
    `transfers:write`. Subscriptions not enabled for the environment answer 403 `recurring_not_enabled`.
    """
    if body.distribution is not None:
        for extra in ("payments:write", "transfers:write"):
            if not grants(principal.scopes, extra):
                raise InsufficientScope(f"A subscription with a distribution also needs the {extra} scope.")
    session = request_session(request)
    subscription = await service.create_subscription(session, principal.tenant, body)
    return await service.subscription_view(session, principal.tenant, subscription)


@router.get("/subscriptions", response_model=ListEnvelope[SubscriptionOut])
async def list_subscriptions(
    request: Request,
    principal: Annotated[Principal, scoped("billing:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[SubscriptionOut]:
    """List subscriptions.

    The environment's subscriptions, newest first, a page at a time.
    """
    session = request_session(request)
    rows = await service.list_subscriptions(session, principal.tenant, limit=page.limit, after=page.after)
    shown = {row.id: await service.subscription_view(session, principal.tenant, row) for row in rows}
    return list_envelope(rows, page, lambda row: shown[row.id])


@router.get("/subscriptions/{subscription}", response_model=SubscriptionOut)
async def get_subscription(
    request: Request, subscription: str, principal: Annotated[Principal, scoped("billing:read")]
) -> SubscriptionOut:
    """Retrieve a subscription.

    The authoritative entitlement: `entitled` (now before `access_until`, whatever the status),
    `access_until`, `terms_version`, and the current period. Read it after an event, not a redirect.
    """
    session = request_session(request)
    found = await service.get_subscription(session, principal.tenant, subscription)
    return await service.subscription_view(session, principal.tenant, found)


@router.get("/subscriptions/{subscription}/invoices", response_model=ListEnvelope[SubscriptionInvoiceOut])
async def list_subscription_invoices(
    request: Request,
    subscription: str,
    principal: Annotated[Principal, scoped("billing:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[SubscriptionInvoiceOut]:
    """List a subscription's invoices.

    Its collection records (`subscription_invoice`), newest first: each with its payment, status,
    `billing_kind` and distribution progress. Not numbered fiscal invoices.
    """
    rows = await service.list_invoices(
        request_session(request), principal.tenant, subscription, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, service.render_invoice)


@router.post("/subscriptions/{subscription}/cancel", response_model=SubscriptionOut, responses=CHARGES_CARD)
async def cancel_subscription(
    request: Request,
    subscription: str,
    principal: Annotated[Principal, scoped("billing:write")],
    body: SubscriptionCancel | None = None,
) -> SubscriptionOut:
    """Cancel a subscription.

    Now (`at_period_end` false, the default): `canceled` at once, its unpaid invoices void and their
    payments cancelled (the card network is asked to release an authorization in progress). At the end
    of the paid period (`at_period_end` true, an `active` subscription with paid time left): it stays
    `active` with `cancel_at_period_end`, and renewals stop. No refund either way; access lasts until
    `access_until`.
    """
    tenant, at_period_end = principal.tenant, (body or SubscriptionCancel()).at_period_end
    canceled = await phases.run_request_step(  # its payments' cancels outside any transaction
        request,
        tenant,
        None,
        lambda session, processor: service.cancel_subscription(
            session, tenant, processor, subscription, at_period_end=at_period_end
        ),
    )
    return await service.subscription_view(request_session(request), tenant, canceled)


@router.post("/subscriptions/{subscription}/resume", response_model=SubscriptionOut)
async def resume_subscription(
    request: Request,
    subscription: str,
    principal: Annotated[Principal, scoped("billing:write")],
    body: EmptyBody | None = None,
) -> SubscriptionOut:
    """Resume a subscription.

    Withdraws a scheduled cancellation (`cancel_at_period_end`) before the paid period ends; renewals
    continue. Anything else answers 409.
    """
    session = request_session(request)
    resumed = await service.resume_subscription(session, principal.tenant, subscription)
    return await service.subscription_view(session, principal.tenant, resumed)


@router.post(
    "/subscriptions/{subscription}/sync", response_model=OperationOut, status_code=202, responses=ACCEPTED
)
async def sync_subscription(
    request: Request,
    subscription: str,
    principal: Annotated[Principal, scoped("billing:write")],
    body: EmptyBody | None = None,
) -> JSONResponse:
    """Sync a subscription.

    Requests a durable status check, also after a configuration repair: answers 202 with a
    `subscription_sync` operation to follow. A subscription in `review_required` resumes once its safety
    checks pass, its open invoice charged once; no check is bypassed and no duplicate payment is made.
    """
    operation = await service.request_sync(request_session(request), principal.tenant, subscription)
    return JSONResponse(render_operation(operation).model_dump(mode="json"), status_code=202)


# --- changes ---------------------------------------------------------------------------------------
@router.post("/subscriptions/{subscription}/changes", response_model=SubscriptionChangeOut)
async def create_subscription_change(
    request: Request,
    subscription: str,
    body: ChangeCreate,
    principal: Annotated[Principal, scoped("billing:write")],
) -> SubscriptionChangeOut:
    """Quote a change of price or quantity.

    An immutable proposal against `expected_version` (the subscription's `terms_version`): it changes
    nothing and charges nothing. `amount` is the new cycle total, `amount_due` what an `immediate` change
    charges now (the prorated difference). The payer consents through a checkout session with
    `{subscription, change}` within 15 minutes, else it expires. One unapplied proposal per subscription.
    """
    session = request_session(request)
    change = await changes.create_change(session, principal.tenant, subscription, body)
    return await changes.change_view(session, principal.tenant, change)


@router.get("/subscriptions/{subscription}/changes", response_model=ListEnvelope[SubscriptionChangeOut])
async def list_subscription_changes(
    request: Request,
    subscription: str,
    principal: Annotated[Principal, scoped("billing:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[SubscriptionChangeOut]:
    """List a subscription's change proposals.

    Newest first, each with its lifecycle status (`open`, `accepted`, `awaiting_payment`, `applied`,
    `canceled`, `expired`).
    """
    session = request_session(request)
    rows = await changes.list_changes(
        session, principal.tenant, subscription, limit=page.limit, after=page.after
    )
    shown = {row.id: await changes.change_view(session, principal.tenant, row) for row in rows}
    return list_envelope(rows, page, lambda row: shown[row.id])


@router.get("/subscriptions/{subscription}/changes/{change}", response_model=SubscriptionChangeOut)
async def get_subscription_change(
    request: Request,
    subscription: str,
    change: str,
    principal: Annotated[Principal, scoped("billing:read")],
) -> SubscriptionChangeOut:
    """Read a change proposal.

    Its terms, `amount_due` and where it stands in its lifecycle.
    """
    session = request_session(request)
    found = await changes.get_change(session, principal.tenant, subscription, change)
    return await changes.change_view(session, principal.tenant, found)


@router.post(
    "/subscriptions/{subscription}/changes/{change}/cancel",
    response_model=SubscriptionChangeOut,
    responses=CALLS_PROCESSOR,
)
async def cancel_subscription_change(
    request: Request,
    subscription: str,
    change: str,
    principal: Annotated[Principal, scoped("billing:write")],
    body: ChangeCancel | None = None,
) -> SubscriptionChangeOut:
    """Withdraw an unapplied change.

    Not a refund: an immediate change's unpaid difference is cancelled with it; a difference whose
    payment is still processing must be clarified first (409).
    """
    tenant = principal.tenant
    canceled = await phases.run_request_step(  # the difference's cancel outside any transaction
        request,
        tenant,
        None,
        lambda session, processor: changes.cancel_change(session, tenant, processor, subscription, change),
    )
    return await changes.change_view(request_session(request), tenant, canceled)


# --- distribution versions ---------------------------------------------------------------------------
@router.post("/subscriptions/{subscription}/distribution", response_model=SubscriptionOut)
async def version_subscription_distribution(
    request: Request,
    subscription: str,
    body: DistributionUpdate,
    principal: Annotated[Principal, scoped("billing:write")],
) -> SubscriptionOut:
    """Version a platform subscription's distribution.

    The new shares apply to invoices opened from now on (each cycle keeps the snapshot it was opened
    with); `expected_version` must equal `distribution_version`, which goes up by one. The key also
    needs payments:write and transfers:write. The seller (merchant_of_record) cannot change.
    """
    for extra in ("payments:write", "transfers:write"):
        if not grants(principal.scopes, extra):
            raise InsufficientScope(f"Versioning a distribution also needs the {extra} scope.")
    session = request_session(request)
    updated = await distribution.update_distribution(session, principal.tenant, subscription, body)
    return await service.subscription_view(session, principal.tenant, updated)
