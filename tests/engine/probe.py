"""The probe operation's names and retry policy, importable without a broker (its actor: probe_actors.py).

Like a domain's service module, this is imported both where operations are created and by the worker.
"""

from datetime import timedelta

from moneyrail.engine.policy import RetryPolicy, register_policy

PROBE_TYPE = "probe_transfer"
PROBE_ACTOR = "probe.execute"

register_policy(
    PROBE_TYPE,
    RetryPolicy(
        max_attempts=3,
        base_delay=timedelta(milliseconds=200),
        max_delay=timedelta(seconds=1),
        queue_name="money",
    ),
)
