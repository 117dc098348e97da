"""The tables the code declares are exactly the tables the migrations build."""

from __future__ import annotations

import psycopg
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from moneyrail.models import Base
from tests.harness import libpq_url


def test_the_migrated_schema_matches_the_models(servers):
    engine = create_engine(
        libpq_url(servers.database_url).replace("postgresql://", "postgresql+psycopg://", 1)
    )
    try:
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_migrating_again_is_a_no_op(servers):
    from moneyrail.db.migrate import alembic_config, upgrade

    upgrade(servers.database_url)
    with psycopg.connect(libpq_url(servers.database_url)) as connection:
        (version,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    assert version == ScriptDirectory.from_config(alembic_config(servers.database_url)).get_current_head()
