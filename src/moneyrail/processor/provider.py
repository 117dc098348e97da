"""The processor a process talks to. Only the sandbox simulator exists so far; a live adapter would be
chosen here by the tenant's livemode.

The simulator plays an outside system, so it has its own small connection pool: a request or an
operation holds a connection of the main pool while it calls the processor, and sharing one pool
would let as many callers as there are connections each wait for a second one, forever.
"""

from __future__ import annotations

from moneyrail.config import get_settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import Processor
from moneyrail.processor.sandbox import SandboxProcessor

_processor: SandboxProcessor | None = None


def processor() -> Processor:
    """Created lazily, on the event loop of its first caller (the process's only one)."""
    global _processor
    if _processor is None:
        settings = get_settings()
        pool = settings.model_copy(update={"db_pool_size": min(settings.db_pool_size, 10)})
        _processor = SandboxProcessor(create_sessionmaker(create_engine(pool)))
    return _processor


def batches_calls(tenant: Tenant) -> bool:
    """Whether the tenant's processor has batch calls (`Processor.batches_calls`): the operations that
    make its transfers and charges then share a message (their type's batch size), else run alone. A
    live tenant runs alone whatever stands in for its processor here."""
    return not tenant.livemode and processor().batches_calls
