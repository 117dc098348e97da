"""The billing catalog (spec 2 and 4.M): products, and immutable prices with their arithmetic.

A product carries presentation and availability only; a price's terms never change after creation
(`active` is the only thing archiving moves), so a subscription's terms stay what was agreed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.errors import (
    AmountInvalid,
    Conflict,
    ParameterMissing,
    ReferencedResourceMissing,
    ResourceMissing,
    TiersInvalid,
)
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.money import MAX_AMOUNT
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Price, Product
from moneyrail.payments import service as payments

from . import pricing, repository
from .schemas import (
    PriceCreate,
    PriceOut,
    PriceTerms,
    ProductCreate,
    ProductOut,
    ProductUpdate,
    TierIn,
    TierOut,
)


def render_product(product: Product) -> ProductOut:
    return ProductOut(
        id=product.id,
        livemode=product.livemode,
        created=to_unix(product.created_at),
        name=product.name,
        description=product.description,
        active=product.active,
        archived=product.archived_at is not None,
        metadata=product.metadata_,
    )


def _tiers_of(price: Price) -> list[pricing.Tier]:
    return [pricing.Tier(t["up_to"], t["unit_amount"], t.get("flat_amount", 0)) for t in price.tiers or []]


def render_price(price: Price) -> PriceOut:
    return PriceOut(
        id=price.id,
        livemode=price.livemode,
        created=to_unix(price.created_at),
        product=price.product_id,
        name=price.name,
        currency=price.currency,
        interval=cast(Any, price.interval),
        interval_count=price.interval_count,
        pricing_model=cast(Any, price.pricing_model),
        amount=price.amount,
        tiers=[TierOut(**t) for t in price.tiers] if price.tiers is not None else None,
        active=price.active,
        metadata=price.metadata_,
    )


# --- catalog: products ----------------------------------------------------------------------------
async def create_product(session: AsyncSession, tenant: Tenant, command: ProductCreate) -> Product:
    now = utcnow()
    product = Product(
        id=new_id("prod"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        name=command.name,
        description=command.description,
        active=True,
        metadata_=command.metadata,
        created_at=now,
        updated_at=now,
    )
    await repository.add(session, product)
    return product


async def get_product(
    session: AsyncSession, tenant: Tenant, product_id: str, *, lock: bool = False
) -> Product:
    product = await repository.get_product(session, tenant, product_id, for_update=lock)
    if product is None:
        raise ResourceMissing(f"No such product: {product_id!r}", param="product")
    return product


async def list_products(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Product]:
    return await repository.list_products(session, tenant, limit=limit, after=after)


async def update_product(
    session: AsyncSession, tenant: Tenant, product_id: str, command: ProductUpdate
) -> Product:
    product = await get_product(session, tenant, product_id, lock=True)
    if command.active and product.archived_at is not None:
        raise Conflict("An archived product stays archived; create a new product for new offers.")
    if command.name is not None:
        product.name = command.name
    if command.description is not None:
        product.description = command.description
    if command.active is not None:
        product.active = command.active
    if command.metadata is not None:
        merged = {**product.metadata_, **command.metadata}
        product.metadata_ = {key: value for key, value in merged.items() if value != ""}
    product.updated_at = utcnow()
    await session.flush()
    return product


async def archive_product(session: AsyncSession, tenant: Tenant, product_id: str) -> Product:
    """Closed to new subscriptions; existing agreements renew until they are cancelled."""
    product = await get_product(session, tenant, product_id, lock=True)
    if product.archived_at is None:
        product.archived_at = utcnow()
        product.active = False
        product.updated_at = utcnow()
        await session.flush()
    return product


# --- catalog: prices ------------------------------------------------------------------------------
def _tiers(tiers: list[TierIn] | None) -> list[pricing.Tier] | None:
    return [pricing.Tier(t.up_to, t.unit_amount, t.flat_amount) for t in tiers] if tiers is not None else None


def check_terms(terms: PriceTerms, param_prefix: str = "") -> None:
    problem = pricing.tier_problem(terms.pricing_model, terms.amount, _tiers(terms.tiers))
    if problem is not None:
        raise TiersInvalid(f"The tiers break the rules: {problem}.", param=f"{param_prefix}tiers")
    if terms.pricing_model == "per_unit":
        if terms.amount is None:
            raise ParameterMissing("A per_unit price needs its amount.", param=f"{param_prefix}amount")
        if not 1 <= terms.amount <= MAX_AMOUNT:
            raise AmountInvalid(
                f"amount must be 1 to {MAX_AMOUNT} minor units.", param=f"{param_prefix}amount"
            )


async def active_product(session: AsyncSession, tenant: Tenant, product_id: str, param: str) -> Product:
    product = await repository.get_product(session, tenant, product_id)
    if product is None:
        raise ReferencedResourceMissing(f"No such product: {product_id!r}", param=param)
    if not product.active:
        raise Conflict(
            "This product is archived or inactive: it takes no new prices or subscriptions.", param=param
        )
    return product


async def create_price(
    session: AsyncSession, tenant: Tenant, command: PriceCreate, *, param_prefix: str = ""
) -> Price:
    check_terms(command, param_prefix)
    product = await active_product(session, tenant, command.product, f"{param_prefix}product")
    price = Price(
        id=new_id("price"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        product_id=product.id,
        name=command.name,
        currency=command.currency,
        interval=command.interval,
        interval_count=command.interval_count,
        pricing_model=command.pricing_model,
        amount=command.amount if command.pricing_model == "per_unit" else None,
        tiers=[t.model_dump() for t in command.tiers] if command.tiers is not None else None,
        active=True,
        metadata_=command.metadata,
        created_at=utcnow(),
    )
    await repository.add(session, price)
    return price


async def get_price(session: AsyncSession, tenant: Tenant, price_id: str, *, lock: bool = False) -> Price:
    price = await repository.get_price(session, tenant, price_id, for_update=lock)
    if price is None:
        raise ResourceMissing(f"No such price: {price_id!r}", param="price")
    return price


async def list_prices(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Price]:
    return await repository.list_prices(session, tenant, limit=limit, after=after)


async def archive_price(session: AsyncSession, tenant: Tenant, price_id: str) -> Price:
    """No new subscriptions on it; the subscriptions that use it keep their terms."""
    price = await get_price(session, tenant, price_id, lock=True)
    price.active = False
    await session.flush()
    return price


def cycle_amount(price: Price, quantity: int) -> int:
    return pricing.total(
        cast(pricing.PricingModel, price.pricing_model), quantity, amount=price.amount, tiers=_tiers_of(price)
    )


async def checked_total(session: AsyncSession, tenant: Tenant, price: Price, quantity: int) -> int:
    """A cycle's total within 1 to 99999999 and above the commission it carries (spec part 8)."""
    amount = cycle_amount(price, quantity)
    if not 1 <= amount <= MAX_AMOUNT:
        raise AmountInvalid(
            f"{quantity} at this price comes to {amount}; a total must be 1 to {MAX_AMOUNT} minor units.",
            param="quantity",
        )
    reserve = (await payments.commission_policy(session, tenant)).reserve(amount)
    if reserve is not None and amount <= reserve:
        raise AmountInvalid(
            f"The total ({amount}) must be more than the commission it carries ({reserve}).", param="quantity"
        )
    return amount


async def quote_price(session: AsyncSession, tenant: Tenant, price_id: str, quantity: int) -> int:
    price = await get_price(session, tenant, price_id)
    return await checked_total(session, tenant, price, quantity)
