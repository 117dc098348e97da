"""connected accounts linked to the processor's own accounts

Revision ID: 0042
Revises: 0040
Create Date: 2026-11-27 19:00:00.000000

Issue 31. On an environment whose processor is Stripe, each connected account is created at Stripe (a
Custom account) by a `connected_account` operation (`link_operation_id`), which records Stripe's id
here; transfers name it as their destination and payouts are made as it (`Stripe-Account`). It is never
shown: moneyrail's own `acct_` id stays the only one in answers. Unique per environment where set; both
null on the simulator.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0042"
down_revision: str | None = "0041"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("connected_accounts", sa.Column("processor_account", sa.String(), nullable=True))
    op.add_column("connected_accounts", sa.Column("link_operation_id", sa.String(), nullable=True))
    op.create_foreign_key(
        op.f("fk_connected_accounts_link_operation_id_operations"),
        "connected_accounts",
        "operations",
        ["link_operation_id"],
        ["id"],
    )
    op.create_index(
        "ix_connected_accounts_processor_account",
        "connected_accounts",
        ["installation_id", "livemode", "processor_account"],
        unique=True,
        postgresql_where=sa.text("processor_account IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_connected_accounts_processor_account", table_name="connected_accounts")
    op.drop_constraint(
        op.f("fk_connected_accounts_link_operation_id_operations"), "connected_accounts", type_="foreignkey"
    )
    op.drop_column("connected_accounts", "link_operation_id")
    op.drop_column("connected_accounts", "processor_account")
