"""The operator console's accounts: operators, their one-time set-up links and their sign-in sessions.

Separate from API keys on purpose: an operator signs in with a password and a TOTP code and holds a
session cookie that only `/console` reads; an API key never opens the console.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, func, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, SingleUseLink

OPERATOR_ROLES = ("viewer", "operator")


class Operator(Base):
    __tablename__ = "operators"
    __table_args__ = (CheckConstraint("role IN ('viewer', 'operator')", name="role"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(unique=True)  # lower-cased
    role: Mapped[str]
    password_hash: Mapped[str | None]  # argon2id; NULL until the set-up link is used
    # the TOTP secret, sealed with MONEYRAIL_SECRET_KEYS (kit/crypto.py): it must be read back to check
    # a code. Chosen when the set-up link is first opened.
    totp_secret: Mapped[str | None]
    # the last TOTP time step a sign-in used: a code works once
    last_totp_step: Mapped[int | None]
    set_up_at: Mapped[datetime | None]
    disabled_at: Mapped[datetime | None]
    failed_sign_ins: Mapped[int] = mapped_column(server_default=text("0"))
    locked_until: Mapped[datetime | None]
    last_sign_in_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())


class OperatorSetupLink(SingleUseLink, Base):
    """A one-time link where an operator sets a password and enrols a TOTP second factor. Its first open
    spends it (kit/single_use.py); only the token's SHA-256 is kept."""

    __tablename__ = "operator_setup_links"
    __table_args__ = (Index("ix_operator_setup_links_operator", "operator_id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    token_hash: Mapped[str] = mapped_column(unique=True)
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())


class OperatorSession(Base):
    """A signed-in console session. The cookie holds a secret; the row keeps only its SHA-256 (`id`), so
    reading this table gives no one a session."""

    __tablename__ = "operator_sessions"
    __table_args__ = (Index("ix_operator_sessions_operator", "operator_id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    last_seen_at: Mapped[datetime]
    expires_at: Mapped[datetime]  # the absolute end, whatever the activity
    ended_at: Mapped[datetime | None]  # signed out, or ended by `operators disable|reset`
