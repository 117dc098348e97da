"""Disputes on Stripe. Stripe opens a dispute itself and reports it by webhook (`charge.dispute.created`,
`.closed`); moneyrail reads it (`dispute`), answers it with evidence and files, or accepts the loss.

The simulator's own timeline has no counterpart here: `open_dispute` (a sandbox helper opening one on
demand) is NotSupported, and `due_disputes` (the disputes the simulator opens by itself) answers
nothing, as Stripe's arrive by webhook instead.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import stripe

from moneyrail.processor.interface import EvidenceFile, NetworkDispute, ProcessorRefused

from .connection import StripeConnection, fetched, items, keyed, nested, reference, stamp, text, whole

EVIDENCE_FILE_FIELDS = (
    "receipt",
    "customer_communication",
    "shipping_documentation",
    "refund_policy",
    "uncategorized_file",
)
# Stripe's dispute statuses once decided
OUTCOMES = {"won": "won", "lost": "lost", "warning_closed": "won"}


def network_dispute(answer: Mapping[str, Any]) -> NetworkDispute:
    """A Stripe dispute as the network's. Its fee is the fee of the balance transactions Stripe booked
    for it (the amount withdrawn and the dispute fee); the payment is named by its intent, else its
    charge."""
    details = nested(answer, "evidence_details") or {}
    opened = whole(answer, "created")
    return NetworkDispute(
        id=text(answer, "id") or "",
        authorization_id=reference(answer, "payment_intent") or reference(answer, "charge") or "",
        amount=whole(answer, "amount"),
        currency=text(answer, "currency") or "",
        reason=text(answer, "reason") or "general",
        fee_amount=sum(whole(booked, "fee") for booked in items(answer, "balance_transactions")),
        opened_at=stamp(opened),
        evidence_due_by=stamp(whole(details, "due_by", opened)),
    )


async def dispute(connection: StripeConnection, dispute_id: str) -> NetworkDispute:
    return network_dispute(await fetched(connection.v1.disputes.retrieve_async(dispute_id)))


async def outcome(connection: StripeConnection, dispute_id: str) -> str | None:
    """`won` or `lost` once Stripe decided (an inquiry closed without a chargeback counts as won)."""
    answer = await fetched(connection.v1.disputes.retrieve_async(dispute_id))
    return OUTCOMES.get(text(answer, "status") or "")


async def upload_evidence_file(
    connection: StripeConnection, *, idempotency_key: str, file: EvidenceFile
) -> str:
    """The file at Stripe (purpose `dispute_evidence`); its `file_` id."""
    content = io.BytesIO(file.content)
    content.name = file.filename
    params: stripe.params.FileCreateParams = {"purpose": "dispute_evidence", "file": content}
    uploaded = await fetched(connection.v1.files.create_async(params, keyed(idempotency_key)))
    return text(uploaded, "id") or ""


async def submit_evidence(
    connection: StripeConnection,
    *,
    idempotency_key: str,
    dispute_id: str,
    evidence_text: str,
    evidence_files: Sequence[EvidenceFile],
) -> None:
    """The text as Stripe's `uncategorized_text`, each file uploaded (keyed after the submission's key)
    to its evidence field, then submitted: final, as the Protocol's submission is."""
    evidence: stripe.params.DisputeUpdateParamsEvidence = {"uncategorized_text": evidence_text}
    for position, file in enumerate(evidence_files):
        if file.field not in EVIDENCE_FILE_FIELDS:
            raise ProcessorRefused(
                "evidence_field_invalid",
                f"{file.field!r} is not an evidence file field: one of {', '.join(EVIDENCE_FILE_FIELDS)}.",
            )
        file_id = await upload_evidence_file(
            connection, idempotency_key=f"{idempotency_key}:file:{position}", file=file
        )
        _put_file(evidence, file.field, file_id)
    await fetched(
        connection.v1.disputes.update_async(
            dispute_id, {"evidence": evidence, "submit": True}, keyed(idempotency_key)
        )
    )


def _put_file(evidence: stripe.params.DisputeUpdateParamsEvidence, field: str, file_id: str) -> None:
    if field == "receipt":
        evidence["receipt"] = file_id
    elif field == "customer_communication":
        evidence["customer_communication"] = file_id
    elif field == "shipping_documentation":
        evidence["shipping_documentation"] = file_id
    elif field == "refund_policy":
        evidence["refund_policy"] = file_id
    else:
        evidence["uncategorized_file"] = file_id


async def accept(connection: StripeConnection, *, idempotency_key: str, dispute_id: str) -> None:
    """Stripe's `close`: the merchant accepts the loss."""
    await fetched(connection.v1.disputes.close_async(dispute_id, {}, keyed(idempotency_key)))
