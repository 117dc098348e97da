"""payment invoices (numbered without gaps, immutable once finalized) and commerce orders

Revision ID: 0017
Revises: 0016
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A finalized invoice is a document someone may have received: its terms, its number and its payment
# never change and it is never deleted. Only its status moves on (open -> paid) and its timestamps.
INVOICE_IMMUTABLE = """
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status <> 'draft' THEN
            RAISE EXCEPTION 'invoice % is finalized: it cannot be deleted', OLD.id
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status <> 'draft' AND (
        NEW.status = 'draft'
        OR NEW.customer_id IS DISTINCT FROM OLD.customer_id
        OR NEW.currency IS DISTINCT FROM OLD.currency
        OR NEW.lines IS DISTINCT FROM OLD.lines
        OR NEW.amount_due IS DISTINCT FROM OLD.amount_due
        OR NEW.description IS DISTINCT FROM OLD.description
        OR NEW.number_sequence IS DISTINCT FROM OLD.number_sequence
        OR NEW.number IS DISTINCT FROM OLD.number
        OR NEW.payment_intent_id IS DISTINCT FROM OLD.payment_intent_id
        OR NEW.installation_id IS DISTINCT FROM OLD.installation_id
        OR NEW.livemode IS DISTINCT FROM OLD.livemode
    ) THEN
        RAISE EXCEPTION 'invoice % is finalized: its terms cannot change', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
"""


def _tenant_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "invoices",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), server_default="draft", nullable=False),
        sa.Column("customer_id", sa.String(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("lines", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("amount_due", sa.BigInteger(), nullable=False),
        sa.Column("description", sa.String(), nullable=True),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("success_url", sa.String(), nullable=True),
        sa.Column("cancel_url", sa.String(), nullable=True),
        sa.Column("number_sequence", sa.BigInteger(), nullable=True),
        sa.Column("number", sa.String(), nullable=True),
        sa.Column("payment_intent_id", sa.String(), nullable=True),
        sa.Column("finalized_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("paid_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        *_tenant_columns(),
        sa.CheckConstraint("status IN ('draft', 'open', 'paid')", name=op.f("ck_invoices_status")),
        sa.CheckConstraint("amount_due > 0", name=op.f("ck_invoices_amount_due")),
        sa.CheckConstraint(
            "status = 'draft' OR (number IS NOT NULL AND payment_intent_id IS NOT NULL)",
            name=op.f("ck_invoices_finalized"),
        ),
        sa.ForeignKeyConstraint(
            ["customer_id"], ["customers.id"], name=op.f("fk_invoices_customer_id_customers")
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"], ["installations.id"], name=op.f("fk_invoices_installation_id_installations")
        ),
        sa.ForeignKeyConstraint(
            ["payment_intent_id"],
            ["payment_intents.id"],
            name=op.f("fk_invoices_payment_intent_id_payment_intents"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invoices")),
    )
    op.create_index("ix_invoices_list", "invoices", ["installation_id", "livemode", "created_at", "id"])
    op.create_index(
        "uq_invoices_number",
        "invoices",
        ["installation_id", "livemode", "number_sequence"],
        unique=True,
        postgresql_where=sa.text("number_sequence IS NOT NULL"),
    )
    op.create_index(
        "uq_invoices_payment_intent",
        "invoices",
        ["payment_intent_id"],
        unique=True,
        postgresql_where=sa.text("payment_intent_id IS NOT NULL"),
    )
    op.execute(
        "CREATE FUNCTION invoices_refuse_change_when_final() RETURNS trigger LANGUAGE plpgsql AS "
        f"$body${INVOICE_IMMUTABLE}$body$"
    )
    op.execute(
        "CREATE TRIGGER invoices_immutable_when_final BEFORE UPDATE OR DELETE ON invoices"
        " FOR EACH ROW EXECUTE FUNCTION invoices_refuse_change_when_final()"
    )

    op.create_table(
        "invoice_number_counters",
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("last_number", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_invoice_number_counters_installation_id_installations"),
        ),
        sa.PrimaryKeyConstraint("installation_id", "livemode", name=op.f("pk_invoice_number_counters")),
    )

    op.create_table(
        "invoice_deliveries",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("invoice_id", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("recipient", sa.String(), nullable=False),
        sa.Column("status", sa.String(), server_default="pending", nullable=False),
        sa.Column("operation_id", sa.String(), nullable=True),
        sa.Column("checkout_session_id", sa.String(), nullable=True),
        sa.Column("last_error", sa.String(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        *_tenant_columns(),
        sa.CheckConstraint("channel IN ('email')", name=op.f("ck_invoice_deliveries_channel")),
        sa.CheckConstraint(
            "status IN ('pending', 'sent', 'failed')", name=op.f("ck_invoice_deliveries_status")
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_invoice_deliveries_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["invoice_id"], ["invoices.id"], name=op.f("fk_invoice_deliveries_invoice_id_invoices")
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_invoice_deliveries_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invoice_deliveries")),
    )
    op.create_index("ix_invoice_deliveries_invoice", "invoice_deliveries", ["invoice_id", "created_at"])

    op.create_table(
        "orders",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), server_default="pending", nullable=False),
        sa.Column("version", sa.BigInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("amount_total", sa.BigInteger(), nullable=False),
        sa.Column("lines", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("external_reference", sa.String(), nullable=True),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("payment_intent_id", sa.String(), nullable=True),
        sa.Column("preparation_started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("canceled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        *_tenant_columns(),
        sa.CheckConstraint("status IN ('pending', 'preparing', 'canceled')", name=op.f("ck_orders_status")),
        sa.CheckConstraint("amount_total > 0", name=op.f("ck_orders_amount_total")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_orders_version")),
        sa.CheckConstraint(
            "status <> 'preparing' OR payment_intent_id IS NOT NULL", name=op.f("ck_orders_preparing_paid")
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"], ["installations.id"], name=op.f("fk_orders_installation_id_installations")
        ),
        sa.ForeignKeyConstraint(
            ["payment_intent_id"],
            ["payment_intents.id"],
            name=op.f("fk_orders_payment_intent_id_payment_intents"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_orders")),
    )
    op.create_index("ix_orders_list", "orders", ["installation_id", "livemode", "created_at", "id"])
    op.create_index(
        "uq_orders_payment_intent",
        "orders",
        ["payment_intent_id"],
        unique=True,
        postgresql_where=sa.text("payment_intent_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_table("orders")
    op.drop_table("invoice_deliveries")
    op.drop_table("invoice_number_counters")
    op.execute("DROP TRIGGER invoices_immutable_when_final ON invoices")
    op.execute("DROP FUNCTION invoices_refuse_change_when_final()")
    op.drop_table("invoices")
