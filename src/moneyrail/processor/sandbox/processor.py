"""The `Processor` the sandbox plays: every call, in the simulator's own transactions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import get_settings
from moneyrail.db.raw import autocommit_connection, driver_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.processor import cards
from moneyrail.processor.interface import (
    Authorization,
    AuthorizationChoice,
    AuthorizationRequest,
    Capture,
    CardDetails,
    CardInput,
    CardNotAccepted,
    CardRisk,
    CardToken,
    ChargeAnswer,
    CostReport,
    NotSupported,
    OffSessionCharge,
    ProcessorAuthorizationRecord,
    ProcessorRefused,
    ProcessorUnavailable,
    RefundResult,
    TokenizedAndAuthorized,
    TokenizedCard,
)

from . import statements as sql
from .books import (
    AnsweredConcurrently,
    Books,
    dumps,
    fail_if_faulted,
    injected_refusal,
    injected_unavailable,
    json_value,
    open_books,
    sandbox_id,
)
from .charges import (
    authorization_answer,
    authorization_from,
    authorize_answer,
    capture_answer,
    capture_from,
    charge_at_once,
    charge_one,
    processing_cost,
)
from .dispute_calls import DisputeCalls
from .transfer_calls import TransferCalls

SANDBOX_CARD_COUNTRY = "US"

# Before any card's expiry: `checked_card_number` then checks all but the expiry.
NOT_YET_EXPIRED = datetime(1, 1, 1, tzinfo=UTC)

# A tokenized card's behaviour never changes (its row is never updated), so the simulator remembers the
# behaviours it wrote or read, without a lifetime: the risk read of a card just tokenized costs no round
# trip. Keyed by tenant too, so another tenant's token still looks unknown. Bounded: the oldest go first.
REMEMBERED_CARDS = 10_000
CardKey = tuple[str, str, bool]  # token, installation, livemode


class SandboxProcessor(TransferCalls, DisputeCalls):
    # every batch is one statement in the simulator's own books (interface.Processor.batches_calls)
    batches_calls = True

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        super().__init__(sessionmaker)
        self._behaviours: dict[CardKey, str] = {}

    def _remember_behaviour(self, key: CardKey, behaviour: str) -> None:
        if len(self._behaviours) >= REMEMBERED_CARDS:
            del self._behaviours[next(iter(self._behaviours))]
        self._behaviours[key] = behaviour

    # cards ------------------------------------------------------------------------------------------
    async def tokenize_card(self, tenant: Tenant, card: CardInput) -> TokenizedCard:
        card = _typed_digits(card)
        # One statement, committing alone: the fault taken (used up even though the call "fails"), the
        # tenant's clock read, and the card saved unless the fault or the card's checks refuse it. Only
        # the expiry needs that clock, so the statement compares it; the refusal is raised after, in
        # the order of the checks, by the same checks on the same time.
        checked = _card_checked_now(tenant, card)
        now = utcnow()
        async with autocommit_connection(self._sessionmaker) as connection:
            row = await connection.fetchrow(sql.TOKENIZE, *_tokenize_parameters(tenant, card, checked, now))
        return self._saved_card(tenant, card, row, now, checked)

    def _saved_card(
        self,
        tenant: Tenant,
        card: CardDetails,
        row: Any,
        now: datetime,
        checked: CheckedCard | None,
    ) -> TokenizedCard:
        """The tokenizing statement's answer: the fault it took or the card's refusal raised, or the card."""
        if row["mode"] == "transient":
            raise injected_unavailable("tokenize")
        if row["mode"] is not None:
            raise injected_refusal("tokenize")
        digits = cards.checked_card_number(card, now + timedelta(seconds=row["offset_seconds"]))
        cards.sandbox_behaviour(digits)
        if checked is None or not row["saved"]:
            raise RuntimeError("the card's checks and the tokenizing statement disagree")
        self._remember_behaviour(
            (checked.card.token, tenant.installation_id, tenant.livemode), checked.behaviour
        )
        return checked.card

    async def tokenize_and_authorize(
        self, tenant: Tenant, card: CardInput, choose: AuthorizationChoice
    ) -> TokenizedAndAuthorized:
        """In the usual case one statement committing alone: `TOKENIZE` and `AUTHORIZE_AT_ONCE`'s
        authorization of the card it saves. The card is made and checked in Python first, so `choose`
        (a risk screen asking `card_risk`) answers before that statement; its behaviour is remembered
        meanwhile and forgotten if the card is then not saved. Otherwise (a card refused, a fault armed
        for either call, a key asked before) each call is answered as when made alone."""
        card = _typed_digits(card)
        checked = _card_checked_now(tenant, card)
        if checked is None:  # refused: `tokenize_card` takes the fault and raises the refusal
            await self.tokenize_card(tenant, card)
            raise RuntimeError("the card's checks and the tokenizing statement disagree")
        tokenized = checked.card
        key = (tokenized.token, tenant.installation_id, tenant.livemode)
        self._remember_behaviour(key, checked.behaviour)
        try:
            asked = await choose(tokenized)
            now = utcnow()
            tokenizing = _tokenize_parameters(tenant, card, checked, now)
            if asked is None or not _answerable_at_once(asked.amount):
                async with autocommit_connection(self._sessionmaker) as connection:
                    row = await connection.fetchrow(sql.TOKENIZE, *tokenizing)
                saved = self._saved_card(tenant, card, row, now, checked)
                if asked is None:
                    return TokenizedAndAuthorized(saved, None)
                return TokenizedAndAuthorized(saved, await self._authorized(tenant, saved, asked))
            request = _authorize_request(tokenized.fingerprint, asked)
            outcomes = _outcomes(asked.amount, asked.off_session, saves_card=asked.saves_card)
            async with autocommit_connection(self._sessionmaker) as connection:
                row = await connection.fetchrow(
                    sql.TOKENIZE_AND_AUTHORIZE,
                    *tokenizing,
                    asked.idempotency_key,
                    sandbox_id("sbx_auth"),
                    asked.amount,
                    asked.currency,
                    asked.reference,
                    dumps(outcomes),
                    dumps(request),
                )
            saved = self._saved_card(tenant, card, row, now, checked)
        except BaseException:
            self._behaviours.pop(key, None)  # never saved (a saved card raises nothing here)
            raise
        if row["response"] is not None:
            return TokenizedAndAuthorized(saved, authorization_from(dict(json_value(row["response"]))))
        # not the usual authorization: answered as `authorize` answers it then
        return TokenizedAndAuthorized(saved, await self._authorized(tenant, saved, asked, at_once=False))

    async def _authorized(
        self, tenant: Tenant, card: TokenizedCard, asked: AuthorizationRequest, *, at_once: bool = True
    ) -> Authorization | ProcessorRefused | ProcessorUnavailable:
        """`authorize` of a card just saved (the charge that saves it when `asked.saves_card`); its
        refusal or fault answered, not raised."""
        try:
            return await self._authorize(tenant, card.token, card.fingerprint, asked, at_once=at_once)
        except (ProcessorRefused, ProcessorUnavailable) as refused:
            return refused

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
        asked = AuthorizationRequest(
            idempotency_key=idempotency_key,
            amount=amount,
            currency=currency,
            off_session=off_session,
            reference=reference,
        )
        return await self._authorize(tenant, card_token, card_fingerprint, asked)

    async def _authorize(
        self,
        tenant: Tenant,
        card_token: str,
        card_fingerprint: str,
        asked: AuthorizationRequest,
        *,
        at_once: bool = True,
    ) -> Authorization:
        request = _authorize_request(card_fingerprint, asked)
        if at_once and _answerable_at_once(asked.amount):
            answered = await self._authorize_at_once(
                tenant, asked.idempotency_key, card_token, request, saves_card=asked.saves_card
            )
            if answered is not None:
                return authorization_from(answered)
        answer = authorize_answer(
            tenant,
            card_token,
            asked.amount,
            asked.currency,
            asked.reference,
            asked.off_session,
            saves_card=asked.saves_card,
        )
        return authorization_from(
            await self._call(tenant, "authorize", asked.idempotency_key, request, answer)
        )

    async def _authorize_at_once(
        self,
        tenant: Tenant,
        idempotency_key: str,
        card_token: str,
        request: dict[str, Any],
        *,
        saves_card: bool,
    ) -> dict[str, Any] | None:
        """The usual authorization (`authorize_answer` under `keyed`) as one statement that commits
        alone: the call recorded with its authorization, as `_call` would. None, with nothing written,
        when it is not the usual one (a key asked before, a fault armed, a card unknown to this tenant,
        a concurrent call with the key): `_call` then answers it."""
        amount, off_session = request["amount"], request["off_session"]
        # the outcome of each behaviour for this amount, so the statement picks the card's own
        outcomes = _outcomes(amount, off_session, saves_card=saves_card)
        async with autocommit_connection(self._sessionmaker) as connection:
            response = await connection.fetchval(
                sql.AUTHORIZE_AT_ONCE,
                tenant.installation_id,
                tenant.livemode,
                idempotency_key,
                card_token,
                sandbox_id("sbx_auth"),
                amount,
                request["currency"],
                request["reference"],
                dumps(outcomes),
                dumps(request),
            )
        return None if response is None else dict(json_value(response))

    async def complete_authentication(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, approved: bool
    ) -> Authorization:
        request = {"authorization_id": authorization_id, "approved": approved}

        async def answer(books: Books) -> dict[str, Any]:
            row = await books.locked_for("complete_authentication", authorization_id)
            status, decline_code = ("authorized", None) if approved else ("declined", "authentication_failed")
            await books.connection.execute(sql.SET_STATUS, authorization_id, status, decline_code)
            return authorization_answer(
                authorization_id, status, row["amount"], row["currency"], decline_code
            )

        answered = await self._call(tenant, "complete_authentication", idempotency_key, request, answer)
        return authorization_from(answered)

    async def capture(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Capture:
        request = {"authorization_id": authorization_id, "amount": amount}

        if amount >= 1:
            async with autocommit_connection(self._sessionmaker) as connection:
                # the usual capture (`capture_answer` under `keyed`) in one statement that commits alone;
                # no row when it is not the usual one, and nothing written: `_call` answers it
                response = await connection.fetchval(
                    sql.CAPTURE_AT_ONCE,
                    tenant.installation_id,
                    tenant.livemode,
                    idempotency_key,
                    authorization_id,
                    amount,
                    dumps(request),
                    utcnow(),
                )
            if response is not None:
                return capture_from(json_value(response))
        answer = capture_answer(tenant, authorization_id, amount)
        return capture_from(await self._call(tenant, "capture", idempotency_key, request, answer))

    async def charge_off_session_many(
        self, tenant: Tenant, charges: Sequence[OffSessionCharge]
    ) -> list[ChargeAnswer]:
        """Every charge's authorize and capture calls in one transaction of the simulator's books, each
        call under its own key and recorded as alone (`keyed`), so a charge retried alone replays."""
        answers: list[ChargeAnswer] = []
        fault: ProcessorUnavailable | None = None
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            at_once = await charge_at_once(books, tenant, charges)
            if at_once is not None:
                await uow.commit()
                return at_once
            try:
                for charge in charges:
                    answers.append(await charge_one(books, tenant, charge))
            except ProcessorUnavailable as unavailable:  # an injected fault, used up: keep what came before
                fault = unavailable
            except AnsweredConcurrently:
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

        async def answer(books: Books) -> dict[str, Any]:
            row = await books.locked_for("cancel", authorization_id)
            await books.connection.execute(sql.SET_STATUS, authorization_id, "canceled", None)
            return authorization_answer(authorization_id, "canceled", row["amount"], row["currency"], None)

        return authorization_from(await self._call(tenant, "cancel", idempotency_key, request, answer))

    async def increment_authorization(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Authorization:
        request = {"authorization_id": authorization_id, "amount": amount}

        async def answer(books: Books) -> dict[str, Any]:
            row = await books.locked_for("increment_authorization", authorization_id)
            if amount <= row["amount"]:
                raise ProcessorRefused(
                    "amount_invalid", f"The new total must be more than the {row['amount']} held."
                )
            decline_code = cards.charge_decline_code(row["behaviour"], amount)
            if decline_code is not None:  # the old hold stays: the answer says how much is still held
                return authorization_answer(
                    authorization_id, "declined", row["amount"], row["currency"], decline_code
                )
            await books.connection.execute(sql.SET_AMOUNT, authorization_id, amount)
            return authorization_answer(authorization_id, "authorized", amount, row["currency"], None)

        answered = await self._call(tenant, "increment_authorization", idempotency_key, request, answer)
        return authorization_from(answered)

    async def refund(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> RefundResult:
        request = {"authorization_id": authorization_id, "amount": amount}

        async def answer(books: Books) -> dict[str, Any]:
            row = await books.locked_for("refund", authorization_id)
            if amount < 1:
                raise ProcessorRefused("amount_invalid", "The amount to refund must be at least 1.")
            refundable = row["amount_captured"] - row["amount_refunded"]
            if amount > refundable:
                raise ProcessorRefused("amount_too_large", f"At most {refundable} can still be refunded.")
            await books.connection.execute(sql.ADD_REFUND, authorization_id, amount)
            return {"id": sandbox_id("sbx_re"), "authorization_id": authorization_id, "amount": amount}

        answered = await self._call(tenant, "refund", idempotency_key, request, answer)
        return RefundResult(answered["id"], answered["authorization_id"], answered["amount"])

    async def cost_report(
        self, tenant: Tenant, *, authorization_id: str, as_of: datetime | None = None
    ) -> CostReport | None:
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            await fail_if_faulted(uow, books, "cost_report")
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
                sql.SET_COST, authorization_id, processing_cost(row["amount_captured"])
            )
            await uow.commit()
        return CostReport(authorization_id, int(cost_amount), row["currency"])

    async def open_authorizations(
        self, *, created_after: datetime, created_before: datetime, limit: int
    ) -> list[ProcessorAuthorizationRecord]:
        async with UnitOfWork(self._sessionmaker) as uow:
            connection = await driver_connection(uow.session)
            rows = await connection.fetch(sql.OPEN_AUTHORIZATIONS, created_after, created_before, limit)
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

    # risk ------------------------------------------------------------------------------------------
    async def card_risk(self, tenant: Tenant, *, card_token: str) -> CardRisk:
        """The risk card (4100 0000 0000 0019) is `elevated`; all are issued in SANDBOX_CARD_COUNTRY."""
        key = (card_token, tenant.installation_id, tenant.livemode)
        behaviour = self._behaviours.get(key)
        if behaviour is None:
            async with autocommit_connection(self._sessionmaker) as connection:  # a read: one statement
                behaviour = await connection.fetchval(sql.CARD_BEHAVIOUR, *key)
            if behaviour is None:
                raise ProcessorRefused("no_such_card", "No such card: the token is unknown.")
            self._remember_behaviour(key, behaviour)
        level = "elevated" if behaviour == cards.RISK_REVIEW else "normal"
        return CardRisk(risk_level=level, country=SANDBOX_CARD_COUNTRY)


def _typed_digits(card: CardInput) -> CardDetails:
    """The simulator reads typed digits only: a processor's token belongs to a real processor."""
    if isinstance(card, CardToken):
        raise NotSupported(
            "The sandbox simulator takes card numbers, not a processor's card token: this environment is "
            "not set to a real processor.",
            code="card_token_not_supported",
        )
    return card


