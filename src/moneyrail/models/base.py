"""Declarative base and the columns every tenant-owned table shares."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, DateTime, ForeignKey, MetaData, String, event, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection
from sqlalchemy.orm import DeclarativeBase, Mapped, Mapper, attributes, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        int: BigInteger,
        str: String,
        bool: Boolean,
        datetime: DateTime(timezone=True),
        dict[str, Any]: JSONB,
    }


class TenantOwned:
    """A row belongs to one installation and one environment (livemode)."""

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"), index=False)
    livemode: Mapped[bool]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())


class SingleUseLink:
    """A hosted link that its first open spends (CONVENTIONS.md §13, kit/single_use.py): the moment of
    that open, on the tenant's clock, and the SHA-256 of the secret of the page session it started."""

    opened_at: Mapped[datetime | None]
    page_session_hash: Mapped[str | None]


# Sandbox objects are created on their tenant's clock (issue 18.4): for these tables the database stamps
# `created_at` of a sandbox row itself, now plus the installation's clock offset (a trigger, migration
# 0013), whatever the statement gave. A new table of sandbox objects joins this set and that trigger.
SANDBOX_CLOCK_TABLES = frozenset(
    {
        "allocation_groups",
        "checkout_sessions",
        "connected_accounts",
        "customer_sessions",
        "customers",
        "dispute_files",
        "disputes",
        "events",
        "invoice_deliveries",
        "invoices",
        "merchant_connections",
        "merchant_onboarding_sessions",
        "merchants",
        "onboarding_links",
        "operations",
        "orders",
        "payment_intents",
        "payment_methods",
        "payouts",
        "prices",
        "products",
        "receipt_deliveries",
        "reconciliation_runs",
        "refunds",
        "risk_reviews",
        "risk_value_list_items",
        "risk_value_lists",
        "setup_intents",
        "subscription_changes",
        "subscription_invoices",
        "subscriptions",
        "transfer_reversals",
        "transfers",
        "webhook_endpoints",
    }
)


@event.listens_for(TenantOwned, "before_insert", propagate=True)
def _created_on_the_tenant_clock(_mapper: Mapper[Any], _connection: Connection, target: Any) -> None:
    """A sandbox row's `created_at` comes from the database (the trigger): leave it out of the INSERT, so
    that the ORM reads back the stamped value (RETURNING) instead of keeping a wall-clock one."""
    if not target.livemode and getattr(target, "__tablename__", None) in SANDBOX_CLOCK_TABLES:
        attributes.instance_dict(target).pop("created_at", None)
