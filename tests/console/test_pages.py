"""The console's pages over HTTP: operations found by filter a page at a time, a refused filter, the
overview's numbers, and decisions that need a reason, change all or nothing and land in the audit log."""

from __future__ import annotations

import re

from tests.console.support import csrf_of
from tests.console.test_audit_log import dead_letters_made_by_hand

OPERATION_LINK = re.compile(r'href="/console/operations/(op_[0-9A-Za-z]{24})"')


def operation_ids(page) -> list[str]:
    return list(dict.fromkeys(OPERATION_LINK.findall(page.text)))


def test_operations_are_found_by_filter_a_page_at_a_time(web, bridge, tenant, signed_in):
    made = dead_letters_made_by_hand(bridge, tenant, 53, operation_type="paging_check")
    console, _ = signed_in(web.base_url, "viewer", "paging")
    query = {
        "status": "dead_letter",
        "type": "paging_check",
        "installation": tenant.installation_id,
        "environment": "sandbox",
        "error": "MADE BY HAND #1",  # a part of the error, any case: #1, #10 to #19
        "age": "lt1h",
    }
    first = console.get("/console/operations", params=query)
    assert first.status_code == 200, first.text
    assert sorted(operation_ids(first)) == sorted(made[1:2] + made[10:20])

    everything = {**query, "error": ""}
    page = console.get("/console/operations", params=everything)
    seen = operation_ids(page)
    assert len(seen) == 50 and 'rel="next"' in page.text
    older = re.search(r'href="(/console/operations\?[^"]+)" rel="next"', page.text)
    assert older is not None
    rest = console.get(older.group(1).replace("&amp;", "&"))
    assert sorted(seen + operation_ids(rest)) == sorted(made) and 'rel="next"' not in rest.text

    for filtered in ({"age": "gt1h"}, {"environment": "live"}, {"status": "succeeded"}):
        assert operation_ids(console.get("/console/operations", params={**query, **filtered})) == []
    refused = console.get("/console/operations", params={"status": "lost"})
    assert refused.status_code == 400 and "Unknown status" in refused.text
    bad_cursor = console.get("/console/operations", params={"cursor": "not-a-cursor"})
    assert bad_cursor.status_code == 400


def test_the_overview_counts_dead_letters_by_type_and_error(web, bridge, tenant, signed_in):
    dead_letters_made_by_hand(bridge, tenant, 2, operation_type="overview_check")
    console, _ = signed_in(web.base_url, "viewer", "overview")
    page = console.get("/console")
    assert page.status_code == 200
    row = re.search(r"<tr>\s*<td>overview_check</td>.*?</tr>", page.text, re.DOTALL)
    assert row is not None and "made by hand #" in row.group(0)
    assert "throughput-chart" in page.text and "<script" not in page.text


def test_a_decision_needs_a_reason_and_lands_in_the_audit_log(web, bridge, tenant, db, signed_in):
    first, second = dead_letters_made_by_hand(bridge, tenant, 2, operation_type="discard_check")
    console, account = signed_in(web.base_url, "operator", "discard")
    page = console.get(f"/console/operations/{first}")
    assert 'data-testid="discard-form"' in page.text
    token = csrf_of(page)

    no_reason = console.post(
        f"/console/operations/{first}/discard", data={"reason": "  ", "csrf_token": token}
    )
    assert no_reason.status_code == 400 and "A reason is required" in no_reason.text
    discarded = console.post(
        f"/console/operations/{first}/discard", data={"reason": "paid by hand", "csrf_token": token}
    )
    assert discarded.status_code == 303
    (status, by, why) = db.execute(
        "SELECT status, discarded_by, discard_reason FROM operations WHERE id = %s", (first,)
    ).fetchone()
    assert (status, by, why) == ("canceled", account.email, "paid by hand")

    # a set with one operation no longer a dead letter: refused whole, nothing changed, nothing recorded
    refused = console.post(
        "/console/operations/bulk",
        data={"action": "retry", "operation": [second, first], "reason": "again", "csrf_token": token},
    )
    assert refused.status_code == 409 and "Nothing was changed" in refused.text
    (status,) = db.execute("SELECT status FROM operations WHERE id = %s", (second,)).fetchone()
    assert status == "dead_letter"
    entries = db.execute(
        "SELECT action, via, reason, operation_ids FROM audit_entries"
        " WHERE actor = %s AND action LIKE 'dead%%'",
        (account.email,),
    ).fetchall()
    assert entries == [("dead_letter.discard", "console", "paid by hand", [first])]
    audit = console.get("/console/audit", params={"operation": first})
    assert "paid by hand" in audit.text and account.email in audit.text
