"""Which scheduler leads: a PostgreSQL advisory lock, held on the leader's own connection.

workers/scheduler.py takes it; the web process's metrics and `moneyrail dev` ask whether anyone holds it.
"""

from __future__ import annotations

from sqlalchemy import text

LEADER_LOCK_ID = 0x6D725F6C656164  # "mr_lead"

# pg_locks shows a bigint advisory key as its high and low 32 bits (objsubid 1), for every database of
# the server: count only this database's holder.
LEADERS_HELD = text(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
    "AND classid = :high AND objid = :low "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
).bindparams(high=LEADER_LOCK_ID >> 32, low=LEADER_LOCK_ID & 0xFFFFFFFF)
