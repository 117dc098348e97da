"""the signing secret of an environment's Stripe Connect webhook endpoint

Revision ID: 0043
Revises: 0042
Create Date: 2026-11-27 22:50:00.000000

Issue 31. Stripe sends what happens on connected accounts (their payouts, transfers, account updates) to
a Connect endpoint of its own, registered apart from the platform's endpoint and signed with another
secret. Both post to the environment's processor_webhook_url; an event verifies with either secret.
Sealed like the other secrets at rest, with what may be shown of it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0043"
down_revision: str | None = "0042"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "environment_settings", sa.Column("processor_connect_webhook_secret", sa.String(), nullable=True)
    )
    op.add_column(
        "environment_settings", sa.Column("processor_connect_webhook_secret_hint", sa.String(), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("environment_settings", "processor_connect_webhook_secret_hint")
    op.drop_column("environment_settings", "processor_connect_webhook_secret")
