"""The sandbox processor: a deterministic simulation of the card network and banks.

It keeps its own books in its own transactions, apart from moneyrail's unit of work, because it plays
an outside system: a call it answered stays answered even if moneyrail's transaction then rolls back
or its worker is killed. Repeating an idempotency key returns the stored answer. The calls on every
payment's path (tokenize, authorize, capture) are, in the usual case, one statement on a connection
outside any transaction: PostgreSQL commits it alone, with no BEGIN and COMMIT round trips.

Card numbers reach `tokenize_card` and go no further: a tokenized card keeps its scripted behaviour,
brand, last4, expiry and fingerprint (cards.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import get_settings
from moneyrail.db.raw import autocommit_connection, driver_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import ID_RANDOM_LENGTH, random_base62
from moneyrail.kit.tenant import Tenant
from moneyrail.processor import cards
from moneyrail.processor.interface import (
    Authorization,
    BatchedTransfer,
    Capture,
    CardDetails,
    CardNotAccepted,
    CardRisk,
    ChargeAnswer,
    CostReport,
    NetworkDispute,
    OffSessionCharge,
    PayoutResult,
    ProcessorAuthorizationRecord,
    ProcessorRefused,
    ProcessorTransferRecord,
    ProcessorUnavailable,
    RefundResult,
    TokenizedCard,
    TransferRequest,
    TransferResult,
    TransferReversalResult,
)
from moneyrail.sandbox.service import tenant_now

# Sandbox bank accounts with a scripted outcome (CONVENTIONS.md §13), and the one a sandbox party has
# when it gave none (an installation's own payouts, a merchant whose consent form left nothing due).
CLOSED_BANK_ACCOUNT = "000111111116"
TEST_BANK_ACCOUNT = "000123456789"

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

SANDBOX_CARD_COUNTRY = "US"

# The network's processing cost of a captured payment: 2.9 % plus 30 minor units, rounded up.
COST_BASIS_POINTS = 290
COST_FIXED_AMOUNT = 30

# The authorization state machine: the statuses each change may start from, and the refusal otherwise.
ALLOWED_FROM: dict[str, tuple[frozenset[str], str]] = {
    "complete_authentication": (
        frozenset({"requires_action"}),
        "authorization_not_awaiting_authentication",
    ),
    "capture": (frozenset({"authorized"}), "authorization_not_capturable"),
    "cancel": (frozenset({"authorized", "requires_action"}), "authorization_not_cancelable"),
    "increment_authorization": (frozenset({"authorized"}), "authorization_not_incrementable"),
    "refund": (frozenset({"captured"}), "authorization_not_refundable"),
}


def processing_cost(amount_captured: int) -> int:
    # integer ceiling: a float product loses cents on large amounts
    return -(-amount_captured * COST_BASIS_POINTS // 10_000) + COST_FIXED_AMOUNT


def _sandbox_id(prefix: str) -> str:
    return f"{prefix}_{random_base62(ID_RANDOM_LENGTH)}"


@dataclass(frozen=True)
class _Books:
    """The simulator's records for one tenant, inside one of its own transactions."""

    tenant: Tenant
    session: AsyncSession
    connection: Any  # the asyncpg connection under the session's transaction

    async def now(self) -> datetime:
        return await tenant_now(self.session, self.tenant)

    async def take_fault(self, operation_type: str) -> str | None:
        mode: str | None = await self.connection.fetchval(
            _TAKE_FAULT, self.tenant.installation_id, self.tenant.livemode, operation_type
        )
        return mode

    async def locked_authorization(self, authorization_id: str) -> Any:
        row = await self.connection.fetchrow(
            _LOCK_AUTHORIZATION, authorization_id, self.tenant.installation_id, self.tenant.livemode
        )
        if row is None:  # another tenant's authorization looks exactly like an unknown one
            raise ProcessorRefused("no_such_authorization", f"No such authorization: {authorization_id}.")
        return row

    async def locked_for(self, change: str, authorization_id: str) -> Any:
        """The authorization, locked until the answer is recorded, when `change` may start from its status."""
        row = await self.locked_authorization(authorization_id)
        allowed, refusal_code = ALLOWED_FROM[change]
        if row["status"] not in allowed:
            raise ProcessorRefused(refusal_code, f"The authorization is {row['status']}.")
        return row


Answer = Callable[[_Books], Awaitable[dict[str, Any]]]

# Before any card's expiry: `checked_card_number` then checks all but the expiry.
NOT_YET_EXPIRED = datetime(1, 1, 1, tzinfo=UTC)

# A tokenized card's behaviour never changes (its row is never updated), so the simulator remembers the
# behaviours it wrote or read, without a lifetime: the risk read of a card just tokenized costs no round
# trip. Keyed by tenant too, so another tenant's token still looks unknown. Bounded: the oldest go first.
REMEMBERED_CARDS = 10_000
CardKey = tuple[str, str, bool]  # token, installation, livemode


