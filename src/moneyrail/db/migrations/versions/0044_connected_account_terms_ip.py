"""where a connected account's holder accepted the services agreement from

Revision ID: 0044
Revises: 0043
Create Date: 2026-11-28 04:05:00.000000

Issue 31. Stripe counts a Custom account's acceptance of its services agreement by its date and the IP
address it was accepted from; the hosted onboarding page now keeps that address beside the date, so
what it collected can be sent to Stripe (with the person's name and date of birth) once it is known.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0044"
down_revision: str | None = "0043"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("connected_accounts", sa.Column("tos_accepted_ip", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("connected_accounts", "tos_accepted_ip")
