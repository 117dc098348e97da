"""Disputes: the network's timetable, its records, and its decision."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import driver_connection
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import NetworkDispute, ProcessorRefused

from . import statements as sql
from .books import Books, json_value

# Disputes (README "Disputes"): the dispute card's dispute opens this many sandbox hours after capture;
# evidence is due this many days after a dispute opens; the network decides a submitted dispute this many
# hours after the submission (won when the evidence text holds WINNING_EVIDENCE, else lost), and one
# without evidence is lost at its deadline. Every dispute costs the merchant the network's fee.
DISPUTE_CARD_HOURS = 6
DISPUTE_EVIDENCE_DAYS = 7
DISPUTE_DECISION_HOURS = 24
DISPUTE_FEE_AMOUNT = 1500
WINNING_EVIDENCE = "winning_evidence"
DISPUTE_LOOKBACK_DAYS = 120  # the dispute card's captures older than this are not looked at again


async def dispute_record(books: Books, dispute_id: str) -> dict[str, Any]:
    found = await books.connection.fetchval(
        sql.DISPUTE_RECORD, books.tenant.installation_id, books.tenant.livemode, dispute_id
    )
    if found is None:  # another tenant's dispute looks exactly like an unknown one
        raise ProcessorRefused("no_such_dispute", f"No such dispute: {dispute_id}.")
    record: dict[str, Any] = json_value(found)
    return record


def decide_dispute(
    dispute: dict[str, Any], steps: list[tuple[str, dict[str, Any], dict[str, Any]]], as_of: datetime
) -> str | None:
    """The network's decision, from what it recorded: accepted is lost at once; submitted evidence is
    judged DISPUTE_DECISION_HOURS later (the winning phrase wins); no evidence is lost at the deadline."""
    for operation_type, request, response in steps:
        if operation_type == "dispute_acceptance":
            return "lost"
        if operation_type == "dispute_evidence":
            decided_at = datetime.fromisoformat(response["submitted_at"]) + timedelta(
                hours=DISPUTE_DECISION_HOURS
            )
            if as_of < decided_at:
                return None
            return "won" if WINNING_EVIDENCE in request["evidence_text"] else "lost"
    return "lost" if as_of >= datetime.fromisoformat(dispute["evidence_due_by"]) else None


def network_dispute(answer: dict[str, Any]) -> NetworkDispute:
    return NetworkDispute(
        id=answer["id"],
        authorization_id=answer["authorization_id"],
        amount=answer["amount"],
        currency=answer["currency"],
        reason=answer["reason"],
        fee_amount=answer["fee_amount"],
        opened_at=datetime.fromisoformat(answer["opened_at"]),
        evidence_due_by=datetime.fromisoformat(answer["evidence_due_by"]),
    )


async def tenants_with_dispute_cards(
    session: AsyncSession, captured_before_offset: timedelta, *, only: Tenant | None = None
) -> list[Tenant]:
    """Sandbox tenants with a dispute card's capture old enough, by real time plus their clock's offset,
    that the network may have opened its dispute: the scheduler's sweep asks only these."""
    connection = await driver_connection(session)
    rows = await connection.fetch(
        """
        SELECT DISTINCT a.installation_id, a.livemode
        FROM sandbox_authorizations a JOIN sandbox_cards c ON c.token = a.card_token
        LEFT JOIN sandbox_clocks k ON k.installation_id = a.installation_id
        WHERE c.behaviour = 'dispute' AND a.status = 'captured'
          AND a.captured_at <= now() + make_interval(secs => coalesce(k.offset_seconds, 0)) - $1::interval
          AND a.captured_at > now() + make_interval(secs => coalesce(k.offset_seconds, 0)) - $2::interval
          AND ($3::text IS NULL OR (a.installation_id = $3 AND a.livemode = $4))
        """,
        captured_before_offset,
        timedelta(days=DISPUTE_LOOKBACK_DAYS),
        only.installation_id if only is not None else None,
        only.livemode if only is not None else False,
    )
    return [Tenant(row["installation_id"], row["livemode"]) for row in rows]