class SandboxProcessor:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker
        self._behaviours: dict[CardKey, str] = {}

    def _remember_behaviour(self, key: CardKey, behaviour: str) -> None:
        if len(self._behaviours) >= REMEMBERED_CARDS:
            del self._behaviours[next(iter(self._behaviours))]
        self._behaviours[key] = behaviour

    # cards ------------------------------------------------------------------------------------------
    async def tokenize_card(self, tenant: Tenant, card: CardDetails) -> TokenizedCard:
        if tenant.livemode:
            # the simulator must never make a live payment look real: live needs a real network adapter
            raise CardNotAccepted(
                "live_mode_not_connected",
                "No card network is connected to live mode yet: live cards cannot be charged.",
            )
        # One statement, committing alone: the fault taken (used up even though the call "fails"), the
        # tenant's clock read, and the card saved unless the fault or the card's checks refuse it. Only
        # the expiry needs that clock, so the statement compares it; the refusal is raised after, in
        # the order of the checks, by the same checks on the same time.
        now = utcnow()
        tokenized: TokenizedCard | None = None
        behaviour: str | None = None
        try:
            digits = cards.checked_card_number(card, NOT_YET_EXPIRED)
            behaviour = cards.sandbox_behaviour(digits)
            tokenized = TokenizedCard(
                token=_sandbox_id("sbx_card"),
                brand=cards.card_brand(digits),
                last4=digits[-4:],
                exp_month=card.exp_month,
                exp_year=cards.full_expiry_year(card.exp_year),
                fingerprint=cards.card_fingerprint(tenant.installation_id, digits),
            )
        except CardNotAccepted:
            pass  # raised below, once the fault is taken
        async with autocommit_connection(self._sessionmaker) as connection:
            row = await connection.fetchrow(
                _TOKENIZE,
                tenant.installation_id,
                tenant.livemode,
                tokenized.token if tokenized is not None else None,
                behaviour,
                tokenized.brand if tokenized is not None else None,
                tokenized.last4 if tokenized is not None else None,
                card.exp_month,
                tokenized.exp_year if tokenized is not None else None,
                tokenized.fingerprint if tokenized is not None else None,
                cards.expiry_end(card) if tokenized is not None else None,
                now,
            )
        if row["mode"] == "transient":
            raise _injected_unavailable("tokenize")
        if row["mode"] is not None:
            raise _injected_refusal("tokenize")
        digits = cards.checked_card_number(card, now + timedelta(seconds=row["offset_seconds"]))
        cards.sandbox_behaviour(digits)
        if tokenized is None or behaviour is None or not row["saved"]:
            raise RuntimeError("the card's checks and the tokenizing statement disagree")
        self._remember_behaviour((tokenized.token, tenant.installation_id, tenant.livemode), behaviour)
        return tokenized

    async def authorize(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        card_token: str,
        card_fingerprint: str,
        amount: int,
        currency: str,
        off_session: bool,
        reference: str,
    ) -> Authorization:
        # Compared on a repeated key: the card by its fingerprint, since a retried confirmation tokenizes
        # the same card again under a new token and must get the first answer, not a second charge.
        request = {
            "card": card_fingerprint,
            "amount": amount,
            "currency": currency,
            "off_session": off_session,
            "reference": reference,
        }

        if amount >= 0:
            answered = await self._authorize_at_once(tenant, idempotency_key, card_token, request)
            if answered is not None:
                return _authorization(answered)
        answer = _authorize_answer(tenant, card_token, amount, currency, reference, off_session)
        return _authorization(await self._call(tenant, "authorize", idempotency_key, request, answer))

    async def _authorize_at_once(
        self, tenant: Tenant, idempotency_key: str, card_token: str, request: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The usual authorization (`_authorize_answer` under `_keyed`) as one statement that commits
        alone: the call recorded with its authorization, as `_call` would. None, with nothing written,
        when it is not the usual one (a key asked before, a fault armed, a card unknown to this tenant,
        a concurrent call with the key): `_call` then answers it."""
        amount, off_session = request["amount"], request["off_session"]
        # the outcome of each behaviour for this amount, so the statement picks the card's own
        outcomes = {
            behaviour: cards.authorization_outcome(behaviour, amount, off_session=off_session)
            for behaviour in cards.BEHAVIOURS
        }
        async with autocommit_connection(self._sessionmaker) as connection:
            response = await connection.fetchval(
                _AUTHORIZE_AT_ONCE,
                tenant.installation_id,
                tenant.livemode,
                idempotency_key,
                card_token,
                _sandbox_id("sbx_auth"),
                amount,
                request["currency"],
                request["reference"],
                _dumps(outcomes),
                _dumps(request),
            )
        return None if response is None else dict(_json(response))

    async def complete_authentication(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, approved: bool
    ) -> Authorization:
        request = {"authorization_id": authorization_id, "approved": approved}

        async def answer(books: _Books) -> dict[str, Any]:
            row = await books.locked_for("complete_authentication", authorization_id)
            status, decline_code = ("authorized", None) if approved else ("declined", "authentication_failed")
            await books.connection.execute(_SET_STATUS, authorization_id, status, decline_code)
            return _authorization_answer(
                authorization_id, status, row["amount"], row["currency"], decline_code
            )

        answered = await self._call(tenant, "complete_authentication", idempotency_key, request, answer)
        return _authorization(answered)

    async def capture(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Capture:
        request = {"authorization_id": authorization_id, "amount": amount}

        if amount >= 1:
            async with autocommit_connection(self._sessionmaker) as connection:
                # the usual capture (`_capture_answer` under `_keyed`) in one statement that commits alone;
                # no row when it is not the usual one, and nothing written: `_call` answers it
                response = await connection.fetchval(
                    _CAPTURE_AT_ONCE,
                    tenant.installation_id,
                    tenant.livemode,
                    idempotency_key,
                    authorization_id,
                    amount,
                    _dumps(request),
                    utcnow(),
                )
            if response is not None:
                return _capture(_json(response))
        answer = _capture_answer(tenant, authorization_id, amount)
        return _capture(await self._call(tenant, "capture", idempotency_key, request, answer))

    async def charge_off_session_many(
        self, tenant: Tenant, charges: Sequence[OffSessionCharge]
    ) -> list[ChargeAnswer]:
        """Every charge's authorize and capture calls in one transaction of the simulator's books, each
        call under its own key and recorded as alone (`_keyed`), so a charge retried alone replays."""
        answers: list[ChargeAnswer] = []
        fault: ProcessorUnavailable | None = None
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await _open_books(uow, tenant)
            at_once = await _charge_at_once(books, tenant, charges)
            if at_once is not None:
                await uow.commit()
                return at_once
            try:
                for charge in charges:
                    answers.append(await _charge(books, tenant, charge))
            except ProcessorUnavailable as unavailable:  # an injected fault, used up: keep what came before
                fault = unavailable
            except _AnsweredConcurrently:
                await uow.rollback()
                raise ProcessorUnavailable(
                    "sandbox processor: a concurrent call with one of the batch's keys; ask again"
                ) from None
            await uow.commit()
        if fault is not None:
            raise fault
        return answers

    async def cancel(self, tenant: Tenant, *, idempotency_key: str, authorization_id: str) -> Authorization:
        request = {"authorization_id": authorization_id}

        async def answer(books: _Books) -> dict[str, Any]:
            row = await books.locked_for("cancel", authorization_id)
            await books.connection.execute(_SET_STATUS, authorization_id, "canceled", None)
            return _authorization_answer(authorization_id, "canceled", row["amount"], row["currency"], None)

        return _authorization(await self._call(tenant, "cancel", idempotency_key, request, answer))

    async def increment_authorization(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Authorization:
        request = {"authorization_id": authorization_id, "amount": amount}

        async def answer(books: _Books) -> dict[str, Any]:
            row = await books.locked_for("increment_authorization", authorization_id)
            if amount <= row["amount"]:
                raise ProcessorRefused(
                    "amount_invalid", f"The new total must be more than the {row['amount']} held."
                )
            decline_code = cards.charge_decline_code(row["behaviour"], amount)
            if decline_code is not None:  # the old hold stays: the answer says how much is still held
                return _authorization_answer(
                    authorization_id, "declined", row["amount"], row["currency"], decline_code
                )
            await books.connection.execute(_SET_AMOUNT, authorization_id, amount)
            return _authorization_answer(authorization_id, "authorized", amount, row["currency"], None)

        answered = await self._call(tenant, "increment_authorization", idempotency_key, request, answer)
        return _authorization(answered)

    async def refund(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> RefundResult:
        request = {"authorization_id": authorization_id, "amount": amount}

        async def answer(books: _Books) -> dict[str, Any]:
            row = await books.locked_for("refund", authorization_id)
            if amount < 1:
                raise ProcessorRefused("amount_invalid", "The amount to refund must be at least 1.")
            refundable = row["amount_captured"] - row["amount_refunded"]
            if amount > refundable:
                raise ProcessorRefused("amount_too_large", f"At most {refundable} can still be refunded.")
            await books.connection.execute(_ADD_REFUND, authorization_id, amount)
            return {"id": _sandbox_id("sbx_re"), "authorization_id": authorization_id, "amount": amount}

        answered = await self._call(tenant, "refund", idempotency_key, request, answer)
        return RefundResult(answered["id"], answered["authorization_id"], answered["amount"])

    async def cost_report(
        self, tenant: Tenant, *, authorization_id: str, as_of: datetime | None = None
    ) -> CostReport | None:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await _open_books(uow, tenant)
            await _fail_if_faulted(uow, books, "cost_report")
            row = await books.locked_authorization(authorization_id)
            if row["status"] != "captured" or row["captured_at"] is None:
                return None
            reported_at = row["captured_at"] + timedelta(days=get_settings().sandbox_cost_report_days)
            # the caller's clock may be ahead of what this transaction can see: a sandbox clock advanced
            # in the caller's still-open transaction runs the work that fell due before it commits
            now = max(as_of, await books.now()) if as_of is not None else await books.now()
            if now < reported_at:
                return None
            # reported once: a later report gives the same figure whatever happened since
            cost_amount = await books.connection.fetchval(
                _SET_COST, authorization_id, processing_cost(row["amount_captured"])
            )
            await uow.commit()
        return CostReport(authorization_id, int(cost_amount), row["currency"])

    async def open_authorizations(
        self, *, created_after: datetime, created_before: datetime, limit: int
    ) -> list[ProcessorAuthorizationRecord]:
        async with UnitOfWork(self._sessionmaker) as uow:
            connection = await driver_connection(uow.session)
            rows = await connection.fetch(_OPEN_AUTHORIZATIONS, created_after, created_before, limit)
        return [
            ProcessorAuthorizationRecord(
                id=row["id"],
                installation_id=row["installation_id"],
                livemode=row["livemode"],
                reference=row["reference"],
                status=row["status"],
                amount=int(row["amount"]),
                amount_captured=int(row["amount_captured"]),
                amount_refunded=int(row["amount_refunded"]),
                currency=row["currency"],
                created_at=row["created_at"],
            )
            for row in rows
        ]

    # transfers and payouts --------------------------------------------------------------------------
    async def create_transfer(
        self, tenant: Tenant, *, idempotency_key: str, amount: int, currency: str, destination: str
    ) -> TransferResult:
        request = {"amount": amount, "currency": currency, "destination": destination}

        async def answer(_books: _Books) -> dict[str, Any]:
            return {"id": _sandbox_id("sbx_tr"), **request}

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
                _STORED_BATCH_OR_FAULT, *owner, idempotency_key, [key for key, _ in items]
            )
            if stored["operation_type"] is not None:
                return _batch_answers(_replay(stored, "transfer_batch", request))
            mode = stored["fault_mode"]
            if mode == "transient":  # used up even though the call "failed"
                raise _injected_unavailable("transfer")
            earlier = {row["key"]: row for row in _json(stored["answered"])}
            answers: list[dict[str, Any]] = []
            new_records: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = []
            for key, item in items:
                if key in earlier:
                    answers.append(_batched_replay(key, earlier[key], item))
                    continue
                if mode == "permanent":
                    refusal = _injected_refusal("transfer")
                    response: dict[str, Any] = {"error": {"code": refusal.code, "message": refusal.message}}
                else:
                    response = {"id": _sandbox_id("sbx_tr"), **item}
                new_records.append((key, item, response, mode is None))
                answers.append(_batched_answer(key, response))
            recorded = await connection.fetchval(
                _RECORD_BATCH,
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
        return _batch_answers({"transfers": answers})

    async def reverse_transfer(
        self, tenant: Tenant, *, idempotency_key: str, transfer_id: str, amount: int
    ) -> TransferReversalResult:
        request = {"transfer_id": transfer_id, "amount": amount}

        async def answer(books: _Books) -> dict[str, Any]:
            # the transfer as this processor answered it, locked so two reversals of it take turns
            transferred = await books.connection.fetchval(
                _LOCK_TRANSFER, tenant.installation_id, tenant.livemode, transfer_id
            )
            if transferred is None:  # another tenant's transfer looks exactly like an unknown one
                raise ProcessorRefused("no_such_transfer", f"No such transfer: {transfer_id}.")
            reversed_already = await books.connection.fetchval(
                _REVERSED, tenant.installation_id, tenant.livemode, transfer_id
            )
            if amount < 1 or amount > transferred - reversed_already:
                raise ProcessorRefused(
                    "amount_too_large", f"At most {transferred - reversed_already} can still be reversed."
                )
            return {"id": _sandbox_id("sbx_trr"), **request}

        answered = await self._call(tenant, "transfer_reversal", idempotency_key, request, answer)
        return TransferReversalResult(answered["id"], answered["transfer_id"], answered["amount"])

    async def create_payout(
        self, tenant: Tenant, *, idempotency_key: str, amount: int, currency: str, bank_account: str
    ) -> PayoutResult:
        request = {"amount": amount, "currency": currency, "bank_account": bank_account}

        async def answer(_books: _Books) -> dict[str, Any]:
            if bank_account == CLOSED_BANK_ACCOUNT:
                raise ProcessorRefused("account_closed", "The destination bank account is closed.")
            return {"id": _sandbox_id("sbx_po"), "status": "in_transit", **request}

        answered = await self._call(tenant, "payout", idempotency_key, request, answer)
        return PayoutResult(answered["id"], answered["amount"], answered["currency"], answered["status"])

    async def reverse_payout(
        self, tenant: Tenant, *, idempotency_key: str, payout_id: str, amount: int, currency: str
    ) -> PayoutResult:
        request = {"payout_id": payout_id, "amount": amount, "currency": currency}

        async def answer(_books: _Books) -> dict[str, Any]:
            return {"id": _sandbox_id("sbx_po"), "status": "in_transit", **request}

        answered = await self._call(tenant, "payout_reversal", idempotency_key, request, answer)
        return PayoutResult(answered["id"], answered["amount"], answered["currency"], answered["status"])

    async def list_transfers(self, tenant: Tenant) -> list[ProcessorTransferRecord]:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await _open_books(uow, tenant)
            rows = await books.connection.fetch(_TRANSFER_RECORDS, tenant.installation_id, tenant.livemode)
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
            books = await _open_books(uow, tenant)
            lost = await books.connection.fetchval(
                _LOSE_TRANSFER, tenant.installation_id, tenant.livemode, processor_id
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
            books = await _open_books(uow, tenant)
            altered = await books.connection.fetchval(
                _ALTER_TRANSFER,
                tenant.installation_id,
                tenant.livemode,
                processor_id,
                orjson.dumps(changes).decode(),
            )
            await uow.commit()
        return altered is not None

    # risk ------------------------------------------------------------------------------------------
    async def card_risk(self, tenant: Tenant, *, card_token: str) -> CardRisk:
        """The risk card (4100 0000 0000 0019) is `elevated`; all are issued in SANDBOX_CARD_COUNTRY."""
        key = (card_token, tenant.installation_id, tenant.livemode)
        behaviour = self._behaviours.get(key)
        if behaviour is None:
            async with autocommit_connection(self._sessionmaker) as connection:  # a read: one statement
                behaviour = await connection.fetchval(_CARD_BEHAVIOUR, *key)
            if behaviour is None:
                raise ProcessorRefused("no_such_card", "No such card: the token is unknown.")
            self._remember_behaviour(key, behaviour)
        level = "elevated" if behaviour == cards.RISK_REVIEW else "normal"
        return CardRisk(risk_level=level, country=SANDBOX_CARD_COUNTRY)

    # disputes ---------------------------------------------------------------------------------------
    async def open_dispute(
        self, tenant: Tenant, *, authorization_id: str, amount: int, reason: str, as_of: datetime
    ) -> NetworkDispute:
        # one dispute per payment: the key is the authorization's, so a second opening is refused
        return await self._open_dispute(tenant, authorization_id, amount, reason, as_of)

    async def _open_dispute(
        self, tenant: Tenant, authorization_id: str, amount: int | None, reason: str, as_of: datetime
    ) -> NetworkDispute:
        request = {"authorization_id": authorization_id, "amount": amount, "reason": reason}

        async def answer(books: _Books) -> dict[str, Any]:
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
                "id": _sandbox_id("sbx_dp"),
                "authorization_id": authorization_id,
                "amount": disputed,
                "currency": row["currency"],
                "reason": reason,
                "fee_amount": DISPUTE_FEE_AMOUNT,
                "opened_at": as_of.isoformat(),
                "evidence_due_by": (as_of + timedelta(days=DISPUTE_EVIDENCE_DAYS)).isoformat(),
            }

        answered = await self._call(tenant, "dispute", f"dispute:{authorization_id}", request, answer)
        return _network_dispute(answered)

    async def due_disputes(self, tenant: Tenant, *, as_of: datetime) -> list[NetworkDispute]:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await _open_books(uow, tenant)
            rows = await books.connection.fetch(
                _DISPUTE_CARD_CAPTURES,
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
        self, tenant: Tenant, *, idempotency_key: str, dispute_id: str, evidence_text: str, as_of: datetime
    ) -> None:
        request = {"dispute_id": dispute_id, "evidence_text": evidence_text}

        async def answer(books: _Books) -> dict[str, Any]:
            dispute = await _dispute_record(books, dispute_id)
            if as_of > datetime.fromisoformat(dispute["evidence_due_by"]):
                raise ProcessorRefused("dispute_evidence_past_due", "The evidence deadline has passed.")
            return {"dispute_id": dispute_id, "submitted_at": as_of.isoformat()}

        await self._call(tenant, "dispute_evidence", idempotency_key, request, answer)

    async def accept_dispute(
        self, tenant: Tenant, *, idempotency_key: str, dispute_id: str, as_of: datetime
    ) -> None:
        request = {"dispute_id": dispute_id}

        async def answer(books: _Books) -> dict[str, Any]:
            await _dispute_record(books, dispute_id)
            return {"dispute_id": dispute_id, "accepted_at": as_of.isoformat()}

        await self._call(tenant, "dispute_acceptance", idempotency_key, request, answer)

    async def dispute_outcome(self, tenant: Tenant, *, dispute_id: str, as_of: datetime) -> str | None:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await _open_books(uow, tenant)
            dispute = await _dispute_record(books, dispute_id)
            steps = await books.connection.fetch(
                _DISPUTE_STEPS, tenant.installation_id, tenant.livemode, dispute_id
            )
        return decide_dispute(
            dispute,
            [(row["operation_type"], _json(row["request"]), _json(row["response"])) for row in steps],
            as_of,
        )

    # ------------------------------------------------------------------------------------------------
    async def _call(
        self,
        tenant: Tenant,
        operation_type: str,
        idempotency_key: str,
        request: dict[str, Any],
        answer: Answer,
    ) -> dict[str, Any]:
        """One keyed call in one transaction: the stored answer, or a fresh one recorded with its effects.

        `answer` refuses (ProcessorRefused) before it changes anything, and locks what it changes, so a
        refusal is recorded alone and concurrent calls on one authorization take turns.
        """
        failure: ProcessorUnavailable | ProcessorRefused | None = None
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await _open_books(uow, tenant)
            try:
                response = await _keyed(books, operation_type, idempotency_key, request, answer)
            except _AnsweredConcurrently:
                await uow.rollback()
                return await self._call(tenant, operation_type, idempotency_key, request, answer)
            except (ProcessorUnavailable, ProcessorRefused) as refused:
                failure = refused  # recorded (or a fault used up, or a refusal replayed): commit first
            await uow.commit()
        if failure is not None:
            raise failure
        return response


class _AnsweredConcurrently(Exception):
    """A concurrent call with the same key recorded its answer first: roll back and ask again."""


async def _keyed(
    books: _Books, operation_type: str, idempotency_key: str, request: dict[str, Any], answer: Answer
) -> dict[str, Any]:
    """One keyed call in the caller's transaction: the stored answer, or a fresh one recorded with its
    effects. Raises the refusal (recorded with the call), ProcessorUnavailable for an injected transient
    fault (used up: the caller commits), _AnsweredConcurrently (the caller rolls back)."""
    key = (books.tenant.installation_id, books.tenant.livemode, idempotency_key)
    # the stored answer, or else an injected fault used up: one round trip
    stored = await books.connection.fetchrow(_STORED_CALL_OR_FAULT, *key, operation_type)
    if stored["operation_type"] is not None:
        return _replay(stored, operation_type, request)
    mode = stored["fault_mode"]
    if mode == "transient":
        raise _injected_unavailable(operation_type)
    refusal: ProcessorRefused | None = None
    if mode == "permanent":
        refusal = _injected_refusal(operation_type)
    else:
        try:
            response = await answer(books)
        except ProcessorRefused as refused:
            refusal = refused
    if refusal is not None:
        response = {"error": {"code": refusal.code, "message": refusal.message}}
    inserted = await books.connection.fetchval(
        _RECORD_CALL,
        *key,
        operation_type,
        orjson.dumps(request).decode(),
        orjson.dumps(response).decode(),
        refusal is None,
    )
    if inserted is None:
        raise _AnsweredConcurrently
    if refusal is not None:
        raise refusal
    return response


def _authorize_answer(
    tenant: Tenant, card_token: str, amount: int, currency: str, reference: str, off_session: bool
) -> Answer:
    async def answer(books: _Books) -> dict[str, Any]:
        if amount < 0:
            raise ProcessorRefused("amount_invalid", "The amount must not be negative.")
        behaviour = await books.connection.fetchval(
            _CARD_BEHAVIOUR, card_token, tenant.installation_id, tenant.livemode
        )
        if behaviour is None:  # another tenant's token looks exactly like an unknown one
            raise ProcessorRefused("no_such_card", "No such card: the token is unknown.")
        status, decline_code = cards.authorization_outcome(behaviour, amount, off_session=off_session)
        authorization_id = _sandbox_id("sbx_auth")
        await books.connection.execute(
            _INSERT_AUTHORIZATION,
            authorization_id,
            tenant.installation_id,
            tenant.livemode,
            card_token,
            amount,
            currency,
            status,
            decline_code,
            reference,
        )
        return _authorization_answer(authorization_id, status, amount, currency, decline_code)

    return answer


def _capture_answer(tenant: Tenant, authorization_id: str, amount: int) -> Answer:
    async def answer(books: _Books) -> dict[str, Any]:
        row = await books.locked_for("capture", authorization_id)
        if amount < 1:
            raise ProcessorRefused("amount_invalid", "The amount to capture must be at least 1.")
        if amount > row["amount"]:
            raise ProcessorRefused(
                "amount_too_large", f"At most {row['amount']} can be captured on this authorization."
            )
        # the tenant's clock came with the row: no second round trip for it
        offset = 0 if tenant.livemode else row["clock_offset_seconds"]  # as tenant_now: live is real time
        captured_at = utcnow() + timedelta(seconds=offset)
        await books.connection.execute(_CAPTURE, authorization_id, amount, captured_at)
        return {
            "authorization_id": authorization_id,
            "amount_captured": amount,
            "captured_at": captured_at.isoformat(),
        }

    return answer


async def _charge_at_once(
    books: _Books, tenant: Tenant, charges: Sequence[OffSessionCharge]
) -> list[ChargeAnswer] | None:
    """The usual batch in four statements: no key asked before (nothing to replay), no fault waiting
    for an authorization or a capture, every card known and every amount positive. Each charge gets
    the rows and the recorded calls `_charge` would write for it alone; None (nothing written) when
    the batch is not that usual one, and `_charge` answers each in turn."""
    keys = [charge.idempotency_key for charge in charges]
    tokens = list({charge.card_token for charge in charges})
    state = await books.connection.fetchrow(
        _BATCH_STATE, tenant.installation_id, tenant.livemode, keys, tokens
    )
    if state["stored"] or state["faulted"] or any(charge.amount < 1 for charge in charges):
        return None
    behaviours = dict(_json(state["behaviours"]) or {})
    if any(charge.card_token not in behaviours for charge in charges):
        return None
    captured_at = utcnow() + timedelta(seconds=0 if tenant.livemode else state["offset_seconds"])
    answers: list[ChargeAnswer] = []
    rows: list[tuple[Any, ...]] = []  # authorizations
    calls: list[tuple[str, str, str, str]] = []  # key, operation type, request, response
    for charge in charges:
        status, decline_code = cards.authorization_outcome(
            behaviours[charge.card_token], charge.amount, off_session=True
        )
        authorization_id = _sandbox_id("sbx_auth")
        authorized = _authorization_answer(
            authorization_id, status, charge.amount, charge.currency, decline_code
        )
        request = {
            "card": charge.card_fingerprint,
            "amount": charge.amount,
            "currency": charge.currency,
            "off_session": True,
            "reference": charge.reference,
        }
        calls.append((charge.idempotency_key, "authorize", _dumps(request), _dumps(authorized)))
        capture: Capture | None = None
        if status == "authorized" and charge.capture_key is not None:
            capture = Capture(authorization_id, charge.amount)
            calls.append(
                (
                    charge.capture_key(authorization_id),
                    "capture",
                    _dumps({"authorization_id": authorization_id, "amount": charge.amount}),
                    _dumps({"authorization_id": authorization_id, "amount_captured": charge.amount}),
                )
            )
        rows.append(
            (
                authorization_id,
                charge.card_token,
                charge.amount,
                charge.currency,
                "captured" if capture is not None else status,
                decline_code,
                charge.reference,
                charge.amount if capture is not None else 0,
                captured_at if capture is not None else None,
            )
        )
        answers.append(ChargeAnswer(_authorization(authorized), capture))
    await books.connection.execute(
        _INSERT_AUTHORIZATIONS, tenant.installation_id, tenant.livemode, *map(list, zip(*rows, strict=True))
    )
    recorded = await books.connection.fetchval(
        _RECORD_CALLS, tenant.installation_id, tenant.livemode, *map(list, zip(*calls, strict=True))
    )
    if recorded != len(calls):  # a concurrent call with one of these keys answered first
        raise _AnsweredConcurrently
    return answers


def _dumps(value: dict[str, Any]) -> str:
    return orjson.dumps(value).decode()


async def _charge(books: _Books, tenant: Tenant, charge: OffSessionCharge) -> ChargeAnswer:
    """One charge of a batch: authorize, and capture what was authorized when asked (as the single
    path asks `authorize` then `capture`, with the same keys and requests)."""
    request = {
        "card": charge.card_fingerprint,
        "amount": charge.amount,
        "currency": charge.currency,
        "off_session": True,
        "reference": charge.reference,
    }
    answer = _authorize_answer(
        tenant, charge.card_token, charge.amount, charge.currency, charge.reference, True
    )
    try:
        authorization = _authorization(
            await _keyed(books, "authorize", charge.idempotency_key, request, answer)
        )
    except ProcessorRefused as refused:
        return ChargeAnswer(refused, None)
    if authorization.status != "authorized" or charge.capture_key is None:
        return ChargeAnswer(authorization, None)
    capture_request = {"authorization_id": authorization.id, "amount": charge.amount}
    try:
        captured = await _keyed(
            books,
            "capture",
            charge.capture_key(authorization.id),
            capture_request,
            _capture_answer(tenant, authorization.id, charge.amount),
        )
    except ProcessorRefused as refused:
        return ChargeAnswer(authorization, refused)
    return ChargeAnswer(authorization, _capture(captured))


async def _open_books(uow: UnitOfWork, tenant: Tenant) -> _Books:
    # the simulator answers every money operation: straight on the driver (db/raw.py)
    return _Books(tenant, uow.session, await driver_connection(uow.session))


async def _fail_if_faulted(uow: UnitOfWork, books: _Books, operation_type: str) -> None:
    """For calls without an idempotency key: an injected fault is used up and raised, nothing recorded."""
    mode = await books.take_fault(operation_type)
    if mode is None:
        return
    await uow.commit()
    if mode == "transient":
        raise _injected_unavailable(operation_type)
    raise _injected_refusal(operation_type)


def _injected_unavailable(operation_type: str) -> ProcessorUnavailable:
    return ProcessorUnavailable(f"sandbox processor: injected transient fault on {operation_type}")


def _injected_refusal(operation_type: str) -> ProcessorRefused:
    return ProcessorRefused("processor_error", f"injected permanent fault on {operation_type}")


def _authorization_answer(
    authorization_id: str, status: str, amount: int, currency: str, decline_code: str | None
) -> dict[str, Any]:
    return {
        "id": authorization_id,
        "status": status,
        "amount": amount,
        "currency": currency,
        "decline_code": decline_code,
    }


def _capture(answer: dict[str, Any]) -> Capture:
    # an answer recorded before captures said when (and a batch's) has no `captured_at`
    captured_at = answer.get("captured_at")
    return Capture(
        answer["authorization_id"],
        answer["amount_captured"],
        datetime.fromisoformat(captured_at) if captured_at is not None else None,
    )


def _authorization(answer: dict[str, Any]) -> Authorization:
    return Authorization(
        id=answer["id"],
        status=answer["status"],
        amount=answer["amount"],
        currency=answer["currency"],
        decline_code=answer["decline_code"],
    )


_STORED_BATCH_OR_FAULT = """
    WITH stored AS (
        SELECT operation_type, request, response, succeeded FROM sandbox_processor_calls
        WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3
    ), fault AS (
        UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
        WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND remaining > 0
          AND NOT EXISTS (SELECT 1 FROM stored)
        RETURNING mode
    )
    SELECT s.operation_type, s.request, s.response, s.succeeded, (SELECT mode FROM fault) AS fault_mode,
           (SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'key', c.idempotency_key, 'operation_type', c.operation_type, 'request', c.request,
                       'response', c.response, 'succeeded', c.succeeded)), '[]'::jsonb)
            FROM sandbox_processor_calls c
            WHERE c.installation_id = $1 AND c.livemode = $2 AND c.idempotency_key = ANY($4::text[])
              AND NOT EXISTS (SELECT 1 FROM stored)) AS answered
    FROM (SELECT 1) AS one LEFT JOIN stored AS s ON true
