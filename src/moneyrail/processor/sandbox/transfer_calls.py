"""The sandbox processor's transfers and payouts (`SandboxProcessor` inherits them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from moneyrail.db.raw import autocommit_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import (
    AccountHolder,
    BatchedTransfer,
    PayoutResult,
    ProcessorAccount,
    ProcessorRefused,
    ProcessorTransferRecord,
    TransferRequest,
    TransferResult,
    TransferReversalResult,
)

from . import statements as sql
from .books import Books, injected_refusal, injected_unavailable, json_value, open_books, replay, sandbox_id
from .calls import KeyedCalls
from .transfers import batch_answers, batched_answer, batched_replay

# Sandbox bank accounts with a scripted outcome (CONVENTIONS.md §13), and the one a sandbox party has
# when it gave none (an installation's own payouts, a merchant whose consent form left nothing due).
CLOSED_BANK_ACCOUNT = "000111111116"
TEST_BANK_ACCOUNT = "000123456789"


class TransferCalls(KeyedCalls):
    async def create_connected_account(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        country: str,
        email: str | None = None,
        reference: str | None = None,
        bank_account: str | None = None,
        holder: AccountHolder | None = None,
    ) -> ProcessorAccount:
        """The simulator keeps no accounts of its own: a connected account is known by moneyrail's id."""
        return ProcessorAccount(reference or "")

    async def update_connected_account(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        processor_account: str,
        country: str,
        bank_account: str | None = None,
        holder: AccountHolder | None = None,
    ) -> ProcessorAccount:
        """Nothing to tell: the simulator reads moneyrail's own rows."""
        return ProcessorAccount(processor_account)

    async def create_transfer(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        amount: int,
        currency: str,
        destination: str,
        source_authorization_id: str | None = None,  # the simulator's balance never waits for funds
    ) -> TransferResult:
        request = {"amount": amount, "currency": currency, "destination": destination}

        async def answer(_books: Books) -> dict[str, Any]:
            return {"id": sandbox_id("sbx_tr"), **request}

        answered = await self._call(tenant, "transfer", idempotency_key, request, answer)
        return TransferResult(
            answered["id"], answered["amount"], answered["currency"], answered["destination"]
        )

    async def create_transfers(
        self, tenant: Tenant, *, idempotency_key: str, transfers: Sequence[TransferRequest]
    ) -> list[BatchedTransfer]:
        """The batch: each transfer recorded under its own key as `create_transfer` records it (so
        reversals, reconciliation and the sandbox helpers see no difference), and the batch's answer
        under the batch's key. An injected `transfer` fault is used up once by the whole call:
        transient, nothing is made; permanent, every transfer not answered before under its own key is
        refused (and that refusal recorded under its key).

        Two statements, each committing by itself (no transaction to open and close): the stored answer
        or the fault and what the transfers' own keys answered; then every new record at once, the
        batch's only if all of its transfers' were written. A concurrent call that wrote first wins:
        this one asks again and answers what was recorded."""
        items = [
            (t.idempotency_key, {"amount": t.amount, "currency": t.currency, "destination": t.destination})
            for t in transfers
        ]
        request = {"transfers": [{"idempotency_key": key, **item} for key, item in items]}
        owner = (tenant.installation_id, tenant.livemode)
        async with autocommit_connection(self._sessionmaker) as connection:
            stored = await connection.fetchrow(
                sql.STORED_BATCH_OR_FAULT, *owner, idempotency_key, [key for key, _ in items]
            )
            if stored["operation_type"] is not None:
                return batch_answers(replay(stored, "transfer_batch", request))
            mode = stored["fault_mode"]
            if mode == "transient":  # used up even though the call "failed"
                raise injected_unavailable("transfer")
            earlier = {row["key"]: row for row in json_value(stored["answered"])}
            answers: list[dict[str, Any]] = []
            new_records: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = []
            for key, item in items:
                if key in earlier:
                    answers.append(batched_replay(key, earlier[key], item))
                    continue
                if mode == "permanent":
                    refusal = injected_refusal("transfer")
                    response: dict[str, Any] = {"error": {"code": refusal.code, "message": refusal.message}}
                else:
                    response = {"id": sandbox_id("sbx_tr"), **item}
                new_records.append((key, item, response, mode is None))
                answers.append(batched_answer(key, response))
            recorded = await connection.fetchval(
                sql.RECORD_BATCH,
                *owner,
                idempotency_key,
                orjson.dumps(request).decode(),
                orjson.dumps({"transfers": answers}).decode(),
                [key for key, _, _, _ in new_records],
                [orjson.dumps(item).decode() for _, item, _, _ in new_records],
                [orjson.dumps(response).decode() for _, _, response, _ in new_records],
                [succeeded for _, _, _, succeeded in new_records],
            )
        if not recorded:  # a concurrent call answered first: its records are the answer
            return await self.create_transfers(tenant, idempotency_key=idempotency_key, transfers=transfers)
        return batch_answers({"transfers": answers})

    async def reverse_transfer(
        self, tenant: Tenant, *, idempotency_key: str, transfer_id: str, amount: int
    ) -> TransferReversalResult:
        request = {"transfer_id": transfer_id, "amount": amount}

        async def answer(books: Books) -> dict[str, Any]:
            # the transfer as this processor answered it, locked so two reversals of it take turns
            transferred = await books.connection.fetchval(
                sql.LOCK_TRANSFER, tenant.installation_id, tenant.livemode, transfer_id
            )
            if transferred is None:  # another tenant's transfer looks exactly like an unknown one
                raise ProcessorRefused("no_such_transfer", f"No such transfer: {transfer_id}.")
            reversed_already = await books.connection.fetchval(
                sql.REVERSED, tenant.installation_id, tenant.livemode, transfer_id
            )
            if amount < 1 or amount > transferred - reversed_already:
                raise ProcessorRefused(
                    "amount_too_large", f"At most {transferred - reversed_already} can still be reversed."
                )
            return {"id": sandbox_id("sbx_trr"), **request}

        answered = await self._call(tenant, "transfer_reversal", idempotency_key, request, answer)
        return TransferReversalResult(answered["id"], answered["transfer_id"], answered["amount"])

    async def create_payout(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        amount: int,
        currency: str,
        bank_account: str,
        connected_account: str | None = None,  # the simulator keeps no balance per account
    ) -> PayoutResult:
        request = {"amount": amount, "currency": currency, "bank_account": bank_account}

        async def answer(_books: Books) -> dict[str, Any]:
            if bank_account == CLOSED_BANK_ACCOUNT:
                raise ProcessorRefused("account_closed", "The destination bank account is closed.")
            return {"id": sandbox_id("sbx_po"), "status": "in_transit", **request}

        answered = await self._call(tenant, "payout", idempotency_key, request, answer)
        return PayoutResult(answered["id"], answered["amount"], answered["currency"], answered["status"])

    async def reverse_payout(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        payout_id: str,
        amount: int,
        currency: str,
        connected_account: str | None = None,
    ) -> PayoutResult:
        request = {"payout_id": payout_id, "amount": amount, "currency": currency}

        async def answer(_books: Books) -> dict[str, Any]:
            return {"id": sandbox_id("sbx_po"), "status": "in_transit", **request}

        answered = await self._call(tenant, "payout_reversal", idempotency_key, request, answer)
        return PayoutResult(answered["id"], answered["amount"], answered["currency"], answered["status"])

    async def list_transfers(self, tenant: Tenant) -> list[ProcessorTransferRecord]:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            rows = await books.connection.fetch(sql.TRANSFER_RECORDS, tenant.installation_id, tenant.livemode)
        records = []
        for row in rows:
            amount, reversed_amount = int(row["amount"]), int(row["amount_reversed"])
            status = row["status"] or ("reversed" if reversed_amount >= amount else "paid")
            records.append(
                ProcessorTransferRecord(
                    row["id"], amount, row["currency"], row["destination"], status, reversed_amount
                )
            )
        return records

    # sandbox helpers: the processor's books go wrong, so reconciliation has something to find ----------
    async def lose_transfer(self, tenant: Tenant, processor_id: str) -> bool:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            lost = await books.connection.fetchval(
                sql.LOSE_TRANSFER, tenant.installation_id, tenant.livemode, processor_id
            )
            await uow.commit()
        return lost is not None

    async def alter_transfer(
        self, tenant: Tenant, processor_id: str, *, amount: int | None, status: str | None
    ) -> bool:
        changes: dict[str, Any] = {}
        if amount is not None:
            changes["amount"] = amount
        if status is not None:
            changes["status"] = status
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            altered = await books.connection.fetchval(
                sql.ALTER_TRANSFER,
                tenant.installation_id,
                tenant.livemode,
                processor_id,
                orjson.dumps(changes).decode(),
            )
            await uow.commit()
        return altered is not None
