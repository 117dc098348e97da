"""operations carry the most of their type one message may run together

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 18:00:00.000000

The relay packs due operations of one actor into messages of at most `batch_size` ids, so it needs
the figure on the row, as it has the actor and the queue: the scheduler does not import every
domain's policies. 1, the default and every existing row's value, is one operation per message.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "operations", sa.Column("batch_size", sa.BigInteger(), server_default=sa.text("1"), nullable=False)
    )
    op.create_check_constraint(
        op.f("ck_operations_batch_size"), "operations", "batch_size BETWEEN 1 AND 1000"
    )


def downgrade() -> None:
    op.drop_constraint("ck_operations_batch_size", "operations", type_="check")
    op.drop_column("operations", "batch_size")
