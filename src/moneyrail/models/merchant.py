"""Merchants connected over OAuth 2.1 + PKCE, the connections that ask for their consent, the single-use
authorization codes of that flow, and the hosted onboarding sessions that clear their requirements.

Every credential of the flow (the consent link, the authorization code, the onboarding link) is kept
only as its SHA-256.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.dialects.postgresql import ARRAY, TEXT
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, SingleUseLink, TenantOwned

CONNECTION_STATUSES = ("pending", "active", "denied", "revoked")


class Merchant(TenantOwned, Base):
    """One business as this installation and environment sees it: another installation that connects
    the same business gets its own `mer_` id, and revoking one leaves the other untouched."""

    __tablename__ = "merchants"
    __table_args__ = (
        CheckConstraint(
            "connection_status IN ('pending', 'active', 'denied', 'revoked')", name="connection_status"
        ),
        CheckConstraint(
            "consent_status IN ('pending', 'granted', 'denied', 'revoked')", name="consent_status"
        ),
        Index("ix_merchants_list", "installation_id", "livemode", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    business_name: Mapped[str | None]
    business_url: Mapped[str | None]
    support_email: Mapped[str | None]
    connection_status: Mapped[str] = mapped_column(server_default="pending")
    consent_status: Mapped[str] = mapped_column(server_default="pending")
    consent_granted_at: Mapped[datetime | None]
    scopes: Mapped[list[str]] = mapped_column(ARRAY(TEXT), server_default=text("'{}'"))
    # privacy-safe names of what the business still has to provide (no identity data itself)
    requirements_due: Mapped[list[str]] = mapped_column(ARRAY(TEXT), server_default=text("'{}'"))
    revoked_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class MerchantConnection(SingleUseLink, TenantOwned, Base):
    """One request for a merchant's consent: the link of the hosted consent page, used once."""

    __tablename__ = "merchant_connections"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'approved', 'denied', 'expired')", name="status"),
        CheckConstraint("code_challenge_method = 'S256'", name="code_challenge_method"),
        Index("ix_merchant_connections_merchant", "merchant_id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"))
    token_hash: Mapped[str] = mapped_column(unique=True)
    redirect_uri: Mapped[str]
    state: Mapped[str]
    code_challenge: Mapped[str]
    code_challenge_method: Mapped[str]
    scope: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="open")
    expires_at: Mapped[datetime]  # on the tenant's clock
    decided_at: Mapped[datetime | None]


class MerchantAuthorizationCode(TenantOwned, Base):
    """An authorization code: 10 minutes on the tenant's clock, and it works once."""

    __tablename__ = "merchant_authorization_codes"

    id: Mapped[str] = mapped_column(primary_key=True)
    code_hash: Mapped[str] = mapped_column(unique=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"))
    connection_id: Mapped[str] = mapped_column(ForeignKey("merchant_connections.id"))
    redirect_uri: Mapped[str]
    scope: Mapped[str]
    code_challenge: Mapped[str]
    code_challenge_method: Mapped[str]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class MerchantOnboardingSession(SingleUseLink, TenantOwned, Base):
    """A hosted activation page for a merchant that still has requirements; its link works once."""

    __tablename__ = "merchant_onboarding_sessions"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'complete', 'expired')", name="status"),
        Index("ix_merchant_onboarding_sessions_merchant", "merchant_id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"))
    token_hash: Mapped[str] = mapped_column(unique=True)
    return_url: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="open")
    expires_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
