"""The subscription and invoice state machines are data: every status has its row, the table's check
constraints allow exactly these statuses, and the paths the service takes are in the tables."""

from __future__ import annotations

from moneyrail.billing.service import INVOICE_TRANSITIONS, TRANSITIONS
from moneyrail.models.billing import SUBSCRIPTION_STATUSES, SubscriptionInvoice


def test_every_subscription_status_has_its_transitions_and_canceled_is_final():
    assert set(TRANSITIONS) == set(SUBSCRIPTION_STATUSES)
    assert all(targets <= set(SUBSCRIPTION_STATUSES) for targets in TRANSITIONS.values())
    assert TRANSITIONS["canceled"] == frozenset()
    # every living status can be cancelled; only a paid invoice (or a sync) brings one back to active
    assert all("canceled" in targets for status, targets in TRANSITIONS.items() if status != "canceled")
    assert {status for status, targets in TRANSITIONS.items() if "active" in targets} == {
        "incomplete",
        "past_due",
        "review_required",
    }
    # a declined renewal never goes straight back to incomplete, and review_required is left only by a
    # sync (active) or a cancellation
    assert "incomplete" not in set().union(*TRANSITIONS.values())
    assert TRANSITIONS["review_required"] == frozenset({"active", "canceled"})


def test_every_invoice_status_has_its_transitions_and_paid_and_void_are_final():
    constraint = next(
        c
        for c in SubscriptionInvoice.__table__.constraints
        if getattr(c, "name", "") == "ck_subscription_invoices_status"
    )
    statuses = {"open", "paid", "failed", "void"}
    assert all(f"'{status}'" in str(constraint.sqltext) for status in statuses)
    assert set(INVOICE_TRANSITIONS) == statuses
    assert INVOICE_TRANSITIONS["paid"] == INVOICE_TRANSITIONS["void"] == frozenset()
    assert INVOICE_TRANSITIONS["failed"] == frozenset({"paid", "void"})  # a recovery, or a cancellation


def test_every_change_status_has_its_transitions_and_only_unapplied_ones_move():
    from moneyrail.billing.service.changes import CHANGE_TRANSITIONS
    from moneyrail.models.billing import CHANGE_STATUSES, UNAPPLIED_CHANGE_STATUSES, SubscriptionChange

    constraint = next(
        c
        for c in SubscriptionChange.__table__.constraints
        if getattr(c, "name", "") == "ck_subscription_changes_status"
    )
    assert all(f"'{status}'" in str(constraint.sqltext) for status in CHANGE_STATUSES)
    assert set(CHANGE_TRANSITIONS) == set(CHANGE_STATUSES)
    moving = {status for status, targets in CHANGE_TRANSITIONS.items() if targets}
    assert moving == set(UNAPPLIED_CHANGE_STATUSES)  # applied, canceled and expired are final
    # only an open proposal expires; any unapplied change can be withdrawn (no refund)
    assert {status for status, targets in CHANGE_TRANSITIONS.items() if "expired" in targets} == {"open"}
    assert all("canceled" in CHANGE_TRANSITIONS[status] for status in UNAPPLIED_CHANGE_STATUSES)
    # terms apply only after consent: from accepted (next_cycle) or a paid difference (immediate)
    assert {s for s, targets in CHANGE_TRANSITIONS.items() if "applied" in targets} == {
        "accepted",
        "awaiting_payment",
    }