"""
# the batch's record is written only when every one of its new transfers was: true when it was
_RECORD_BATCH = """
    WITH transfers AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, key, 'transfer', request::jsonb, response::jsonb, succeeded
        FROM unnest($6::text[], $7::text[], $8::text[], $9::bool[]) AS t(key, request, response, succeeded)
        ON CONFLICT DO NOTHING
        RETURNING 1
    ), batch AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, $3, 'transfer_batch', $4::jsonb, $5::jsonb, true
        WHERE (SELECT count(*) FROM transfers) = cardinality($6::text[])
        ON CONFLICT DO NOTHING
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM batch)
"""
_STORED_CALL_OR_FAULT = """
    WITH stored AS (
        SELECT operation_type, request, response, succeeded FROM sandbox_processor_calls
        WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3
        FOR UPDATE
    ), fault AS (
        UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
        WHERE installation_id = $1 AND livemode = $2 AND operation_type = $4 AND remaining > 0
          AND NOT EXISTS (SELECT 1 FROM stored)
        RETURNING mode
    )
    SELECT s.operation_type, s.request, s.response, s.succeeded, (SELECT mode FROM fault) AS fault_mode
    FROM (SELECT 1) AS one LEFT JOIN stored AS s ON true
"""
# A tokenizing: the fault taken, the tenant's clock, and the card ($3, NULL when its checks refused it)
# saved when no fault was armed and, on the tenant's clock ($11, now, plus the offset), before $10 (when
# the card expires; NULL: never, within dates).
_TOKENIZE = """
    WITH fault AS (
        UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
        WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'tokenize' AND remaining > 0
        RETURNING mode
    ), clock AS (
        SELECT offset_seconds, $11::timestamptz + make_interval(secs => offset_seconds) AS tenant_now
        FROM (SELECT COALESCE((SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = $1), 0)
                  AS offset_seconds) AS offset_of_tenant
    ), saved AS (
        INSERT INTO sandbox_cards
            (token, installation_id, livemode, behaviour, brand, last4, exp_month, exp_year, fingerprint)
        SELECT $3, $1, $2, $4, $5, $6, $7, $8, $9 FROM clock
        WHERE $3::varchar IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fault)
          AND ($10::timestamptz IS NULL OR clock.tenant_now < $10)
        RETURNING 1
    )
    SELECT (SELECT mode FROM fault) AS mode, clock.offset_seconds, EXISTS (SELECT 1 FROM saved) AS saved
    FROM clock
