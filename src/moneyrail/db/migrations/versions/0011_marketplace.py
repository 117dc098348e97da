"""marketplace: connected accounts, onboarding links, payment distributions, allocation groups,
allocations, transfers, transfer reversals, payouts and reconciliation runs

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 05:59:53.416250
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a payment knows whether it declared a distribution, so rendering one that did not reads nothing more
    op.add_column(
        "payment_intents",
        sa.Column("has_distribution", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.create_table(
        "connected_accounts",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("country", sa.String(), nullable=False),
        sa.Column("email", sa.String(), nullable=True),
        sa.Column("display_name", sa.String(), nullable=True),
        sa.Column("bank_account_number", sa.String(), nullable=False),
        sa.Column("bank_last4", sa.String(), nullable=False),
        sa.Column("onboarding_status", sa.String(), server_default="pending", nullable=False),
        sa.Column(
            "individual",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("tos_accepted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "kind IN ('courier', 'driver', 'merchant', 'other')", name=op.f("ck_connected_accounts_kind")
        ),
        sa.CheckConstraint(
            "onboarding_status IN ('pending', 'complete')",
            name=op.f("ck_connected_accounts_onboarding_status"),
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_connected_accounts_installation_id_installations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connected_accounts")),
    )
    op.create_index(
        "ix_connected_accounts_list",
        "connected_accounts",
        ["installation_id", "livemode", "created_at", "id"],
        unique=False,
    )
    op.create_table(
        "onboarding_links",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("connected_account_id", sa.String(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("return_url", sa.String(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["connected_account_id"],
            ["connected_accounts.id"],
            name=op.f("fk_onboarding_links_connected_account_id_connected_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_onboarding_links_installation_id_installations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_onboarding_links")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_onboarding_links_token_hash")),
    )
    op.create_index("ix_onboarding_links_account", "onboarding_links", ["connected_account_id"], unique=False)
    op.create_table(
        "allocation_groups",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("payment_intent_id", sa.String(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("amount_allocated", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("status", sa.String(), server_default="open", nullable=False),
        sa.Column("source", sa.String(), server_default="api", nullable=False),
        sa.Column("operation_id", sa.String(), nullable=True),
        sa.Column("failure_reason", sa.String(), nullable=True),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("committed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "source IN ('api', 'distribution', 'transfer')", name=op.f("ck_allocation_groups_source")
        ),
        sa.CheckConstraint(
            "status IN ('open', 'committing', 'committed', 'failed')",
            name=op.f("ck_allocation_groups_status"),
        ),
        sa.CheckConstraint("amount > 0", name=op.f("ck_allocation_groups_amount")),
        sa.CheckConstraint(
            "amount_allocated >= 0 AND amount_allocated <= amount",
            name=op.f("ck_allocation_groups_amount_allocated"),
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_allocation_groups_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_allocation_groups_operation_id_operations")
        ),
        sa.ForeignKeyConstraint(
            ["payment_intent_id"],
            ["payment_intents.id"],
            name=op.f("fk_allocation_groups_payment_intent_id_payment_intents"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_allocation_groups")),
    )
    op.create_index(
        "ix_allocation_groups_list",
        "allocation_groups",
        ["installation_id", "livemode", "created_at", "id"],
        unique=False,
    )
    op.create_index("ix_allocation_groups_payment", "allocation_groups", ["payment_intent_id"], unique=False)
    op.create_table(
        "payment_distributions",
        sa.Column("payment_intent_id", sa.String(), nullable=False),
        sa.Column("merchant_of_record", sa.String(), nullable=True),
        sa.Column(
            "allocations",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
        sa.Column("allocation_group_id", sa.String(), nullable=True),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_payment_distributions_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["payment_intent_id"],
            ["payment_intents.id"],
            name=op.f("fk_payment_distributions_payment_intent_id_payment_intents"),
        ),
        sa.PrimaryKeyConstraint("payment_intent_id", name=op.f("pk_payment_distributions")),
    )
    op.create_table(
        "allocations",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("allocation_group_id", sa.String(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("recipient", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=True),
        sa.Column("gross_amount", sa.BigInteger(), nullable=False),
        sa.Column("commission", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("amount > 0", name=op.f("ck_allocations_amount")),
        sa.CheckConstraint(
            "commission >= 0 AND commission <= gross_amount", name=op.f("ck_allocations_commission")
        ),
        sa.ForeignKeyConstraint(
            ["allocation_group_id"],
            ["allocation_groups.id"],
            name=op.f("fk_allocations_allocation_group_id_allocation_groups"),
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_allocations_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["recipient"], ["connected_accounts.id"], name=op.f("fk_allocations_recipient_connected_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_allocations")),
        sa.UniqueConstraint(
            "allocation_group_id", "position", name=op.f("uq_allocations_allocation_group_id_position")
        ),
    )
    op.create_table(
        "transfers",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("allocation_group_id", sa.String(), nullable=False),
        sa.Column("allocation_id", sa.String(), nullable=False),
        sa.Column("source_payment_intent_id", sa.String(), nullable=False),
        sa.Column("destination", sa.String(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("status", sa.String(), server_default="pending", nullable=False),
        sa.Column("amount_reversed", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("amount_pending_settlement", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("key_generation", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("processor_transfer", sa.String(), nullable=True),
        sa.Column("failure_code", sa.String(), nullable=True),
        sa.Column("failure_message", sa.String(), nullable=True),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("paid_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'paid', 'failed', 'reversed')", name=op.f("ck_transfers_status")
        ),
        sa.CheckConstraint("amount > 0", name=op.f("ck_transfers_amount")),
        sa.CheckConstraint(
            "amount_pending_settlement >= 0 AND amount_pending_settlement <= amount - amount_reversed",
            name=op.f("ck_transfers_amount_pending_settlement"),
        ),
        sa.CheckConstraint(
            "amount_reversed >= 0 AND amount_reversed <= amount", name=op.f("ck_transfers_amount_reversed")
        ),
        sa.ForeignKeyConstraint(
            ["allocation_group_id"],
            ["allocation_groups.id"],
            name=op.f("fk_transfers_allocation_group_id_allocation_groups"),
        ),
        sa.ForeignKeyConstraint(
            ["allocation_id"], ["allocations.id"], name=op.f("fk_transfers_allocation_id_allocations")
        ),
        sa.ForeignKeyConstraint(
            ["destination"],
            ["connected_accounts.id"],
            name=op.f("fk_transfers_destination_connected_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"], ["installations.id"], name=op.f("fk_transfers_installation_id_installations")
        ),
        sa.ForeignKeyConstraint(
            ["source_payment_intent_id"],
            ["payment_intents.id"],
            name=op.f("fk_transfers_source_payment_intent_id_payment_intents"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transfers")),
        sa.UniqueConstraint("allocation_id", name=op.f("uq_transfers_allocation_id")),
    )
    op.create_index("ix_transfers_group", "transfers", ["allocation_group_id"], unique=False)
    op.create_index(
        "ix_transfers_list", "transfers", ["installation_id", "livemode", "created_at", "id"], unique=False
    )
    op.create_index("ix_transfers_source", "transfers", ["source_payment_intent_id"], unique=False)
    op.create_table(
        "transfer_reversals",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("transfer_id", sa.String(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("refund_id", sa.String(), nullable=True),
        sa.Column("processor_reversal", sa.String(), nullable=False),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("amount > 0", name=op.f("ck_transfer_reversals_amount")),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_transfer_reversals_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["refund_id"], ["refunds.id"], name=op.f("fk_transfer_reversals_refund_id_refunds")
        ),
        sa.ForeignKeyConstraint(
            ["transfer_id"], ["transfers.id"], name=op.f("fk_transfer_reversals_transfer_id_transfers")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transfer_reversals")),
    )
    op.create_index("ix_transfer_reversals_refund", "transfer_reversals", ["refund_id"], unique=False)
    op.create_index(
        "ix_transfer_reversals_transfer", "transfer_reversals", ["transfer_id", "created_at"], unique=False
    )
    op.create_table(
        "payouts",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("connected_account_id", sa.String(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("fee_amount", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("method", sa.String(), nullable=False),
        sa.Column("status", sa.String(), server_default="pending", nullable=False),
        sa.Column("arrival_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failure_code", sa.String(), nullable=True),
        sa.Column("failure_message", sa.String(), nullable=True),
        sa.Column("operation_id", sa.String(), nullable=True),
        sa.Column("processor_payout", sa.String(), nullable=True),
        sa.Column("key_generation", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("method IN ('standard', 'instant')", name=op.f("ck_payouts_method")),
        sa.CheckConstraint(
            "status IN ('pending', 'in_transit', 'paid', 'failed', 'canceled')",
            name=op.f("ck_payouts_status"),
        ),
        sa.CheckConstraint("amount > 0", name=op.f("ck_payouts_amount")),
        sa.CheckConstraint("fee_amount >= 0", name=op.f("ck_payouts_fee_amount")),
        sa.ForeignKeyConstraint(
            ["connected_account_id"],
            ["connected_accounts.id"],
            name=op.f("fk_payouts_connected_account_id_connected_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"], ["installations.id"], name=op.f("fk_payouts_installation_id_installations")
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_payouts_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payouts")),
    )
    op.create_index("ix_payouts_account", "payouts", ["connected_account_id", "created_at"], unique=False)
    op.create_index(
        "ix_payouts_in_transit",
        "payouts",
        ["arrival_date"],
        unique=False,
        postgresql_where=sa.text("status = 'in_transit'"),
    )
    op.create_index(
        "ix_payouts_list", "payouts", ["installation_id", "livemode", "created_at", "id"], unique=False
    )
    op.create_table(
        "reconciliation_runs",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), server_default="pending", nullable=False),
        sa.Column(
            "issues",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
        sa.Column("transfers_checked", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("operation_id", sa.String(), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'completed', 'failed')", name=op.f("ck_reconciliation_runs_status")
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_reconciliation_runs_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_reconciliation_runs_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reconciliation_runs")),
    )
    op.create_index(
        "ix_reconciliation_runs_list",
        "reconciliation_runs",
        ["installation_id", "livemode", "created_at", "id"],
        unique=False,
    )
    # ### end Alembic commands ###


def downgrade() -> None:
    op.drop_column("payment_intents", "has_distribution")
    op.drop_index("ix_reconciliation_runs_list", table_name="reconciliation_runs")
    op.drop_table("reconciliation_runs")
    op.drop_index("ix_payouts_list", table_name="payouts")
    op.drop_index(
        "ix_payouts_in_transit", table_name="payouts", postgresql_where=sa.text("status = 'in_transit'")
    )
    op.drop_index("ix_payouts_account", table_name="payouts")
    op.drop_table("payouts")
    op.drop_index("ix_transfer_reversals_transfer", table_name="transfer_reversals")
    op.drop_index("ix_transfer_reversals_refund", table_name="transfer_reversals")
    op.drop_table("transfer_reversals")
    op.drop_index("ix_transfers_source", table_name="transfers")
    op.drop_index("ix_transfers_list", table_name="transfers")
    op.drop_index("ix_transfers_group", table_name="transfers")
    op.drop_table("transfers")
    op.drop_table("allocations")
    op.drop_table("payment_distributions")
    op.drop_index("ix_allocation_groups_payment", table_name="allocation_groups")
    op.drop_index("ix_allocation_groups_list", table_name="allocation_groups")
    op.drop_table("allocation_groups")
    op.drop_index("ix_onboarding_links_account", table_name="onboarding_links")
    op.drop_table("onboarding_links")
    op.drop_index("ix_connected_accounts_list", table_name="connected_accounts")
    op.drop_table("connected_accounts")
    # ### end Alembic commands ###
