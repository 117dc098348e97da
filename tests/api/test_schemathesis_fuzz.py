"""The contract fuzzed from outside (issue 14), as an authenticated tenant with its secret key: every
operation, valid and invalid requests (tests/api/fuzz.py)."""

from __future__ import annotations

import pytest

from tests.api.fuzz import RUN_TIMEOUT_SECONDS, assert_no_issues, schemathesis


@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)
def test_every_operation_answers_as_documented_under_a_seeded_fuzz(web, tenant):
    run, elapsed = schemathesis(web.base_url, tenant.secret, "secret-key")
    assert_no_issues(run, elapsed, "secret-key")
