"""The probe operation's names and retry policy, importable without a broker (its actor: probe_actors.py).

Like a domain's service module, this is imported both where operations are created and by the worker.
"""

from dataclasses import replace
from datetime import timedelta

from moneyrail.engine.policy import RetryPolicy, register_policy

PROBE_TYPE = "probe_transfer"
# the same work, for operations local to the database: up to 16 run in one message and commit together
PROBE_BATCHED_TYPE = "probe_transfer_batched"
PROBE_ACTOR = "probe.execute"

PROBE_POLICY = RetryPolicy(
    max_attempts=3,
    base_delay=timedelta(milliseconds=200),
    max_delay=timedelta(seconds=1),
    queue_name="money",
)
register_policy(PROBE_TYPE, PROBE_POLICY)
register_policy(PROBE_BATCHED_TYPE, replace(PROBE_POLICY, batch_size=16))
