"""a merchant whose connected account has no bank account has it due

Revision ID: 0045
Revises: 0044
Create Date: 2026-11-28 15:00:00.000000

A live merchant's connected account is made with no bank account (live money never goes to a made-up
one), but the merchant was left with nothing due, so its activation page refused to open and its account
could never be paid out. The connection now marks the bank account due; this marks it on the merchants
connected before.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0045"
down_revision: str | None = "0044"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# also run by tests/merchants/test_connections.py on merchants left as before it
BACKFILL = """
UPDATE merchants m SET requirements_due = array_append(m.requirements_due, 'external_account')
FROM connected_accounts a
WHERE a.merchant_id = m.id AND a.installation_id = m.installation_id AND a.livemode = m.livemode
  AND a.bank_account_number IS NULL AND NOT 'external_account' = ANY(m.requirements_due)
"""


def upgrade() -> None:
    op.execute(BACKFILL)


def downgrade() -> None:
    pass  # what it marked due is due: nothing to undo
