"""a payment's processor-call claim is no longer indexed

Revision ID: 0046
Revises: 0045
Create Date: 2026-11-29 12:40:00.000000

A phased step (payments/phases.py) claims its payment before its processor call and ends the claim in
its last write. With `processor_call_until` indexed, both writes changed an indexed column, so
PostgreSQL could never update the row in place (a HOT update): every claim and its end wrote a new
entry in each of the table's six indexes. A claim whose lease ended is nobody's wherever one is read,
so nothing needs to find them all: the orphan sweep clears the one it meets with the authorization
that request left behind.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0046"
down_revision: str | None = "0045"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_payment_intents_processor_call", table_name="payment_intents")


def downgrade() -> None:
    op.create_index(
        "ix_payment_intents_processor_call",
        "payment_intents",
        ["processor_call_until"],
        postgresql_where=sa.text("processor_call_until IS NOT NULL"),
    )
