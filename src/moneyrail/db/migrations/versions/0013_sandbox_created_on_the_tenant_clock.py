"""sandbox objects are created on their tenant's clock

Revision ID: 0013
Revises: 0011
Create Date: 2026-11-24 06:30:00.000000

After a sandbox clock advance, `expires_at` followed the sandbox clock while `created` was the wall
clock. The database stamps `created_at` of a sandbox row (livemode false) itself: the moment of the insert
plus the installation's clock offset (`sandbox_clocks`), whatever the statement gave, so raw SQL and ORM
inserts alike follow one clock. Live rows are untouched (the trigger's WHEN clause: they pay nothing).
The tables are those of the API's sandbox objects, including those of branches merged beside this one
(merchants, connected accounts, transfers), skipped where they do not exist: chain this migration after
theirs. `moneyrail.models.base.SANDBOX_CLOCK_TABLES` names the same ones for the ORM, and
tests/sandbox/test_clock_created.py keeps the two in step. A later table of sandbox objects adds its
trigger with the same function.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (
    "allocation_groups",
    "checkout_sessions",
    "connected_accounts",
    "customer_sessions",
    "customers",
    "events",
    "merchant_connections",
    "merchant_onboarding_sessions",
    "merchants",
    "onboarding_links",
    "payment_intents",
    "payment_methods",
    "payouts",
    "receipt_deliveries",
    "reconciliation_runs",
    "refunds",
    "setup_intents",
    "transfer_reversals",
    "transfers",
    "webhook_endpoints",
)


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION moneyrail_sandbox_created_at() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.created_at := clock_timestamp() + make_interval(secs => coalesce(
                (SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = NEW.installation_id), 0));
            RETURN NEW;
        END
        $$
        """
    )
    for table in TABLES:
        # a table another branch adds (merchants, marketplace) gets its trigger when this runs after it
        op.execute(
            f"""
            DO $$ BEGIN
                IF to_regclass('{table}') IS NOT NULL THEN
                    CREATE TRIGGER {table}_sandbox_created_at BEFORE INSERT ON {table}
                    FOR EACH ROW WHEN (NOT NEW.livemode) EXECUTE FUNCTION moneyrail_sandbox_created_at();
                END IF;
            END $$
            """
        )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_sandbox_created_at ON {table}")
    op.execute("DROP FUNCTION moneyrail_sandbox_created_at()")
