"""final means final: objects wait in their pending state while their operation retries or is dead-lettered

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-27 16:00:00.000000

CONVENTIONS.md §9. An object moved by an operation shows the last error its operation met in a field of
its own, `last_operation_error` ({code, message, at}), and becomes `failed` only when the operation ends
for good. A transfer names its operation (`operation`, its group's); a refund moves to its next
processor key after a refusal, so an operator's retry asks again instead of replaying the refusal.

Rows written under the old rule, whose operation still waits in `dead_letter`, go back to their pending
state with their error moved to the new field: an operator's decision on that dead letter settles them
as it settles the new ones.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WAITING_OBJECTS = ("transfers", "allocation_groups", "payouts", "refunds", "subscription_invoices")


def upgrade() -> None:
    for table in WAITING_OBJECTS:
        op.add_column(table, sa.Column("last_operation_error", postgresql.JSONB(), nullable=True))
    op.add_column("transfers", sa.Column("operation_id", sa.String(), nullable=True))
    op.create_foreign_key(
        "fk_transfers_operation_id_operations", "transfers", "operations", ["operation_id"], ["id"]
    )
    op.add_column(
        "refunds", sa.Column("key_generation", sa.BigInteger(), server_default=sa.text("0"), nullable=False)
    )
    op.execute(
        "UPDATE transfers AS t SET operation_id = g.operation_id"
        " FROM allocation_groups AS g WHERE g.id = t.allocation_group_id"
    )
    # the old rule's dead letters: back to pending, the error shown where it now belongs
    op.execute(
        """
        UPDATE transfers AS t
        SET status = 'pending', failure_code = NULL, failure_message = NULL,
            last_operation_error = jsonb_build_object(
                'code', t.failure_code, 'message', coalesce(t.failure_message, ''), 'at', o.updated_at)
        FROM operations AS o
        WHERE o.id = t.operation_id AND o.status = 'dead_letter' AND t.status = 'failed'
        """
    )
    op.execute(
        """
        UPDATE allocation_groups AS g
        SET status = 'committing', failure_reason = NULL,
            last_operation_error = jsonb_build_object(
                'code', 'temporary_failure', 'message', left(coalesce(o.last_error, ''), 500),
                'at', o.updated_at)
        FROM operations AS o
        WHERE o.id = g.operation_id AND o.status = 'dead_letter' AND g.status = 'failed'
        """
    )
    op.execute(
        """
        UPDATE subscription_invoices AS i SET settlement_status = 'distributing'
        FROM allocation_groups AS g
        WHERE g.id = i.allocation_group_id AND g.status = 'committing' AND i.settlement_status = 'failed'
        """
    )
    op.execute(
        """
        UPDATE payouts AS p
        SET failure_code = NULL, failure_message = NULL,
            last_operation_error = jsonb_build_object(
                'code', p.failure_code, 'message', coalesce(p.failure_message, ''), 'at', o.updated_at)
        FROM operations AS o
        WHERE o.id = p.operation_id AND o.status = 'dead_letter' AND p.status = 'pending'
          AND p.failure_code IS NOT NULL
        """
    )
    for table in ("receipt_deliveries", "invoice_deliveries"):
        op.execute(
            f"UPDATE {table} AS d SET status = 'pending' FROM operations AS o"  # noqa: S608 - a fixed name
            " WHERE o.id = d.operation_id AND o.status = 'dead_letter' AND d.status = 'failed'"
        )


def downgrade() -> None:
    op.drop_column("refunds", "key_generation")
    op.drop_constraint("fk_transfers_operation_id_operations", "transfers", type_="foreignkey")
    op.drop_column("transfers", "operation_id")
    for table in WAITING_OBJECTS:
        op.drop_column(table, "last_operation_error")
