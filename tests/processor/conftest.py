"""Fixtures for the sandbox card network tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from moneyrail.config import Settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.processor.sandbox import SandboxProcessor
from tests.harness import AsyncBridge, Servers, TenantKeys
from tests.processor.network import Network


@pytest.fixture(scope="module")
def processor(servers: Servers, bridge: AsyncBridge) -> Iterator[SandboxProcessor]:
    engine = create_engine(Settings(DATABASE_URL=servers.database_url, db_pool_size=6))
    yield SandboxProcessor(create_sessionmaker(engine))
    bridge.run(engine.dispose())


@pytest.fixture
def network(processor: SandboxProcessor, bridge: AsyncBridge, tenant: TenantKeys) -> Network:
    return Network(processor, bridge, tenant.tenant)
