"""setup intents are canceled (abandoned) once they expire

Revision ID: 0030
Revises: 0023
Create Date: 2026-11-25 12:30:00.000000

A setup intent not confirmed within its hour becomes `canceled` with `cancellation_reason` `abandoned`
(Stripe's value): a sweep and each sandbox clock advance cancel the due ones, found through a partial
index over the intents still waiting for a card.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("setup_intents", sa.Column("cancellation_reason", sa.String(), nullable=True))
    op.create_check_constraint(
        op.f("ck_setup_intents_cancellation_reason"),
        "setup_intents",
        "cancellation_reason IN ('abandoned')",
    )
    op.create_index(
        "ix_setup_intents_due",
        "setup_intents",
        ["expires_at"],
        unique=False,
        postgresql_where=sa.text("status = 'requires_payment_method'"),
    )


def downgrade() -> None:
    op.drop_index("ix_setup_intents_due", table_name="setup_intents")
    op.drop_constraint(op.f("ck_setup_intents_cancellation_reason"), "setup_intents", type_="check")
    op.drop_column("setup_intents", "cancellation_reason")
