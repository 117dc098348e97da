"""Connected accounts (couriers, drivers, other beneficiaries) and their single-use onboarding links.

An onboarding link is a credential: only its SHA-256 is kept (`token_hash`), never the token itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, SingleUseLink, TenantOwned

CONNECTED_ACCOUNT_KINDS = ("courier", "driver", "merchant", "other")


class ConnectedAccount(TenantOwned, Base):
    __tablename__ = "connected_accounts"
    __table_args__ = (
        CheckConstraint("kind IN ('courier', 'driver', 'merchant', 'other')", name="kind"),
        CheckConstraint("onboarding_status IN ('pending', 'complete')", name="onboarding_status"),
        Index("ix_connected_accounts_list", "installation_id", "livemode", "created_at", "id"),
        Index(
            "ix_connected_accounts_processor_account",
            "installation_id",
            "livemode",
            "processor_account",
            unique=True,
            postgresql_where=text("processor_account IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    kind: Mapped[str]
    country: Mapped[str]
    email: Mapped[str | None]
    display_name: Mapped[str | None]
    # the payout destination; shown only as its last four digits (a merchant's may still be due)
    bank_account_number: Mapped[str | None]
    bank_last4: Mapped[str | None]
    # the merchant (connected over OAuth) this account pays, one account per merchant
    merchant_id: Mapped[str | None] = mapped_column(ForeignKey("merchants.id"), unique=True)
    onboarding_status: Mapped[str] = mapped_column(server_default="pending")
    # the processor's own account this one is linked to (Stripe's `acct_…`), set by its
    # `connected_account` operation (`link_operation_id`); never shown (the simulator needs none: null)
    processor_account: Mapped[str | None]
    link_operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    # what the hosted onboarding page collected (never identity documents: names, date of birth)
    individual: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    tos_accepted_at: Mapped[datetime | None]
    tos_accepted_ip: Mapped[str | None]  # the address the terms were accepted from
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class OnboardingLink(SingleUseLink, TenantOwned, Base):
    __tablename__ = "onboarding_links"
    __table_args__ = (Index("ix_onboarding_links_account", "connected_account_id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    connected_account_id: Mapped[str] = mapped_column(ForeignKey("connected_accounts.id"))
    token_hash: Mapped[str] = mapped_column(unique=True)
    return_url: Mapped[str | None]
    expires_at: Mapped[datetime]  # on the tenant's clock (the sandbox clock in the sandbox)
    used_at: Mapped[datetime | None]
