"""The contract fuzzed from outside (issue 14), as an authenticated tenant with its secret key: every
operation's examples, and valid and invalid requests to every operation that names no object in its path
and is not billing's (those are fuzzed on real objects by their own runs: tests/api/fuzz.py)."""

from __future__ import annotations

import pytest

from tests.api.fuzz import (
    BILLING_PATHS,
    ON_ONE_OBJECT,
    RUN_TIMEOUT_SECONDS,
    assert_no_issues,
    examples_only,
    schemathesis,
)


@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)
def test_every_operation_answers_as_documented_under_a_seeded_fuzz(web, tenant):
    run, elapsed = schemathesis(
        web.base_url,
        tenant.secret,
        "secret-key",
        operations=examples_only(ON_ONE_OBJECT) + examples_only(BILLING_PATHS),
    )
    assert_no_issues(run, elapsed, "secret-key")
