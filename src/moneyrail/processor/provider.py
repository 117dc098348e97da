"""The processor a process talks to. Only the sandbox simulator exists so far; a live adapter would be
chosen here by the tenant's livemode.

The simulator plays an outside system, so it has its own small connection pool: a request or an
operation holds a connection of the main pool while it calls the processor, and sharing one pool
would let as many callers as there are connections each wait for a second one, forever. With the
`MONEYRAIL_SANDBOX_*` network settings it is reached over a simulated network (sandbox/network.py).
"""

from __future__ import annotations

from moneyrail.config import get_settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.processor.interface import Processor
from moneyrail.processor.sandbox import SandboxProcessor
from moneyrail.processor.sandbox.network import NetworkConditions, NetworkDraws, SandboxNetwork

_processor: SandboxProcessor | SandboxNetwork | None = None


def processor() -> Processor:
    """Created lazily, on the event loop of its first caller (the process's only one)."""
    global _processor
    if _processor is None:
        settings = get_settings()
        pool = settings.model_copy(update={"db_pool_size": min(settings.db_pool_size, 10)})
        simulator = SandboxProcessor(create_sessionmaker(create_engine(pool)))
        conditions = NetworkConditions.from_settings(settings)
        _processor = (
            simulator
            if conditions.absent
            else SandboxNetwork(simulator, NetworkDraws(conditions, settings.sandbox_network_seed))
        )
    return _processor


def sandbox_simulator() -> SandboxProcessor | None:
    """The simulator itself, network or not, for the sandbox's test helpers that alter its books (they
    stand for the processor going wrong, not for a call); None when the processor is not the sandbox."""
    network = processor()
    if isinstance(network, SandboxNetwork):
        return network.simulator
    return network if isinstance(network, SandboxProcessor) else None
