"""idempotent answers sealed before the database stamps their object's created

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-26 03:30:00.000000

A route whose claim, effect and stored answer are one self-committing statement (the keyed
`POST /v1/customers`) seals its answer before that statement runs, so before the database stamps the
new object's `created_at` (a sandbox row's is the tenant's clock, set by a trigger). The answer is
sealed with a mark where `created` goes, and the record keeps the stamped moment beside it, copied
from the effect's RETURNING by the same statement; a replay fills the mark in (api/idempotency.py).
NULL for every other answer, which is sealed whole.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "idempotency_records", sa.Column("answer_created_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("idempotency_records", "answer_created_at")