class CheckedCard(NamedTuple):
    """A card its checks accept, as the network would save it, and its sandbox behaviour."""

    card: TokenizedCard
    behaviour: str


def _card_checked_now(tenant: Tenant, card: CardDetails) -> CheckedCard | None:
    """The card as the network would save it, by every check but the expiry on the tenant's clock (the
    statement compares that); None when a check refuses it."""
    if tenant.livemode:
        # the simulator must never make a live payment look real: live needs a real network adapter
        raise CardNotAccepted(
            "live_mode_not_connected",
            "No card network is connected to live mode yet: live cards cannot be charged.",
        )
    try:
        digits = cards.checked_card_number(card, NOT_YET_EXPIRED)
        behaviour = cards.sandbox_behaviour(digits)
    except CardNotAccepted:
        return None  # raised once the fault is taken
    tokenized = TokenizedCard(
        token=sandbox_id("sbx_card"),
        brand=cards.card_brand(digits),
        last4=digits[-4:],
        exp_month=card.exp_month,
        exp_year=cards.full_expiry_year(card.exp_year),
        fingerprint=cards.card_fingerprint(tenant.installation_id, digits),
    )
    return CheckedCard(tokenized, behaviour)


def _tokenize_parameters(
    tenant: Tenant, card: CardDetails, checked: CheckedCard | None, now: datetime
) -> tuple[Any, ...]:
    """`TOKENIZE`'s parameters; the card's NULL where its checks refused it (nothing is saved)."""
    tokenized = checked.card if checked is not None else None
    return (
        tenant.installation_id,
        tenant.livemode,
        tokenized.token if tokenized is not None else None,
        checked.behaviour if checked is not None else None,
        tokenized.brand if tokenized is not None else None,
        tokenized.last4 if tokenized is not None else None,
        card.exp_month,
        tokenized.exp_year if tokenized is not None else None,
        tokenized.fingerprint if tokenized is not None else None,
        cards.expiry_end(card) if tokenized is not None else None,
        now,
    )


def _answerable_at_once(amount: int) -> bool:
    """Whether the statements that answer an authorization at once may: a negative amount is refused,
    by `authorize_answer` under `_call`'s record of the call, as any refusal is."""
    return amount >= 0


def _outcomes(amount: int, off_session: bool, *, saves_card: bool) -> dict[str, tuple[str, str | None]]:
    """Each behaviour's [status, decline code] for this authorization, for a statement to pick from."""
    return {
        behaviour: cards.authorization_outcome(
            behaviour, amount, off_session=off_session, saves_card=saves_card
        )
        for behaviour in cards.BEHAVIOURS
    }


def _authorize_request(card_fingerprint: str, asked: AuthorizationRequest) -> dict[str, Any]:
    # compared on a repeated key: the card by its fingerprint, since a retried confirmation tokenizes
    # the same card again under a new token and must get the first answer, not a second charge (so
    # whether it saves the card is not compared either: the retry gets the first answer)
    return {
        "card": card_fingerprint,
        "amount": asked.amount,
        "currency": asked.currency,
        "off_session": asked.off_session,
        "reference": asked.reference,
    }