"""
_TAKE_FAULT = """
    UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = $3 AND remaining > 0
    RETURNING mode
"""
# A batch of charges: keys already asked, faults waiting, the cards' behaviours, the tenant's clock.
_BATCH_STATE = """
    SELECT
        EXISTS (SELECT 1 FROM sandbox_processor_calls
                WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = ANY($3::text[])) AS stored,
        EXISTS (SELECT 1 FROM sandbox_processor_faults
                WHERE installation_id = $1 AND livemode = $2 AND remaining > 0
                  AND operation_type IN ('authorize', 'capture')) AS faulted,
        (SELECT jsonb_object_agg(token, behaviour) FROM sandbox_cards
         WHERE token = ANY($4::text[]) AND installation_id = $1 AND livemode = $2) AS behaviours,
        COALESCE((SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = $1), 0) AS offset_seconds
"""
# as `_INSERT_AUTHORIZATION` then, for a captured one, `_CAPTURE`
_INSERT_AUTHORIZATIONS = """
    INSERT INTO sandbox_authorizations
        (id, installation_id, livemode, card_token, amount, currency, status, decline_code, reference,
         amount_captured, captured_at)
    SELECT id, $1, $2, card_token, amount, currency, status, decline_code, reference, amount_captured,
           captured_at
    FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[],
                $10::bigint[], $11::timestamptz[])
         AS a(id, card_token, amount, currency, status, decline_code, reference, amount_captured, captured_at)
