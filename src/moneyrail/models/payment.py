"""Payment intents, their refunds and the receipts sent for them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

PAYMENT_INTENT_STATUSES = (
    "requires_payment_method",
    "requires_confirmation",
    "requires_action",
    "processing",
    "requires_capture",
    "succeeded",
    "canceled",
)


class PaymentIntent(TenantOwned, Base):
    __tablename__ = "payment_intents"
    __table_args__ = (
        CheckConstraint(
            "status IN ('requires_payment_method', 'requires_confirmation', 'requires_action', 'processing',"
            " 'requires_capture', 'succeeded', 'canceled')",
            name="status",
        ),
        CheckConstraint("capture_method IN ('automatic', 'manual')", name="capture_method"),
        CheckConstraint("fee_status IN ('pending', 'final')", name="fee_status"),
        CheckConstraint("amount > 0", name="amount"),
        # money never appears from nowhere: received within authorized, refunded within received
        CheckConstraint("amount_received >= 0 AND amount_received <= amount", name="amount_received"),
        CheckConstraint(
            "amount_refunded >= 0 AND amount_refunded <= amount_received", name="amount_refunded"
        ),
        Index("ix_payment_intents_list", "installation_id", "livemode", "created_at", "id"),
        # the fee-report job's question: captured payments whose cost is not known yet
        Index(
            "ix_payment_intents_fees_pending",
            "captured_at",
            postgresql_where=text("fee_status = 'pending' AND captured_at IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    amount: Mapped[int]
    currency: Mapped[str]
    status: Mapped[str]
    capture_method: Mapped[str]
    amount_capturable: Mapped[int] = mapped_column(server_default=text("0"))
    amount_received: Mapped[int] = mapped_column(server_default=text("0"))
    amount_refunded: Mapped[int] = mapped_column(server_default=text("0"))
    customer_id: Mapped[str | None] = mapped_column(ForeignKey("customers.id"))
    payment_method_id: Mapped[str | None] = mapped_column(ForeignKey("payment_methods.id"))
    merchant_id: Mapped[str | None] = mapped_column(ForeignKey("merchants.id"))  # a marketplace payment
    # it declared a distribution (payment_distributions): rendering asks for one only then
    has_distribution: Mapped[bool] = mapped_column(server_default=text("false"), default=False)
    external_reference: Mapped[str | None]
    description: Mapped[str | None]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    receipt_email: Mapped[str | None]
    receipt_phone: Mapped[str | None]
    client_secret_hash: Mapped[str] = mapped_column(unique=True)
    # the fee reserve (CONVENTIONS.md §7): set when the environment had a commission policy at creation
    commission_basis_points: Mapped[int] = mapped_column(server_default=text("0"))
    commission_fixed_amount: Mapped[int] = mapped_column(server_default=text("0"))
    fee_reserve: Mapped[int | None]
    fee_status: Mapped[str] = mapped_column(server_default="pending")
    fee_commission: Mapped[int | None]
    fee_collected: Mapped[int | None]
    fee_prior_recovery: Mapped[int] = mapped_column(server_default=text("0"))
    fee_outstanding: Mapped[int | None]
    processing_cost: Mapped[int | None]
    # proceeds still in the pending balance: they become available when the fees are final
    amount_pending_settlement: Mapped[int] = mapped_column(server_default=text("0"))
    processor_authorization: Mapped[str | None]
    confirmations: Mapped[int] = mapped_column(server_default=text("0"))
    save_payment_method: Mapped[bool] = mapped_column(server_default=text("false"))
    next_action: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    authentication_token_hash: Mapped[str | None] = mapped_column(unique=True)
    return_url: Mapped[str | None]
    last_payment_error: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    cancellation_reason: Mapped[str | None]
    canceled_at: Mapped[datetime | None]
    captured_at: Mapped[datetime | None]  # on the tenant's clock (the sandbox clock in the sandbox)
    fees_finalized_at: Mapped[datetime | None]
    # a processor call in flight on an outside processor (payments/phases.py): the request holding the
    # claim, and the end of its lease; never shown by the API (the payment reads as before the call).
    # Not indexed: a claim and its end then leave the row's indexes alone (a HOT update)
    processor_call: Mapped[str | None]
    processor_call_until: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class Refund(TenantOwned, Base):
    __tablename__ = "refunds"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'succeeded', 'failed', 'canceled')", name="status"),
        CheckConstraint("amount > 0", name="amount"),
        Index("ix_refunds_list", "installation_id", "livemode", "created_at", "id"),
        Index("ix_refunds_payment", "payment_intent_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"))
    amount: Mapped[int]
    currency: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="pending")
    reason: Mapped[str | None]
    failure_reason: Mapped[str | None]
    last_operation_error: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    processor_refund: Mapped[str | None]
    # a processor refusal ends one generation of keys; an operator's retry asks again under the next
    key_generation: Mapped[int] = mapped_column(server_default=text("0"))
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class ReceiptDelivery(TenantOwned, Base):
    """One channel's receipt for a succeeded payment: e-mail or SMS."""

    __tablename__ = "receipt_deliveries"
    __table_args__ = (
        CheckConstraint("channel IN ('email', 'sms')", name="channel"),
        CheckConstraint("status IN ('pending', 'sent', 'failed')", name="status"),
        UniqueConstraint("payment_intent_id", "channel"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"))
    channel: Mapped[str]
    recipient: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="pending")
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    last_error: Mapped[str | None]
    sent_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class SandboxSmsMessage(TenantOwned, Base):
    """What the sandbox SMS sender 'sent': recorded, so tests and developers can read it."""

    __tablename__ = "sandbox_sms_messages"
    __table_args__ = (Index("ix_sandbox_sms_messages_recipient", "installation_id", "livemode", "recipient"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    recipient: Mapped[str]
    body: Mapped[str]
    idempotency_key: Mapped[str] = mapped_column(unique=True)
