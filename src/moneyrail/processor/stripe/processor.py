"""The `Processor` on Stripe: one instance per Stripe key (an installation's environment)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

from moneyrail.config import Settings, get_settings
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import (
    AccountHolder,
    Authorization,
    AuthorizationChoice,
    BatchedTransfer,
    Capture,
    CardInput,
    CardRisk,
    ChargeAnswer,
    CostReport,
    EvidenceFile,
    NetworkDispute,
    NotSupported,
    OffSessionCharge,
    PayoutResult,
    ProcessorAuthorizationRecord,
    ProcessorRefused,
    ProcessorTransferRecord,
    ProcessorUnavailable,
    RefundResult,
    TokenizedAndAuthorized,
    TokenizedCard,
    TransferRequest,
    TransferResult,
    TransferReversalResult,
    authorize_as_asked,
)

from . import cards, charges, connect, disputes
from .cards import SavedCard
from .connect import ChargeIds, ConnectedAccount
from .connection import DEFAULT_API_BASE, DEFAULT_TIMEOUT_SECONDS, StripeConnection

CONCURRENT_CHARGES = 8  # off-session charges of one batch in flight at once
REMEMBERED_COUNTRIES = 10_000


class StripeProcessor:
    """Every call goes to Stripe (or a Stripe-compatible server at `api_base`) with the key given,
    carrying the operation's key as Stripe's `Idempotency-Key`; the client never retries by itself."""

    # Stripe has no batch transfer or charge: a batch is its single calls, made concurrently
    batches_calls = False

    def __init__(
        self,
        api_key: str,
        *,
        api_base: str = DEFAULT_API_BASE,
        files_base: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._connection = StripeConnection(
            api_key, api_base=api_base, files_base=files_base, timeout_seconds=timeout_seconds
        )
        self._charge_ids = ChargeIds()
        self._countries: dict[str, str] = {}  # card reference -> issuing country, as tokenized

    @classmethod
    def configured(cls, api_key: str, settings: Settings | None = None) -> StripeProcessor:
        """For the service: Stripe's address from its settings (`MONEYRAIL_STRIPE_API_BASE`)."""
        settings = settings or get_settings()
        return cls(api_key, api_base=settings.stripe_api_base)

    async def aclose(self) -> None:
        """Close the HTTP connections (one instance serves a key for the process's life, sharing them)."""
        await self._connection.aclose()

    # cards ------------------------------------------------------------------------------------------
    async def tokenize_card(self, tenant: Tenant, card: CardInput) -> TokenizedCard:
        """A Stripe.js token saved on a Stripe customer; NotSupported for typed digits."""
        saved = await cards.save_card(self._connection, tenant, card)
        if len(self._countries) >= REMEMBERED_COUNTRIES:
            del self._countries[next(iter(self._countries))]
        self._countries[saved.card.token] = saved.country
        return saved.card

    async def tokenize_and_authorize(
        self, tenant: Tenant, card: CardInput, choose: AuthorizationChoice
    ) -> TokenizedAndAuthorized:
        """Stripe has no single exchange for both: the two calls in turn."""
        tokenized = await self.tokenize_card(tenant, card)
        asked = await choose(tokenized)
        if asked is None:
            return TokenizedAndAuthorized(tokenized, None)
        try:
            authorization = await authorize_as_asked(
                self, tenant, card_token=tokenized.token, card_fingerprint=tokenized.fingerprint, asked=asked
            )
        except (ProcessorRefused, ProcessorUnavailable) as refused:
            return TokenizedAndAuthorized(tokenized, refused)
        return TokenizedAndAuthorized(tokenized, authorization)

    async def card_risk(self, tenant: Tenant, *, card_token: str) -> CardRisk:
        """Stripe scores risk (Radar) when it charges, not before: `normal`, with the card's issuing
        country."""
        country = self._countries.get(card_token)
        if country is None:
            country = await cards.card_country(self._connection, SavedCard.parse(card_token))
        return CardRisk(risk_level="normal", country=country)

    # authorizations ---------------------------------------------------------------------------------
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
        """A manual-capture payment intent, confirmed (0: a setup intent, the card check). Stripe
        compares a repeated key by every parameter, the card's too: a retry must name the same saved
        card, which a retried request does (its single-use token gives back the same card)."""
        return await charges.authorize(
            self._connection,
            tenant,
            idempotency_key=idempotency_key,
            card=SavedCard.parse(card_token),
            fingerprint=card_fingerprint,
            amount=amount,
            currency=currency,
            off_session=off_session,
            reference=reference,
        )

    async def authorize_and_capture(
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
    ) -> ChargeAnswer:
        """One call that authorizes and captures (Stripe's automatic capture): `authorize` then `capture`
        in one round trip. Not in the Protocol yet: the key must never have been used by `authorize`
        (Stripe would refuse a key reused with other parameters)."""
        authorization = await charges.authorize(
            self._connection,
            tenant,
            idempotency_key=idempotency_key,
            card=SavedCard.parse(card_token),
            fingerprint=card_fingerprint,
            amount=amount,
            currency=currency,
            off_session=off_session,
            reference=reference,
            capture_now=True,
        )
        if authorization.status != "authorized":
            return ChargeAnswer(authorization, None)
        return ChargeAnswer(authorization, Capture(authorization.id, authorization.amount))

    async def charge_off_session_many(
        self, tenant: Tenant, charges_asked: Sequence[OffSessionCharge]
    ) -> list[ChargeAnswer]:
        """Each charge as `authorize` then `capture` alone, under the same keys (so a charge retried
        alone replays), the charges run together. An outage of any raises once all are done: asked
        again, those Stripe answered replay."""
        gate = asyncio.Semaphore(CONCURRENT_CHARGES)

        async def one(charge: OffSessionCharge) -> ChargeAnswer:
            async with gate:
                return await self._charge_off_session(tenant, charge)

        answers = await asyncio.gather(*(one(charge) for charge in charges_asked), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        return [answer for answer in answers if isinstance(answer, ChargeAnswer)]

    async def _charge_off_session(self, tenant: Tenant, charge: OffSessionCharge) -> ChargeAnswer:
        try:
            authorization = await self.authorize(
                tenant,
                idempotency_key=charge.idempotency_key,
                card_token=charge.card_token,
                card_fingerprint=charge.card_fingerprint,
                amount=charge.amount,
                currency=charge.currency,
                off_session=True,
                reference=charge.reference,
            )
        except ProcessorUnavailable:
            raise
        except ProcessorRefused as refused:
            return ChargeAnswer(refused, None)
        if authorization.status != "authorized" or charge.capture_key is None:
            return ChargeAnswer(authorization, None)
        try:
            captured = await self.capture(
                tenant,
                idempotency_key=charge.capture_key(authorization.id),
                authorization_id=authorization.id,
                amount=authorization.amount,
            )
        except ProcessorUnavailable:
            raise
        except ProcessorRefused as refused:
            return ChargeAnswer(authorization, refused)
        return ChargeAnswer(authorization, captured)

    async def open_authorizations(
        self, *, created_after: datetime, created_before: datetime, limit: int
    ) -> list[ProcessorAuthorizationRecord]:
        return await charges.open_authorizations(
            self._connection, created_after=created_after, created_before=created_before, limit=limit
        )

    async def complete_authentication(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, approved: bool
    ) -> Authorization:
        return await charges.complete_authentication(
            self._connection,
            idempotency_key=idempotency_key,
            authorization_id=authorization_id,
            approved=approved,
        )

    async def capture(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Capture:
        return await charges.capture(
            self._connection,
            idempotency_key=idempotency_key,
            authorization_id=authorization_id,
            amount=amount,
        )

    async def cancel(self, tenant: Tenant, *, idempotency_key: str, authorization_id: str) -> Authorization:
        return await charges.cancel(
            self._connection, idempotency_key=idempotency_key, authorization_id=authorization_id
        )

    async def increment_authorization(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Authorization:
        return await charges.increment_authorization(
            self._connection,
            idempotency_key=idempotency_key,
            authorization_id=authorization_id,
            amount=amount,
        )

    async def refund(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> RefundResult:
        return await charges.refund(
            self._connection,
            idempotency_key=idempotency_key,
            authorization_id=authorization_id,
            amount=amount,
        )

    async def cost_report(
        self, tenant: Tenant, *, authorization_id: str, as_of: datetime | None = None
    ) -> CostReport | None:
        """Stripe's fee from the charge's balance transaction (`as_of` unused: Stripe's clock rules)."""
        return await charges.cost_report(self._connection, authorization_id)

    # Connect ----------------------------------------------------------------------------------------
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
    ) -> ConnectedAccount:
        return await connect.create_connected_account(
            self._connection,
            tenant,
            idempotency_key=idempotency_key,
            country=country,
            email=email,
            reference=reference,
            bank_account=bank_account,
            holder=holder,
        )

    async def update_connected_account(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        processor_account: str,
        country: str,
        bank_account: str | None = None,
        holder: AccountHolder | None = None,
    ) -> ConnectedAccount:
        return await connect.update_connected_account(
            self._connection,
            idempotency_key=idempotency_key,
            account_id=processor_account,
            country=country,
            bank_account=bank_account,
            holder=holder,
        )

    async def connected_account(self, tenant: Tenant, *, account_id: str) -> ConnectedAccount:
        return await connect.connected_account(self._connection, account_id)

    async def create_transfer(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        amount: int,
        currency: str,
        destination: str,
        source_authorization_id: str | None = None,
    ) -> TransferResult:
        return await connect.create_transfer(
            self._connection,
            tenant,
            self._charge_ids,
            idempotency_key=idempotency_key,
            amount=amount,
            currency=currency,
            destination=destination,
            source_authorization_id=source_authorization_id,
        )

    async def create_transfers(
        self, tenant: Tenant, *, idempotency_key: str, transfers: Sequence[TransferRequest]
    ) -> list[BatchedTransfer]:
        """No batch call on Stripe: each transfer under its own key (the batch's key is not sent)."""
        return await connect.create_transfers(self._connection, tenant, self._charge_ids, transfers)

    async def reverse_transfer(
        self, tenant: Tenant, *, idempotency_key: str, transfer_id: str, amount: int
    ) -> TransferReversalResult:
        return await connect.reverse_transfer(
            self._connection, tenant, idempotency_key=idempotency_key, transfer_id=transfer_id, amount=amount
        )

    async def create_payout(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        amount: int,
        currency: str,
        bank_account: str,
        connected_account: str | None = None,
    ) -> PayoutResult:
        return await connect.create_payout(
            self._connection,
            tenant,
            idempotency_key=idempotency_key,
            amount=amount,
            currency=currency,
            bank_account=bank_account,
            connected_account=connected_account,
        )

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
        return await connect.reverse_payout(
            self._connection,
            tenant,
            idempotency_key=idempotency_key,
            payout_id=payout_id,
            amount=amount,
            currency=currency,
            connected_account=connected_account,
        )

    async def list_transfers(self, tenant: Tenant) -> list[ProcessorTransferRecord]:
        return await connect.list_transfers(self._connection, tenant)

    # disputes ---------------------------------------------------------------------------------------
    async def dispute(self, tenant: Tenant, *, dispute_id: str) -> NetworkDispute:
        """A dispute Stripe reported (by webhook), as the network has it now."""
        return await disputes.dispute(self._connection, dispute_id)

    async def open_dispute(
        self, tenant: Tenant, *, authorization_id: str, amount: int, reason: str, as_of: datetime
    ) -> NetworkDispute:
        raise NotSupported(
            "Disputes are opened by the card network on Stripe and arrive by webhook; the sandbox "
            "simulator alone opens them on demand.",
            code="dispute_simulation_not_supported",
        )

    async def due_disputes(self, tenant: Tenant, *, as_of: datetime) -> list[NetworkDispute]:
        """None: Stripe reports the disputes it opens by webhook."""
        return []

    async def submit_dispute_evidence(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        dispute_id: str,
        evidence_text: str,
        as_of: datetime,
        evidence_files: Sequence[EvidenceFile] = (),
    ) -> None:
        await disputes.submit_evidence(
            self._connection,
            idempotency_key=idempotency_key,
            dispute_id=dispute_id,
            evidence_text=evidence_text,
            evidence_files=evidence_files,
        )

    async def accept_dispute(
        self, tenant: Tenant, *, idempotency_key: str, dispute_id: str, as_of: datetime
    ) -> None:
        await disputes.accept(self._connection, idempotency_key=idempotency_key, dispute_id=dispute_id)

    async def dispute_outcome(self, tenant: Tenant, *, dispute_id: str, as_of: datetime) -> str | None:
        return await disputes.outcome(self._connection, dispute_id)