"""
# as `_RECORD_CALL` for each (all succeeded: a refusal takes the one-by-one path); how many were new
_RECORD_CALLS = """
    WITH recorded AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, idempotency_key, operation_type, request::jsonb, response::jsonb, true
        FROM unnest($3::text[], $4::text[], $5::text[], $6::text[])
             AS c(idempotency_key, operation_type, request, response)
        ON CONFLICT DO NOTHING
        RETURNING 1
    )
    SELECT count(*) FROM recorded
"""
_RECORD_CALL = """
    INSERT INTO sandbox_processor_calls
        (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT DO NOTHING
    RETURNING idempotency_key
"""
_LOCK_TRANSFER = """
    SELECT (request->>'amount')::bigint FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND succeeded
      AND response->>'id' = $3
    FOR UPDATE
"""
_REVERSED = """
    SELECT coalesce(sum((request->>'amount')::bigint), 0) FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer_reversal' AND succeeded
      AND request->>'transfer_id' = $3
"""
_TRANSFER_RECORDS = """
    SELECT t.response->>'id' AS id, (t.response->>'amount')::bigint AS amount,
           t.response->>'currency' AS currency, t.response->>'destination' AS destination,
           t.response->>'status' AS status,
           coalesce((SELECT sum((r.request->>'amount')::bigint) FROM sandbox_processor_calls r
                     WHERE r.installation_id = t.installation_id AND r.livemode = t.livemode
                       AND r.operation_type = 'transfer_reversal' AND r.succeeded
                       AND r.request->>'transfer_id' = t.response->>'id'), 0) AS amount_reversed
    FROM sandbox_processor_calls t
    WHERE t.installation_id = $1 AND t.livemode = $2 AND t.operation_type = 'transfer' AND t.succeeded
    ORDER BY t.created_at
"""
_LOSE_TRANSFER = """
    DELETE FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND response->>'id' = $3
    RETURNING idempotency_key
"""
_ALTER_TRANSFER = """
    UPDATE sandbox_processor_calls SET response = response || $4::jsonb
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND response->>'id' = $3
    RETURNING idempotency_key
"""
# `authorize`'s usual case: no answer stored under the key ($3), no authorization fault armed, the card
# ($4) this tenant's. The call is recorded first; the authorization is written only with it, so a
# concurrent call with the key (its record first) leaves nothing written here. $9: behaviour -> [status,
# decline code]; the response is `_authorization_answer`'s.
_AUTHORIZE_AT_ONCE = """
    WITH usual AS (
        SELECT $9::jsonb -> c.behaviour AS outcome FROM sandbox_cards c
        WHERE c.token = $4 AND c.installation_id = $1 AND c.livemode = $2
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_calls
                          WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3)
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_faults
                          WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'authorize'
                            AND remaining > 0)
    ), recorded AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, $3, 'authorize', $10::jsonb,
               jsonb_build_object('id', $5::text, 'status', outcome -> 0, 'amount', $6::bigint,
                                  'currency', $7::text, 'decline_code', outcome -> 1),
               true
        FROM usual
        ON CONFLICT DO NOTHING
        RETURNING response
    ), held AS (
        INSERT INTO sandbox_authorizations
            (id, installation_id, livemode, card_token, amount, currency, status, decline_code, reference)
        SELECT $5, $1, $2, $4, $6, $7, response ->> 'status', response ->> 'decline_code', $8 FROM recorded
    )
    SELECT response FROM recorded
