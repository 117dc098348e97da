"""webhook secrets sealed, rotation overlap, disabled endpoints, deliveries and their attempts; per-key
rate limits per environment

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 06:00:00.000000

Existing webhook secrets and stored idempotent answers stay as they are (readable) until the operator
runs `moneyrail secrets rotate`, which seals every one of them with MONEYRAIL_SECRET_KEYS: a migration
has no business holding the keys.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("webhook_endpoints", sa.Column("previous_secret", sa.String(), nullable=True))
    op.add_column(
        "webhook_endpoints",
        sa.Column("previous_secret_expires_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.add_column("webhook_endpoints", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("endpoint_id", sa.String(), nullable=False),
        sa.Column("event_id", sa.String(), nullable=False),
        sa.Column("event_type", sa.String(), nullable=False),
        sa.Column("resend_of", sa.String(), nullable=True),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["webhook_endpoints.id"],
            name=op.f("fk_webhook_deliveries_endpoint_id_webhook_endpoints"),
        ),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_webhook_deliveries_installation_id_installations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(
        "ix_webhook_deliveries_endpoint", "webhook_deliveries", ["endpoint_id", "created_at", "id"]
    )
    op.create_table(
        "webhook_delivery_attempts",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.String(), nullable=False),
        sa.Column("number", sa.BigInteger(), nullable=False),
        sa.Column(
            "attempted_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.Column("response_status", sa.BigInteger(), nullable=True),
        sa.Column("latency_ms", sa.Double(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_delivery_attempts")),
    )
    op.create_index(
        "ix_webhook_delivery_attempts_delivery", "webhook_delivery_attempts", ["delivery_id", "number"]
    )
    op.add_column("environment_settings", sa.Column("rate_limit_per_second", sa.BigInteger(), nullable=True))
    op.create_check_constraint(
        op.f("ck_environment_settings_rate_limit_per_second"),
        "environment_settings",
        "rate_limit_per_second >= 0",
    )


def downgrade() -> None:
    op.drop_constraint("ck_environment_settings_rate_limit_per_second", "environment_settings", type_="check")
    op.drop_column("environment_settings", "rate_limit_per_second")
    op.drop_index("ix_webhook_delivery_attempts_delivery", table_name="webhook_delivery_attempts")
    op.drop_table("webhook_delivery_attempts")
    op.drop_index("ix_webhook_deliveries_endpoint", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_column("webhook_endpoints", "disabled_at")
    op.drop_column("webhook_endpoints", "previous_secret_expires_at")
    op.drop_column("webhook_endpoints", "previous_secret")
