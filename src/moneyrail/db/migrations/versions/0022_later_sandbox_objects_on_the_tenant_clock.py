"""the sandbox objects of disputes, risk, invoices, orders and billing are created on the tenant clock

Revision ID: 0022
Revises: 0018
Create Date: 2026-11-24 07:20:00.000000

Migration 0013 stamps `created_at` of sandbox rows with the tenant's clock (its function
`moneyrail_sandbox_created_at`); these tables came after it and get the same trigger.
`moneyrail.models.base.SANDBOX_CLOCK_TABLES` names them for the ORM too.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (
    "dispute_files",
    "disputes",
    "invoice_deliveries",
    "invoices",
    "orders",
    "prices",
    "products",
    "risk_reviews",
    "risk_value_list_items",
    "risk_value_lists",
    "subscription_invoices",
    "subscriptions",
)


def upgrade() -> None:
    for table in TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_sandbox_created_at BEFORE INSERT ON {table} "
            "FOR EACH ROW WHEN (NOT NEW.livemode) EXECUTE FUNCTION moneyrail_sandbox_created_at()"
        )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TRIGGER {table}_sandbox_created_at ON {table}")
