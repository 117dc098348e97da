"""billing switches and stopped distributions

Revision ID: 0027
Revises: 0023
Create Date: 2026-11-25 11:45:00.000000

- `subscriptions.anchor_cycle`: the cycle the anchor starts counting from. A monthly/yearly switch
  applied at a renewal moves the anchor to the renewal date and counts the cycles on from there.
- `subscriptions.merchant_id`: the connected merchant (mer_) a subscription sells for; a renewal checks
  its grant is still active.
- `canceled` allocation groups and transfers: a refund of a subscription payment stops the part of its
  distribution not sent yet; the invoice's `settlement_status` reads `canceled` then.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHECKS = {
    ("allocation_groups", "status"): (
        "status IN ('open', 'committing', 'committed', 'failed')",
        "status IN ('open', 'committing', 'committed', 'failed', 'canceled')",
    ),
    ("transfers", "status"): (
        "status IN ('pending', 'paid', 'failed', 'reversed')",
        "status IN ('pending', 'paid', 'failed', 'reversed', 'canceled')",
    ),
    ("subscription_invoices", "settlement_status"): (
        "settlement_status IN ('not_applicable', 'pending', 'distributing', 'settled', 'failed')",
        "settlement_status IN ('not_applicable', 'pending', 'distributing', 'settled', 'failed', 'canceled')",
    ),
}


def _replace_checks(new: bool) -> None:
    for (table, name), (before, after) in CHECKS.items():
        constraint = op.f(f"ck_{table}_{name}")
        op.drop_constraint(constraint, table, type_="check")
        op.create_check_constraint(constraint, table, after if new else before)


def upgrade() -> None:
    op.add_column(
        "subscriptions",
        sa.Column("anchor_cycle", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
    )
    op.add_column("subscriptions", sa.Column("merchant_id", sa.String(), nullable=True))
    op.create_foreign_key(
        op.f("fk_subscriptions_merchant_id_merchants"), "subscriptions", "merchants", ["merchant_id"], ["id"]
    )
    _replace_checks(new=True)


def downgrade() -> None:
    _replace_checks(new=False)
    op.drop_constraint(op.f("fk_subscriptions_merchant_id_merchants"), "subscriptions", type_="foreignkey")
    op.drop_column("subscriptions", "merchant_id")
    op.drop_column("subscriptions", "anchor_cycle")
