"""a payment's processor call in flight (atomic phases of its synchronous steps)

Revision ID: 0041
Revises: 0040
Create Date: 2026-11-29 09:00:00.000000

Issue 31, item 5. A confirm, capture, cancel or increment on an outside processor commits its claim on
the payment before it calls the processor, and records the answer in a second transaction
(payments/phases.py): `processor_call` names the request that holds the claim (its Idempotency-Key's
digest, or a random token), `processor_call_until` ends the claim's lease. Neither is shown by the API.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0041"
down_revision: str | None = "0040"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("payment_intents", sa.Column("processor_call", sa.String(), nullable=True))
    op.add_column(
        "payment_intents", sa.Column("processor_call_until", sa.DateTime(timezone=True), nullable=True)
    )
    # the sweep's look for claims left behind: few rows at any time
    op.create_index(
        "ix_payment_intents_processor_call",
        "payment_intents",
        ["processor_call_until"],
        postgresql_where=sa.text("processor_call_until IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_payment_intents_processor_call", table_name="payment_intents")
    op.drop_column("payment_intents", "processor_call_until")
    op.drop_column("payment_intents", "processor_call")
