"""each environment's processor, its keys sealed; the processor's webhook events

Revision ID: 0038
Revises: 0032
Create Date: 2026-12-01 12:00:00.000000

An installation's environment runs on `sandbox` (the simulator; never live) or `stripe` (its Stripe
secret or restricted key, sealed with MONEYRAIL_SECRET_KEYS like every secret read back, with a hint
`sk_live_…1234` to show; the publishable key Stripe.js needs; the webhook endpoint's signing secret,
sealed). A live environment starts with none: live mode never simulates. Every sandbox environment
made before this one stays on the simulator.

`processor_events`: each webhook event a processor sent and moneyrail accepted, once per event id (a
replayed event finds its row and does nothing), with the `processor_sync` operation that applies it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0038"
down_revision: str | None = "0035"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SETTINGS = "environment_settings"
CHECKS = {
    "processor": "processor IN ('sandbox', 'stripe')",
    "processor_never_simulated_live": "NOT (livemode AND processor = 'sandbox')",
    "processor_key": "processor <> 'stripe' OR processor_key IS NOT NULL",
}


def upgrade() -> None:
    for column in (
        "processor",
        "processor_key",
        "processor_key_hint",
        "processor_publishable_key",
        "processor_webhook_secret",
        "processor_webhook_secret_hint",
    ):
        op.add_column(SETTINGS, sa.Column(column, sa.String(), nullable=True))
    op.execute(f"UPDATE {SETTINGS} SET processor = 'sandbox' WHERE NOT livemode")  # noqa: S608
    for name, condition in CHECKS.items():
        op.create_check_constraint(op.f(f"ck_{SETTINGS}_{name}"), SETTINGS, condition)
    op.create_table(
        "processor_events",
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("event_id", sa.String(), nullable=False),
        sa.Column("processor", sa.String(), nullable=False),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("account", sa.String(), nullable=True),
        sa.Column("object", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("operation_id", sa.String(), nullable=True),
        sa.Column("outcome", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_processor_events_installation_id_installations"),
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_processor_events_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("installation_id", "livemode", "event_id", name=op.f("pk_processor_events")),
    )


def downgrade() -> None:
    op.drop_table("processor_events")
    for name in CHECKS:
        op.drop_constraint(op.f(f"ck_{SETTINGS}_{name}"), SETTINGS, type_="check")
    for column in (
        "processor_webhook_secret_hint",
        "processor_webhook_secret",
        "processor_publishable_key",
        "processor_key_hint",
        "processor_key",
        "processor",
    ):
        op.drop_column(SETTINGS, column)
