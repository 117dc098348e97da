"""the operator console: operators, their set-up links and sessions, and the audit log

Revision ID: 0040
Revises: 0035
Create Date: 2026-11-28 09:00:00.000000

Issue 27. Operators sign in to `/console` with a password (argon2id) and a TOTP code; their one-time
set-up links are single-use links (kit/single_use.py) and their sessions are rows whose id is the
SHA-256 of the cookie's secret. The audit log records who retried or discarded which operations and
why, from the console and the CLI alike (it replaces the CLI's local operator.log file); like the
journal (0002), PostgreSQL refuses any UPDATE, DELETE or TRUNCATE of it. A BRIN index on the attempts'
start time lets the console count the last hour's attempts without reading the whole history.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0040"
down_revision: str | None = "0038"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REFUSE_CHANGE = """
BEGIN
    RAISE EXCEPTION 'the audit log is append-only (% on %)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END
"""


def upgrade() -> None:
    op.create_table(
        "operators",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("email", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("password_hash", sa.String(), nullable=True),
        sa.Column("totp_secret", sa.String(), nullable=True),
        sa.Column("last_totp_step", sa.BigInteger(), nullable=True),
        sa.Column("set_up_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failed_sign_ins", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_sign_in_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("role IN ('viewer', 'operator')", name=op.f("ck_operators_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operators")),
        sa.UniqueConstraint("email", name=op.f("uq_operators_email")),
    )
    op.create_table(
        "operator_setup_links",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("operator_id", sa.String(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("page_session_hash", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_operator_setup_links_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operator_setup_links")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_operator_setup_links_token_hash")),
    )
    op.create_index("ix_operator_setup_links_operator", "operator_setup_links", ["operator_id"])
    op.create_table(
        "operator_sessions",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("operator_id", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_operator_sessions_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operator_sessions")),
    )
    op.create_index("ix_operator_sessions_operator", "operator_sessions", ["operator_id"])
    op.create_table(
        "audit_entries",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("actor", sa.String(), nullable=False),
        sa.Column("via", sa.String(), nullable=False),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column(
            "operation_ids", postgresql.ARRAY(sa.TEXT()), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("subject", sa.String(), nullable=True),
        sa.Column("details", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.CheckConstraint("via IN ('console', 'cli')", name=op.f("ck_audit_entries_via")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_entries")),
    )
    op.create_index("ix_audit_entries_occurred", "audit_entries", ["occurred_at", "id"])
    op.create_index("ix_audit_entries_operations", "audit_entries", ["operation_ids"], postgresql_using="gin")
    op.execute(
        f"CREATE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $body${REFUSE_CHANGE}$body$"
    )
    op.execute(
        "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit_entries"
        " FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()"
    )
    op.execute(
        "CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit_entries"
        " FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change()"
    )
    op.create_index(
        "ix_operation_attempts_started", "operation_attempts", ["started_at"], postgresql_using="brin"
    )


def downgrade() -> None:
    op.drop_index("ix_operation_attempts_started", table_name="operation_attempts")
    op.execute("DROP TABLE audit_entries")  # its triggers go with it
    op.execute("DROP FUNCTION audit_refuse_change()")
    op.drop_table("operator_sessions")
    op.drop_table("operator_setup_links")
    op.drop_table("operators")
