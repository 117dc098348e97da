"""Customers of an installation's environment."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Index, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned


class Customer(TenantOwned, Base):
    __tablename__ = "customers"
    __table_args__ = (
        # "created or reused by external_reference": the database, not a read-then-write, decides.
        Index(
            "uq_customers_external_reference",
            "installation_id",
            "livemode",
            "external_reference",
            unique=True,
            postgresql_where=text("external_reference IS NOT NULL"),
        ),
        Index("ix_customers_list", "installation_id", "livemode", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    external_reference: Mapped[str | None]
    email: Mapped[str | None]
    name: Mapped[str | None]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