"""
# `capture`'s usual case: no answer stored under the key ($3), no capture fault armed, the authorization
# ($4) this tenant's, authorized, holding at least the amount ($5, at least 1). Locked, so a concurrent
# capture waits and then finds it captured (no row: `_call` refuses it). Captured at $7 (now) on the
# tenant's clock, as `_capture_answer`; the response is `_capture_answer`'s.
_CAPTURE_AT_ONCE = """
    WITH usual AS (
        SELECT a.id, $7::timestamptz + make_interval(
                         secs => CASE WHEN $2 THEN 0 ELSE COALESCE(k.offset_seconds, 0) END) AS captured_at
        FROM sandbox_authorizations a LEFT JOIN sandbox_clocks k ON k.installation_id = a.installation_id
        WHERE a.id = $4 AND a.installation_id = $1 AND a.livemode = $2 AND a.status = 'authorized'
          AND a.amount >= $5
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_calls
                          WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3)
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_faults
                          WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'capture'
                            AND remaining > 0)
        FOR UPDATE OF a
    ), recorded AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, $3, 'capture', $6::jsonb,
               jsonb_build_object('authorization_id', usual.id, 'amount_captured', $5::bigint,
                                  'captured_at', usual.captured_at),
               true
        FROM usual
        ON CONFLICT DO NOTHING
        RETURNING response
    )
    UPDATE sandbox_authorizations a
    SET status = 'captured', amount_captured = $5, captured_at = usual.captured_at, updated_at = now()
    FROM usual, recorded
    WHERE a.id = usual.id
    RETURNING recorded.response
