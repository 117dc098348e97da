"""installation payouts, payout reversals and merchants as recipients

Revision ID: 0025
Revises: 0023
Create Date: 2026-11-25 12:00:00.000000

- A payout of the installation's own balance names no connected account; a reversal names the payout it
  reverses (`original_payout_id`; one live reversal per payout) and the original names it back.
- The bank account an environment's own payouts go to (`payout_bank_account`, set by the operator).
- A merchant connected over OAuth is paid through a connected account of kind `merchant` that names it
  (`merchant_id`, unique: one per merchant); its bank account may still be due. Merchants already
  active get theirs here, as their code exchange would have made it (ids of kit/ids.py's shape).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.alter_column("payouts", "connected_account_id", existing_type=sa.String(), nullable=True)
    op.add_column("payouts", sa.Column("original_payout_id", sa.String(), nullable=True))
    op.add_column("payouts", sa.Column("reversed_by_id", sa.String(), nullable=True))
    op.create_foreign_key(
        op.f("fk_payouts_original_payout_id_payouts"), "payouts", "payouts", ["original_payout_id"], ["id"]
    )
    op.create_index(
        "ix_payouts_one_reversal",
        "payouts",
        ["original_payout_id"],
        unique=True,
        postgresql_where=sa.text("status NOT IN ('failed', 'canceled')"),
    )
    op.add_column("environment_settings", sa.Column("payout_bank_account", sa.String(), nullable=True))
    op.alter_column("connected_accounts", "bank_account_number", existing_type=sa.String(), nullable=True)
    op.alter_column("connected_accounts", "bank_last4", existing_type=sa.String(), nullable=True)
    op.add_column("connected_accounts", sa.Column("merchant_id", sa.String(), nullable=True))
    op.create_foreign_key(
        op.f("fk_connected_accounts_merchant_id_merchants"),
        "connected_accounts",
        "merchants",
        ["merchant_id"],
        ["id"],
    )
    op.create_unique_constraint(
        op.f("uq_connected_accounts_merchant_id"), "connected_accounts", ["merchant_id"]
    )
    op.execute(BACKFILL_MERCHANT_ACCOUNTS)


# One connected account per active merchant: `acct_` + 24 random base62 characters (the correlated
# subquery draws them per row); a sandbox business whose bank account is not due has the sandbox's test
# account (connect/merchants.py).
BACKFILL_MERCHANT_ACCOUNTS = """
INSERT INTO connected_accounts (id, installation_id, livemode, kind, country, email, display_name,
                                bank_account_number, bank_last4, onboarding_status, merchant_id, updated_at)
SELECT 'acct_' || (
           SELECT string_agg(
               substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
                      1 + floor(random() * 62)::int, 1), '')
           FROM generate_series(1, 24) WHERE m.id IS NOT NULL),
       m.installation_id, m.livemode, 'merchant', 'DE', m.support_email, m.business_name,
       bank.number, right(bank.number, 4), CASE WHEN bank.number IS NULL THEN 'pending' ELSE 'complete' END,
       m.id, now()
FROM merchants m
CROSS JOIN LATERAL (
    SELECT CASE WHEN NOT m.livemode AND NOT 'external_account' = ANY(m.requirements_due)
                THEN '000123456789' END AS number
) bank
WHERE m.connection_status = 'active'
"""


def downgrade() -> None:
    op.drop_constraint(op.f("uq_connected_accounts_merchant_id"), "connected_accounts", type_="unique")
    op.drop_constraint(
        op.f("fk_connected_accounts_merchant_id_merchants"), "connected_accounts", type_="foreignkey"
    )
    op.drop_column("connected_accounts", "merchant_id")
    op.execute("DELETE FROM connected_accounts WHERE bank_account_number IS NULL")
    op.alter_column("connected_accounts", "bank_last4", existing_type=sa.String(), nullable=False)
    op.alter_column("connected_accounts", "bank_account_number", existing_type=sa.String(), nullable=False)
    op.drop_column("environment_settings", "payout_bank_account")
    op.drop_index("ix_payouts_one_reversal", table_name="payouts")
    op.drop_constraint(op.f("fk_payouts_original_payout_id_payouts"), "payouts", type_="foreignkey")
    op.drop_column("payouts", "reversed_by_id")
    op.drop_column("payouts", "original_payout_id")
    op.execute("DELETE FROM payouts WHERE connected_account_id IS NULL")
    op.alter_column("payouts", "connected_account_id", existing_type=sa.String(), nullable=False)
