"""Loaded by schemathesis (SCHEMATHESIS_HOOKS) in billing's contract fuzz, so generated requests get
past the checks that come before billing's rules.

- Generated `Idempotency-Key` values repeat ("0", "00"...), so most POSTs would answer the idempotency
  store's 422: a well-formed key becomes a fresh one per request; a malformed one is kept (its 400).
- Ids in a body (`product`, `price`, `customer`, `subscription`, also inside `price_data`) that
  are strings become real objects of the tenant, named in BILLING_FUZZ_BODY_IDS (JSON), so a body is
  judged by the rules, not refused as `resource_missing`. Other types are kept (their 400).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from typing import Any

import schemathesis

WELL_FORMED = re.compile(r"^[ -~]{1,255}$")
BODY_IDS_ENV = "BILLING_FUZZ_BODY_IDS"


def _with_real_ids(body: dict[str, Any], ids: dict[str, str]) -> None:
    for name, value in body.items():
        if name in ids and isinstance(value, str):
            body[name] = ids[name]
        elif isinstance(value, dict):
            _with_real_ids(value, ids)


@schemathesis.hook
def before_call(context: Any, case: Any, **kwargs: Any) -> None:
    headers = case.headers
    key = headers.get("Idempotency-Key") if headers is not None else None
    if isinstance(key, str) and WELL_FORMED.match(key):
        headers["Idempotency-Key"] = uuid.uuid4().hex
    if isinstance(case.body, dict):
        _with_real_ids(case.body, json.loads(os.environ.get(BODY_IDS_ENV, "{}")))
