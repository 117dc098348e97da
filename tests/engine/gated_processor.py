"""A processor whose transfer and payout calls stop in the middle until the test lets them go: loaded by
real workers through MONEYRAIL_WORKER_MODULES, active when PROCESSOR_GATE_DIR names a folder (and only
for the calls PROCESSOR_GATE_CALLS names, comma-separated, when it is set).

Each such call is made at the processor first (the sandbox makes the transfer), then writes a file
`arrived-<n>` into the folder and waits until a file `open` is there: a call still on the network after
the processor acted, for as long as the test wants (it checks what the worker holds meanwhile, or kills
it there).
"""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path
from typing import Any

from moneyrail.processor.interface import Processor
from workers import runtime

GATE = os.environ.get("PROCESSOR_GATE_DIR")
GATED_CALLS = set(filter(None, os.environ.get("PROCESSOR_GATE_CALLS", "").split(",")))
_arrivals = itertools.count(1)


class GatedProcessor:
    def __init__(self, inner: Processor, folder: Path) -> None:
        self._inner = inner
        self._folder = folder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _wait(self, call: str, key: str) -> None:
        if GATED_CALLS and call not in GATED_CALLS:
            return
        (self._folder / f"arrived-{os.getpid()}-{next(_arrivals)}").write_text(key)
        while not (self._folder / "open").exists():
            await asyncio.sleep(0.02)

    async def create_transfer(self, tenant: Any, **asked: Any) -> Any:
        answer = await self._inner.create_transfer(tenant, **asked)
        await self._wait("create_transfer", asked["idempotency_key"])
        return answer

    async def create_transfers(self, tenant: Any, **asked: Any) -> Any:
        answers = await self._inner.create_transfers(tenant, **asked)
        await self._wait("create_transfers", asked["idempotency_key"])
        return answers

    async def create_payout(self, tenant: Any, **asked: Any) -> Any:
        answer = await self._inner.create_payout(tenant, **asked)
        await self._wait("create_payout", asked["idempotency_key"])
        return answer


if GATE:
    _ungated = runtime.processor
    _gated: dict[int, GatedProcessor] = {}

    def _processor() -> Any:
        inner = _ungated()
        return _gated.setdefault(id(inner), GatedProcessor(inner, Path(GATE)))

    runtime.processor = _processor
