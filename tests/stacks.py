"""Worker and scheduler processes shared by the tests of one pytest worker that ask for the same settings.

Starting a worker and a scheduler costs ~7 s of CPU (each loads every domain), and ~40 test files ask for
one with the same settings. A stack is kept running from one file to the next while they ask for it with
the same settings, and stopped before a file whose first test does not ask for one (tests/conftest.py
`only_where_asked`): its tests may start their own worker or scheduler (faults, leadership, timings), and
must meet no other consumer of their queues. A stack whose process died (a test killed it) is started
again.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.harness import OUTPUT_DIR, Process, Servers

# What the engine's tests use: short leases, a quick relay, probe actors beside the real ones.
ENGINE_ENV = {
    "MONEYRAIL_WORKER_MODULES": "tests.engine.probe_actors",
    "MONEYRAIL_OPERATION_LEASE_SECONDS": "2",
    "MONEYRAIL_RELAY_INTERVAL_SECONDS": "0.2",
    "MONEYRAIL_RELAY_REDRIVE_SECONDS": "3",
    "MONEYRAIL_LEADER_POLL_SECONDS": "1",
    "MONEYRAIL_LOG_LEVEL": "INFO",
}
# Webhook deliveries retried within a test's patience.
FAST_RETRIES = {"MONEYRAIL_WEBHOOK_RETRY_BASE_SECONDS": "0.2", "MONEYRAIL_WEBHOOK_MAX_ATTEMPTS": "3"}
# The fixtures that hand out or start a shared stack (tests/conftest.py, stripe_environments/conftest.py)
STACK_FIXTURES = frozenset({"engine_stack", "money_stack", "delivering_stack", "client_stack", "on_stripe"})


def start_worker(servers: Servers, name: str = "worker", **env: str) -> Process:
    return Process.start(
        "worker", servers, OUTPUT_DIR / f"{name}.log", "--threads", "4", **{**ENGINE_ENV, **env}
    )


def start_scheduler(servers: Servers, name: str = "scheduler", **env: str) -> Process:
    return Process.start("scheduler", servers, OUTPUT_DIR / f"{name}.log", **{**ENGINE_ENV, **env})


@dataclass
class EngineStack:
    worker: Process
    scheduler: Process

    def alive(self) -> bool:
        return self.worker.popen.poll() is None and self.scheduler.popen.poll() is None

    def stop(self) -> None:
        self.worker.stop()
        self.scheduler.stop()


@dataclass
class _Running:
    settings: tuple[tuple[str, str], ...]
    stack: EngineStack


_running: _Running | None = None


def shared_stack(servers: Servers, name: str = "engine", **env: str) -> EngineStack:
    """The running stack with these settings (over ENGINE_ENV), or a new one in its place; `name` names
    its logs (worker-shared-<name>.log)."""
    global _running
    settings = tuple(sorted(env.items()))
    if _running is not None and (_running.settings != settings or not _running.stack.alive()):
        stop_shared_stack()
    if _running is None:
        _running = _Running(
            settings,
            EngineStack(
                start_worker(servers, name=f"worker-shared-{name}", **env),
                start_scheduler(servers, name=f"scheduler-shared-{name}", **env),
            ),
        )
    return _running.stack


def stop_shared_stack() -> None:
    global _running
    if _running is not None:
        running, _running = _running, None
        running.stack.stop()