"""
_CARD_BEHAVIOUR = """
    SELECT behaviour FROM sandbox_cards WHERE token = $1 AND installation_id = $2 AND livemode = $3
"""
_INSERT_AUTHORIZATION = """
    INSERT INTO sandbox_authorizations
        (id, installation_id, livemode, card_token, amount, currency, status, decline_code, reference)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
"""
# created_at is its transaction's start: the sweep's grace (minutes) outlasts any such transaction, so
# the sweep's watermark never passes a row still uncommitted
_OPEN_AUTHORIZATIONS = """
    SELECT id, installation_id, livemode, reference, status, amount, amount_captured, amount_refunded,
           currency, created_at
    FROM sandbox_authorizations
    WHERE created_at > $1 AND created_at <= $2
      AND (status IN ('authorized', 'requires_action')
           OR (status = 'captured' AND amount_refunded < amount_captured))
    ORDER BY created_at, id
    LIMIT $3
"""
_LOCK_AUTHORIZATION = """
    SELECT a.status, a.amount, a.currency, a.amount_captured, a.amount_refunded, a.captured_at,
           c.behaviour, COALESCE(k.offset_seconds, 0) AS clock_offset_seconds
    FROM sandbox_authorizations a JOIN sandbox_cards c ON c.token = a.card_token
    LEFT JOIN sandbox_clocks k ON k.installation_id = a.installation_id
    WHERE a.id = $1 AND a.installation_id = $2 AND a.livemode = $3
    FOR UPDATE OF a
