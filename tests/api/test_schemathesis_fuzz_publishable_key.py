"""The client-side operations fuzzed again with the publishable key, so their bodies get past the gate
(tests/api/fuzz.py)."""

from __future__ import annotations

import pytest

from tests.api.fuzz import RUN_TIMEOUT_SECONDS, assert_no_issues, client_side_operation_ids, schemathesis


@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)
def test_the_client_side_operations_answer_as_documented_under_a_seeded_fuzz(web, tenant):
    client_side = client_side_operation_ids(web.base_url)
    assert len(client_side) >= 2  # confirming a payment and a setup intent, at least
    selection = [
        argument for operation_id in client_side for argument in ("--include-operation-id", operation_id)
    ]
    run, elapsed = schemathesis(web.base_url, tenant.publishable_key, "publishable-key", *selection)
    assert_no_issues(run, elapsed, "publishable-key")
