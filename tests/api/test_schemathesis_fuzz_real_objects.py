"""The operations on one object fuzzed again with real objects in the path: answers with bodies, not
404s (tests/api/fuzz.py)."""

from __future__ import annotations

import pytest

from tests.api.fuzz import (
    BILLING_PATHS,
    ON_ONE_OBJECT,
    RUN_TIMEOUT_SECONDS,
    assert_no_issues,
    examples_only,
    real_objects,
    schemathesis,
)


@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)
def test_the_operations_on_real_objects_answer_as_documented_under_a_seeded_fuzz(web, tenant):
    ids = real_objects(web, tenant)  # before the fuzz injects processor faults into this tenant
    run, elapsed = schemathesis(
        web.base_url,
        tenant.secret,
        "real-objects",
        "--include-path-regex",
        ON_ONE_OBJECT,
        path_ids=ids,
        operations=examples_only(BILLING_PATHS),  # on real catalog objects in billing's own fuzz
    )
    assert_no_issues(run, elapsed, "real-objects")
