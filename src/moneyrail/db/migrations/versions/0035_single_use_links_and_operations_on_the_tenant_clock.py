"""single-use links open once; a sandbox's operations are on its clock

Revision ID: 0035
Revises: 0032
Create Date: 2026-11-27 09:00:00.000000

Single-use links (issue 30.3): the first open of a connected account's onboarding link, a merchant's
activation session or a consent link spends it. The link keeps when (`opened_at`, on the tenant's
clock) and the SHA-256 of the secret of the page session that open started (`page_session_hash`),
which the browser holds in a cookie (kit/single_use.py). NULL on links not opened yet.

One clock (issue 30.4): a sandbox operation's `created_at` is stamped on its tenant's clock by 0013's
function, as its object's is, and its `updated_at` follows: at the insert it is the `created_at`, and a
statement that sets `updated_at` has it moved by the clock's offset (`UPDATE OF updated_at`: the
statements that leave it alone, such as the relay's publishing, leave it alone). Live rows pay nothing
(WHEN NOT livemode). The engine's own times stay on the wall clock; `accepted_at` is the wall-clock
moment of the creation, for the latency metrics and the operator CLI. A webhook delivery's attempts
(shown in its answer) are moved by their sandbox clock's offset at the insert, as operations are. Added without a default and
given one afterwards, so that no row is rewritten: NULL on the rows before this migration, whose
`created_at` is that moment.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0035"
down_revision: str | None = "0033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LINK_TABLES = ("onboarding_links", "merchant_onboarding_sessions", "merchant_connections")


def upgrade() -> None:
    for table in LINK_TABLES:
        op.add_column(table, sa.Column("opened_at", sa.DateTime(timezone=True), nullable=True))
        op.add_column(table, sa.Column("page_session_hash", sa.String(), nullable=True))

    op.add_column("operations", sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=True))
    op.alter_column("operations", "accepted_at", server_default=sa.func.now())
    op.execute(
        "CREATE TRIGGER operations_sandbox_created_at BEFORE INSERT ON operations "
        "FOR EACH ROW WHEN (NOT NEW.livemode) EXECUTE FUNCTION moneyrail_sandbox_created_at()"
    )
    op.execute(
        """
        CREATE FUNCTION moneyrail_sandbox_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                NEW.updated_at := NEW.created_at;
            ELSE
                NEW.updated_at := NEW.updated_at + make_interval(secs => coalesce(
                    (SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = NEW.installation_id),
                    0));
            END IF;
            RETURN NEW;
        END
        $$
        """
    )
    # named after operations_sandbox_created_at, so it runs after it at an insert (alphabetical order)
    op.execute(
        "CREATE TRIGGER operations_sandbox_updated_at BEFORE INSERT OR UPDATE OF updated_at ON operations "
        "FOR EACH ROW WHEN (NOT NEW.livemode) EXECUTE FUNCTION moneyrail_sandbox_updated_at()"
    )
    # a webhook delivery's attempts: moved by the offset of their delivery's sandbox clock (a delivery's
    # own `created_at` is its operation's); the attempt row names no tenant, its delivery does
    op.execute(
        """
        CREATE FUNCTION moneyrail_sandbox_attempted_at() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.attempted_at := NEW.attempted_at + make_interval(secs => coalesce(
                (SELECT clocks.offset_seconds
                 FROM webhook_deliveries AS delivery
                 JOIN sandbox_clocks AS clocks ON clocks.installation_id = delivery.installation_id
                 WHERE delivery.id = NEW.delivery_id AND NOT delivery.livemode),
                0));
            RETURN NEW;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER webhook_delivery_attempts_sandbox_attempted_at BEFORE INSERT "
        "ON webhook_delivery_attempts FOR EACH ROW EXECUTE FUNCTION moneyrail_sandbox_attempted_at()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER webhook_delivery_attempts_sandbox_attempted_at ON webhook_delivery_attempts")
    op.execute("DROP FUNCTION moneyrail_sandbox_attempted_at()")
    op.execute("DROP TRIGGER operations_sandbox_updated_at ON operations")
    op.execute("DROP FUNCTION moneyrail_sandbox_updated_at()")
    op.execute("DROP TRIGGER operations_sandbox_created_at ON operations")
    op.drop_column("operations", "accepted_at")
    for table in LINK_TABLES:
        op.drop_column(table, "page_session_hash")
        op.drop_column(table, "opened_at")
