"""The one registry of event types the service emits: what `enabled_events` is validated against, what
/openapi.json lists as an enum and the README's table shows. `record_event` refuses a type missing here,
so a domain that adds an event adds it here first."""

from __future__ import annotations

from enum import StrEnum

EVENT_TYPES: dict[str, str] = {
    "payment_intent.created": "A payment intent was created.",
    "payment_intent.requires_action": "The card asks for bank authentication (3-D Secure) before it pays.",
    "payment_intent.amount_capturable_updated": "An authorization holds funds to capture (manual capture).",
    "payment_intent.succeeded": "The payment succeeded.",
    "payment_intent.payment_failed": "An attempt to pay was declined.",
    "payment_intent.canceled": "The payment intent was canceled.",
    "payment_intent.fees_finalized": "The processor reported the payment's real cost: fees are final.",
    "refund.created": "A refund was created.",
    "refund.updated": "A refund succeeded.",
    "refund.failed": "A refund failed for good: refused, or its operation discarded by an operator.",
    "checkout.session.completed": "A hosted checkout session was paid.",
    "checkout.session.expired": "A hosted checkout session expired unpaid.",
    "merchant.created": "A merchant connection was started (the merchant is pending).",
    "merchant.connected": "A merchant approved the connection; its consent is recorded.",
    "merchant.denied": "A merchant denied the connection.",
    "merchant.revoked": "This application's access to a merchant was revoked.",
    "merchant.updated": "A merchant's profile, capabilities or requirements changed.",
    "connected_account.created": "A connected account (courier, driver, ...) was created.",
    "connected_account.updated": "A connected account's capabilities, requirements or payouts changed.",
    "allocation_group.created": "An allocation group reserved part of a captured payment.",
    "allocation_group.updated": "An allocation group changed (allocations, committing, committed, failed).",
    "transfer.created": "A transfer to a recipient was created.",
    "transfer.paid": "A transfer reached its recipient.",
    "transfer.failed": "A transfer failed for good: refused, or its operation discarded by an operator.",
    "transfer.canceled": "A transfer not sent yet was canceled (a refund of its payment stopped it).",
    "transfer.reversed": "A transfer was reversed, in part or in full.",
    "transfer.reversal.created": "A transfer reversal was created.",
    "payout.created": "A payout to a bank account was requested.",
    "payout.updated": "A payout was handed to the bank: in transit, with its arrival date.",
    "payout.failed": "A payout failed for good (with its failure code); its money is back in the balance.",
    "payout.paid": "A payout arrived in the bank account.",
    "payout.canceled": "A pending payout was canceled and its money returned to the balance.",
    "payout.reversed": "A paid payout was reversed: its `reversed_by` reversal brings the money back.",
    "payout.reversal.created": "A payout reversal was created (pending until the processor takes it).",
    "payout.reversal.updated": "A payout reversal was handed to the bank: in transit.",
    "payout.reversal.failed": (
        "A payout reversal failed for good: nothing moved; the payout can be reversed again."
    ),
    "payout.reversal.paid": "A payout reversal's money is back in the available balance it had left.",
    "payout.reversal.canceled": "A pending payout reversal was canceled; its payout can be reversed again.",
    "charge.dispute.created": "A dispute was opened on a payment; evidence is due by its `due_by`.",
    "charge.dispute.updated": "A dispute changed (evidence saved or submitted, under review).",
    "charge.dispute.closed": "A dispute was decided (won or lost) or its loss accepted.",
    "charge.dispute.funds_withdrawn": "The disputed amount and the dispute fee left the balance.",
    "charge.dispute.funds_reinstated": "A won dispute's amount returned to the balance.",
    "review.opened": "A payment was placed in a risk review: authorized, not captured until approved.",
    "review.closed": "A risk review was approved; the payment continues.",
    "radar.value_list.created": "A risk value list was created.",
    "invoice.created": "A payment invoice was drafted.",
    "invoice.finalized": "A payment invoice was numbered and can no longer change.",
    "invoice.sent": "A payment invoice was e-mailed with its hosted payment link.",
    "invoice.paid": "A payment invoice's payment succeeded.",
    "order.created": "A commerce order was created.",
    "order.payment_bound": "A manual-capture payment was bound to a commerce order.",
    "order.preparation_started": "A commerce order's preparation started: its payment was captured.",
    "order.canceled": "A commerce order was canceled and its authorization released.",
    "subscription.created": "A subscription was created (incomplete until its first payment).",
    "subscription.updated": "A subscription changed (status, period, access); carries `terms_version`.",
    "subscription.invoice.paid": "A subscription's collection record was paid.",
    "subscription.invoice.failed": (
        "A subscription's collection record failed (a declined renewal, or one an operator discarded)."
    ),
    "subscription.change.accepted": "The payer consented to a change; its terms are not yet applied.",
    "subscription.change.awaiting_payment": "A change waits for the payment of its difference.",
    "subscription.change.applied": "A change's terms are in force (a new `terms_version`).",
    "subscription.change.canceled": "An unapplied change was withdrawn (no refund).",
    "subscription.change.expired": "A change proposal was not accepted within 15 minutes.",
    "operation.succeeded": "An asynchronous operation succeeded.",
    "operation.failed": "An asynchronous operation failed (a business refusal, not retried).",
    "operation.dead_lettered": "An asynchronous operation exhausted its retries; an operator decides.",
}

ALL_EVENTS = "*"

# An enum so that /openapi.json names every accepted value of `enabled_events`.
EnabledEvent = StrEnum(  # type: ignore[misc]
    "EnabledEvent", {"ALL": ALL_EVENTS, **{name.upper().replace(".", "_"): name for name in EVENT_TYPES}}
)
EnabledEvent.__doc__ = "An event type the service emits, or `*` for every one."


def is_known(event_type: str) -> bool:
    return event_type in EVENT_TYPES
