"""The sandbox processor's disputes (`SandboxProcessor` inherits them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import EvidenceFile, NetworkDispute, ProcessorRefused

from . import statements as sql
from .books import Books, json_value, open_books, sandbox_id
from .calls import KeyedCalls
from .disputes import (
    DISPUTE_CARD_HOURS,
    DISPUTE_EVIDENCE_DAYS,
    DISPUTE_FEE_AMOUNT,
    DISPUTE_LOOKBACK_DAYS,
    decide_dispute,
    dispute_record,
    network_dispute,
)


class DisputeCalls(KeyedCalls):
    async def open_dispute(
        self, tenant: Tenant, *, authorization_id: str, amount: int, reason: str, as_of: datetime
    ) -> NetworkDispute:
        # one dispute per payment: the key is the authorization's, so a second opening is refused
        return await self._open_dispute(tenant, authorization_id, amount, reason, as_of)

    async def _open_dispute(
        self, tenant: Tenant, authorization_id: str, amount: int | None, reason: str, as_of: datetime
    ) -> NetworkDispute:
        request = {"authorization_id": authorization_id, "amount": amount, "reason": reason}

        async def answer(books: Books) -> dict[str, Any]:
            row = await books.locked_authorization(authorization_id)
            if row["status"] != "captured":
                raise ProcessorRefused(
                    "authorization_not_disputable", f"The authorization is {row['status']}."
                )
            disputable = row["amount_captured"] - row["amount_refunded"]
            disputed = disputable if amount is None else amount
            if not 1 <= disputed <= disputable:
                raise ProcessorRefused("amount_too_large", f"At most {disputable} can be disputed.")
            return {
                "id": sandbox_id("sbx_dp"),
                "authorization_id": authorization_id,
                "amount": disputed,
                "currency": row["currency"],
                "reason": reason,
                "fee_amount": DISPUTE_FEE_AMOUNT,
                "opened_at": as_of.isoformat(),
                "evidence_due_by": (as_of + timedelta(days=DISPUTE_EVIDENCE_DAYS)).isoformat(),
            }

        answered = await self._call(tenant, "dispute", f"dispute:{authorization_id}", request, answer)
        return network_dispute(answered)

    async def due_disputes(self, tenant: Tenant, *, as_of: datetime) -> list[NetworkDispute]:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            rows = await books.connection.fetch(
                sql.DISPUTE_CARD_CAPTURES,
                tenant.installation_id,
                tenant.livemode,
                as_of - timedelta(hours=DISPUTE_CARD_HOURS),
                as_of - timedelta(days=DISPUTE_LOOKBACK_DAYS),
            )
        opened = []
        for row in rows:
            opened_at = row["captured_at"] + timedelta(hours=DISPUTE_CARD_HOURS)
            try:
                opened.append(await self._open_dispute(tenant, row["id"], None, "fraudulent", opened_at))
            except ProcessorRefused:
                continue  # refunded in full before the dispute came: nothing left to dispute
        return opened

    async def submit_dispute_evidence(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        dispute_id: str,
        evidence_text: str,
        as_of: datetime,
        evidence_files: Sequence[EvidenceFile] = (),  # the simulator decides on the text alone
    ) -> None:
        request = {"dispute_id": dispute_id, "evidence_text": evidence_text}

        async def answer(books: Books) -> dict[str, Any]:
            dispute = await dispute_record(books, dispute_id)
            if as_of > datetime.fromisoformat(dispute["evidence_due_by"]):
                raise ProcessorRefused("dispute_evidence_past_due", "The evidence deadline has passed.")
            return {"dispute_id": dispute_id, "submitted_at": as_of.isoformat()}

        await self._call(tenant, "dispute_evidence", idempotency_key, request, answer)

    async def accept_dispute(
        self, tenant: Tenant, *, idempotency_key: str, dispute_id: str, as_of: datetime
    ) -> None:
        request = {"dispute_id": dispute_id}

        async def answer(books: Books) -> dict[str, Any]:
            await dispute_record(books, dispute_id)
            return {"dispute_id": dispute_id, "accepted_at": as_of.isoformat()}

        await self._call(tenant, "dispute_acceptance", idempotency_key, request, answer)

    async def dispute_outcome(self, tenant: Tenant, *, dispute_id: str, as_of: datetime) -> str | None:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            dispute = await dispute_record(books, dispute_id)
            steps = await books.connection.fetch(
                sql.DISPUTE_STEPS, tenant.installation_id, tenant.livemode, dispute_id
            )
        return decide_dispute(
            dispute,
            [
                (row["operation_type"], json_value(row["request"]), json_value(row["response"]))
                for row in steps
            ],
            as_of,
        )
