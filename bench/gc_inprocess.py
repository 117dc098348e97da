"""Python's cyclic garbage collector during an in-process benchmark: collections and their time.

    .venv/bin/python bench/gc_inprocess.py intake_inprocess.py --requests 4000 --rounds 2
    .venv/bin/python bench/gc_inprocess.py steps_inprocess.py --payments 600 --rounds 2

Runs the named in-process benchmark of bench/ (its own arguments after its name) in this process with a
`gc.callbacks` hook, then prints, for the load only (every `harness.each_in_flight` window, warm-up
included; not the imports, migrations and set-up), the collections of each generation per request, the
CPU time spent in them (process time, robust to the shared machine's other load) per request and as a share
of the windows' CPU time, and the process's resident memory
(VmRSS, VmHWM) after each window and at the end. The benchmark's own rounds still print their CPU per
request, with whatever gc settings the app applied at its startup.
"""

from __future__ import annotations

import gc
import runpy
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

_started: list[float] = []
_counts = [0, 0, 0]
_seconds = [0.0, 0.0, 0.0]
_collected = [0, 0, 0]
_measuring = False
_load = {"requests": 0, "cpu": 0.0}


def _hook(phase: str, info: dict[str, int]) -> None:
    if not _measuring:
        return
    if phase == "start":
        _started.append(time.process_time())
        return
    if not _started:
        return
    generation = info["generation"]
    _counts[generation] += 1
    _seconds[generation] += time.process_time() - _started.pop()
    _collected[generation] += info["collected"]


def _memory() -> str:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            fields[name] = value.strip()
    return ", ".join(f"{name} {value}" for name, value in fields.items())


def _measured(each_in_flight: Callable[..., Awaitable[tuple[float, float]]]) -> Callable[..., Any]:
    async def each_in_flight_measured(
        items: Iterable[Any], in_flight: int, step: Callable[[Any], Awaitable[None]]
    ) -> tuple[float, float]:
        global _measuring
        items = list(items)
        _measuring = True
        try:
            wall, cpu = await each_in_flight(items, in_flight, step)
        finally:
            _measuring = False
        _load["requests"] += len(items)
        _load["cpu"] += cpu
        print(f"  window of {len(items)} requests: {_memory()}", flush=True)
        return wall, cpu

    return each_in_flight_measured


def main() -> int:
    script = Path(__file__).parent / sys.argv[1]
    sys.argv = [str(script), *sys.argv[2:]]
    import harness

    harness.each_in_flight = _measured(harness.each_in_flight)  # type: ignore[assignment]
    gc.callbacks.append(_hook)
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as leaving:
        code = leaving.code
    else:
        code = 0
    requests, cpu = _load["requests"], _load["cpu"]
    print(f"gc thresholds {gc.get_threshold()}, frozen objects {gc.get_freeze_count()}")
    print(f"load: {requests} requests, {1e6 * cpu / max(requests, 1):.0f} µs CPU per request")
    for generation in range(3):
        print(
            f"gen{generation}: {_counts[generation]} collections"
            f" ({_counts[generation] / max(requests, 1):.3f} per request),"
            f" {1e6 * _seconds[generation] / max(requests, 1):.1f} µs per request in them"
            f" ({100 * _seconds[generation] / max(cpu, 1e-9):.2f}% of the load's CPU),"
            f" {_collected[generation]} objects freed"
        )
    print(f"memory at the end: {_memory()}", flush=True)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
