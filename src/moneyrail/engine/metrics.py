"""Prometheus metrics of the engine.

Workers count attempts and time operations from acceptance to their final state; the web process
reports what PostgreSQL and the broker hold right now (operations by type and status, dead letters,
the oldest due operation, queue depth), so every number has one source of truth.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any

from prometheus_client import Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from moneyrail.engine.broker import QUEUES

# The statuses `moneyrail_operations` counts: not yet final, or waiting for an operator.
GAUGED_STATUSES = ("pending", "running", "dead_letter")

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400, 259200)


@cache
def _worker_metrics() -> tuple[Counter, Histogram]:
    # Created on first use, after dramatiq's Prometheus middleware has set PROMETHEUS_MULTIPROC_DIR
    # in the worker process, so every worker process adds to the same exposition.
    attempts = Counter(
        "moneyrail_operation_attempts_total", "Operation attempts by type and outcome.", ["type", "outcome"]
    )
    latency = Histogram(
        "moneyrail_operation_latency_seconds",
        "From acceptance to the final state (succeeded, failed, dead_letter).",
        ["type", "status"],
        buckets=LATENCY_BUCKETS,
    )
    return attempts, latency


def record_attempt(operation_type: str, outcome: str, accepted_to_final_seconds: float | None) -> None:
    attempts, latency = _worker_metrics()
    attempts.labels(operation_type, outcome).inc()
    if accepted_to_final_seconds is not None:
        latency.labels(operation_type, outcome).observe(accepted_to_final_seconds)


class EngineSnapshot(Collector):
    """Collected at scrape time from rows gathered by the caller (see api/metrics.py)."""

    def __init__(
        self,
        by_type_and_status: list[tuple[str, str, int]],
        oldest_due_seconds: float,
        depths: dict[str, int],
        *,
        relay_lag_seconds: float = 0.0,
        scheduler_leaders: int | None = None,
        broker_up: bool | None = None,
        processor_orphans: dict[str, int] | None = None,
        known_types: Sequence[str] = (),
    ):
        self.by_type_and_status = by_type_and_status
        self.known_types = known_types
        self.oldest_due_seconds = oldest_due_seconds
        self.depths = depths
        self.relay_lag_seconds = relay_lag_seconds
        self.scheduler_leaders = scheduler_leaders
        self.broker_up = broker_up
        self.processor_orphans = processor_orphans

    def collect(self) -> Iterator[Any]:
        operations = GaugeMetricFamily(
            "moneyrail_operations",
            "Operations not yet final, and dead letters, by type and status.",
            labels=["type", "status"],
        )
        dead_letters = GaugeMetricFamily(
            "moneyrail_dead_letters", "Dead-lettered operations awaiting an operator."
        )
        # 0 for every known type and status with no row: a dashboard shows 0, not "No data"
        counts = {
            (operation_type, status): 0 for operation_type in self.known_types for status in GAUGED_STATUSES
        }
        counts.update(
            {(operation_type, status): count for operation_type, status, count in self.by_type_and_status}
        )
        dead_total = 0
        for (operation_type, status), count in sorted(counts.items()):
            operations.add_metric([operation_type, status], count)
            if status == "dead_letter":
                dead_total += count
        dead_letters.add_metric([], dead_total)
        yield operations
        yield dead_letters
        yield GaugeMetricFamily(
            "moneyrail_oldest_due_operation_seconds",
            "Age of the oldest due pending operation: the relay or the workers fall behind when it grows.",
            value=self.oldest_due_seconds,
        )
        depth = GaugeMetricFamily(
            "moneyrail_queue_depth", "Messages waiting in the broker, by queue.", labels=["queue"]
        )
        for queue in QUEUES:
            if queue in self.depths:
                depth.add_metric([queue], self.depths[queue])
        yield depth
        yield GaugeMetricFamily(
            "moneyrail_relay_lag_seconds",
            "How long the oldest due operation has waited for the relay to publish it (0: none waits).",
            value=self.relay_lag_seconds,
        )
        if self.scheduler_leaders is not None:
            yield GaugeMetricFamily(
                "moneyrail_scheduler_leaders",
                "Schedulers holding the leader lock: 1 when healthy, 0 means no relay and no periodic jobs.",
                value=self.scheduler_leaders,
            )
        if self.processor_orphans is not None:
            orphans = CounterMetricFamily(
                "moneyrail_processor_orphans",
                "Charges the processor made that no payment recorded, released by the orphan sweep, "
                "by action (void: an authorization, refund: a capture).",
                labels=["action"],
            )
            for action in ("void", "refund"):
                orphans.add_metric([action], self.processor_orphans.get(action, 0))
            yield orphans
        if self.broker_up is not None:
            yield GaugeMetricFamily(
                "moneyrail_broker_up",
                "1 when this web process reaches the broker (Redis); operations wait in PostgreSQL when 0.",
                value=1 if self.broker_up else 0,
            )
