"""subscription changes

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-24 07:05:00.000000

Change proposals of a subscription (spec 2, 3, 4.M): immutable quotes, at most one unapplied per
subscription (a partial unique index), created on the tenant's clock in the sandbox (the trigger of
migration 0013).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "subscription_changes",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("subscription_id", sa.String(), nullable=False),
        sa.Column("price_id", sa.String(), nullable=False),
        sa.Column("quantity", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("effective", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("terms_version", sa.BigInteger(), nullable=False),
        sa.Column("current_amount", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("amount_due", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("invoice_id", sa.String(), nullable=True),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("canceled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "status IN ('open', 'accepted', 'awaiting_payment', 'applied', 'canceled', 'expired')",
            name=op.f("ck_subscription_changes_status"),
        ),
        sa.CheckConstraint(
            "effective IN ('immediate', 'next_cycle')", name=op.f("ck_subscription_changes_effective")
        ),
        sa.CheckConstraint("amount_due >= 0", name=op.f("ck_subscription_changes_amount_due")),
        sa.CheckConstraint("quantity BETWEEN 1 AND 10000", name=op.f("ck_subscription_changes_quantity")),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_subscription_changes_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["subscriptions.id"],
            name=op.f("fk_subscription_changes_subscription_id_subscriptions"),
        ),
        sa.ForeignKeyConstraint(
            ["price_id"], ["prices.id"], name=op.f("fk_subscription_changes_price_id_prices")
        ),
        sa.ForeignKeyConstraint(
            ["invoice_id"],
            ["subscription_invoices.id"],
            name=op.f("fk_subscription_changes_invoice_id_subscription_invoices"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscription_changes")),
    )
    op.create_index(
        "ix_subscription_changes_list", "subscription_changes", ["subscription_id", "created_at", "id"]
    )
    op.create_index(
        "uq_subscription_changes_unapplied",
        "subscription_changes",
        ["subscription_id"],
        unique=True,
        postgresql_where=sa.text("status IN ('open', 'accepted', 'awaiting_payment')"),
    )
    op.create_index(
        "ix_subscription_changes_expiring",
        "subscription_changes",
        ["expires_at"],
        postgresql_where=sa.text("status = 'open'"),
    )
    # a next_cycle change's checkout takes no payment: the page confirms the change (spec 4.M rule 5)
    op.drop_constraint(op.f("ck_checkout_sessions_subject"), "checkout_sessions", type_="check")
    op.create_check_constraint(
        op.f("ck_checkout_sessions_subject"),
        "checkout_sessions",
        "payment_intent_id IS NOT NULL OR change_id IS NOT NULL",
    )
    op.execute(
        """
        CREATE TRIGGER subscription_changes_sandbox_created_at BEFORE INSERT ON subscription_changes
        FOR EACH ROW WHEN (NOT NEW.livemode) EXECUTE FUNCTION moneyrail_sandbox_created_at()
        """
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS subscription_changes_sandbox_created_at ON subscription_changes")
    op.drop_constraint(op.f("ck_checkout_sessions_subject"), "checkout_sessions", type_="check")
    op.create_check_constraint(
        op.f("ck_checkout_sessions_subject"), "checkout_sessions", "payment_intent_id IS NOT NULL"
    )
    op.drop_index("ix_subscription_changes_expiring", table_name="subscription_changes")
    op.drop_index("uq_subscription_changes_unapplied", table_name="subscription_changes")
    op.drop_index("ix_subscription_changes_list", table_name="subscription_changes")
    op.drop_table("subscription_changes")