"""
_SET_STATUS = """
    UPDATE sandbox_authorizations SET status = $2, decline_code = $3, updated_at = now() WHERE id = $1
"""
_SET_AMOUNT = "UPDATE sandbox_authorizations SET amount = $2, updated_at = now() WHERE id = $1"
_CAPTURE = """
    UPDATE sandbox_authorizations
    SET status = 'captured', amount_captured = $2, captured_at = $3, updated_at = now()
    WHERE id = $1
"""
_ADD_REFUND = """
    UPDATE sandbox_authorizations SET amount_refunded = amount_refunded + $2, updated_at = now()
    WHERE id = $1
"""
_SET_COST = """
    UPDATE sandbox_authorizations SET cost_amount = COALESCE(cost_amount, $2), updated_at = now()
    WHERE id = $1
    RETURNING cost_amount
"""


_DISPUTE_CARD_CAPTURES = """
    SELECT a.id, a.captured_at FROM sandbox_authorizations a JOIN sandbox_cards c ON c.token = a.card_token
    WHERE a.installation_id = $1 AND a.livemode = $2 AND c.behaviour = 'dispute' AND a.status = 'captured'
      AND a.captured_at <= $3 AND a.captured_at > $4
    ORDER BY a.captured_at
"""
_DISPUTE_RECORD = """
    SELECT response FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'dispute' AND succeeded
      AND response->>'id' = $3
"""
_DISPUTE_STEPS = """
    SELECT operation_type, request, response FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND succeeded
      AND operation_type IN ('dispute_evidence', 'dispute_acceptance') AND request->>'dispute_id' = $3
"""


async def _dispute_record(books: _Books, dispute_id: str) -> dict[str, Any]:
    found = await books.connection.fetchval(
        _DISPUTE_RECORD, books.tenant.installation_id, books.tenant.livemode, dispute_id
    )
    if found is None:  # another tenant's dispute looks exactly like an unknown one
        raise ProcessorRefused("no_such_dispute", f"No such dispute: {dispute_id}.")
    record: dict[str, Any] = _json(found)
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


def _network_dispute(answer: dict[str, Any]) -> NetworkDispute:
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


def _json(value: Any) -> Any:
    # SQLAlchemy's asyncpg adapter registers a JSON codec on its connections: jsonb arrives decoded
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def _batched_answer(key: str, response: dict[str, Any]) -> dict[str, Any]:
    error = response.get("error")
    if error is not None:
        return {
            "idempotency_key": key,
            "status": "refused",
            "code": error["code"],
            "message": error["message"],
        }
    return {"idempotency_key": key, "status": "paid", "id": response["id"]}


def _batched_replay(key: str, earlier: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """A transfer of a batch already answered under its own key: that answer again."""
    try:
        return _batched_answer(key, _replay(earlier, "transfer", request))
    except ProcessorRefused as refused:
        return _batched_answer(key, {"error": {"code": refused.code, "message": refused.message}})


def _batch_answers(response: dict[str, Any]) -> list[BatchedTransfer]:
    return [
        BatchedTransfer(
            idempotency_key=answer["idempotency_key"],
            status=answer["status"],
            processor_id=answer.get("id"),
            failure_code=answer.get("code"),
            failure_message=answer.get("message"),
        )
        for answer in response["transfers"]
    ]


def _replay(stored: Any, operation_type: str, request: dict[str, Any]) -> dict[str, Any]:
    if stored["operation_type"] != operation_type or _json(stored["request"]) != request:
        # a real processor refuses a key reused with other parameters; so does the sandbox
        raise ProcessorRefused("idempotency_key_reused", "The key was used with different parameters.")
    response: dict[str, Any] = _json(stored["response"])
    if not stored["succeeded"]:
        error = response["error"]
        raise ProcessorRefused(error["code"], error["message"])
    return response
