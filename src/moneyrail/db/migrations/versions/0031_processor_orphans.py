"""processor orphans

Revision ID: 0031
Revises: 0023
Create Date: 2026-11-25 12:00:00.000000

A charge the processor made for a payment whose own transaction was then lost (issue 14's soak): the
sandbox network records what each authorization was for (`reference`, a payment's id) and when, and
moneyrail records each such orphan it released at the processor, with the sweep's watermark.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sandbox_authorizations", sa.Column("reference", sa.String(), nullable=True))
    op.create_index("ix_sandbox_authorizations_created", "sandbox_authorizations", ["created_at"])
    op.create_table(
        "processor_orphans",
        sa.Column("authorization_id", sa.String(), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("payment_intent_id", sa.String(), nullable=True),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("found_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("action IN ('void', 'refund')", name=op.f("ck_processor_orphans_action")),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_processor_orphans_installation_id_installations"),
        ),
        sa.PrimaryKeyConstraint("authorization_id", name=op.f("pk_processor_orphans")),
    )
    op.create_table(
        "processor_orphan_sweeps",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("checked_through", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_processor_orphan_sweeps")),
    )


def downgrade() -> None:
    op.drop_table("processor_orphan_sweeps")
    op.drop_table("processor_orphans")
    op.drop_index("ix_sandbox_authorizations_created", table_name="sandbox_authorizations")
    op.drop_column("sandbox_authorizations", "reference")
