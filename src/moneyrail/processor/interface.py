"""What moneyrail asks of a payment processor. Every call carries an idempotency key derived from the
operation (`"<operation id>:<step>"`), so a retried or re-driven attempt never moves money twice."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Protocol

from moneyrail.engine.outcomes import PermanentFailure, TransientFailure
from moneyrail.kit.tenant import Tenant

# The kinds of call a fault can be injected into (CONVENTIONS.md §11 `operation_type`).
PROCESSOR_OPERATION_TYPES = (
    "tokenize",
    "authorize",
    "complete_authentication",
    "capture",
    "cancel",
    "increment_authorization",
    "refund",
    "transfer",
    "transfer_reversal",
    "payout",
    "payout_reversal",
    "cost_report",
)


class ProcessorUnavailable(TransientFailure):
    """The processor could not be reached or answered with a fault: try again later."""

    code = "processor_unavailable"


class ProcessorRefused(PermanentFailure):
    """The processor refused the call for good (a closed account, a decline)."""


class NotSupported(ProcessorRefused):
    """This processor does not take this input or call, for good: a raw card number where only the
    processor's own fields may collect cards (Stripe), a provider token on the simulator, a call only the
    simulator's own timeline makes (opening a dispute)."""

    def __init__(self, message: str, code: str = "not_supported") -> None:
        super().__init__(code, message)


class CardNotAccepted(ProcessorRefused):
    """The network will not take this card at all (not a sandbox card in the sandbox, an expired card).

    `decline_code` says why, as a card decline does (`test_mode_live_card`, `expired_card`).
    """

    def __init__(self, decline_code: str, message: str) -> None:
        super().__init__("card_declined", message)
        self.decline_code = decline_code


def operation_key(operation_id: str, step: str) -> str:
    return f"{operation_id}:{step}"


@dataclass(frozen=True)
class ProcessorAccount:
    """A connected account as the processor knows it: `processor_id` is what its transfers name as their
    destination and its payouts are made as (Stripe's `acct_…`; on the simulator, moneyrail's own id)."""

    processor_id: str


@dataclass(frozen=True)
class AccountHolder:
    """The person a connected account pays, as the hosted onboarding page collected them: what a
    processor that keeps accounts (Stripe's `individual`, `tos_acceptance`) needs to let it be paid out."""

    first_name: str
    last_name: str
    born: date
    terms_accepted_at: datetime
    terms_accepted_from: str | None  # the IP address the terms were accepted from


@dataclass(frozen=True)
class TransferResult:
    processor_id: str
    amount: int
    currency: str
    destination: str


@dataclass(frozen=True)
class TransferRequest:
    """One transfer of a batch, with its own key: a transfer already answered under that key (by an
    earlier batch or a single call) is answered the same again, never made twice.

    `source_authorization_id`: the captured authorization the money comes from, as `create_transfer`'s."""

    idempotency_key: str
    amount: int
    currency: str
    destination: str
    source_authorization_id: str | None = None


@dataclass(frozen=True)
class BatchedTransfer:
    """One transfer of a batch as the processor answered it: `paid` with its processor id, or `refused`
    with the processor's code and message."""

    idempotency_key: str
    status: str  # paid | refused
    processor_id: str | None = None
    failure_code: str | None = None
    failure_message: str | None = None


@dataclass(frozen=True)
class TransferReversalResult:
    processor_id: str
    transfer_id: str
    amount: int


@dataclass(frozen=True)
class ProcessorTransferRecord:
    """A transfer as the processor's own books have it (for reconciliation)."""

    processor_id: str
    amount: int
    currency: str
    destination: str
    status: str  # paid | reversed | failed
    amount_reversed: int


@dataclass(frozen=True)
class PayoutResult:
    processor_id: str
    amount: int
    currency: str
    status: str


@dataclass(frozen=True)
class CardRisk:
    """What the network tells about a card before it is charged: its risk level (`normal`, `elevated`,
    `highest`) and the country that issued it (ISO 3166-1 alpha-2)."""

    risk_level: str
    country: str


@dataclass(frozen=True)
class NetworkDispute:
    """A dispute the card network opened on a captured payment: it has taken `amount` back from the
    merchant and charges `fee_amount` for handling it; evidence is accepted until `evidence_due_by`."""

    id: str
    authorization_id: str
    amount: int
    currency: str
    reason: str
    fee_amount: int
    opened_at: datetime
    evidence_due_by: datetime


@dataclass(frozen=True)
class CardDetails:
    """What a payer typed. It goes to the processor and nowhere else: never stored, never logged."""

    number: str
    exp_month: int
    exp_year: int
    cvc: str

    def __repr__(self) -> str:  # a stray log line must not carry the number
        return f"CardDetails(last4={self.number[-4:]!r}, exp={self.exp_month}/{self.exp_year})"


@dataclass(frozen=True)
class CardToken:
    """A card the processor's own fields collected in the payer's browser (Stripe.js): the processor's
    single-use token (`tok_...` from createToken, `pm_...` from createPaymentMethod). moneyrail never sees
    the number. The simulator refuses it (NotSupported); a real processor refuses CardDetails."""

    token: str


# What a payer's card arrives as: typed digits (the sandbox simulator only, CONVENTIONS.md §6) or a
# processor's token (every real processor).
CardInput = CardDetails | CardToken


@dataclass(frozen=True)
class EvidenceFile:
    """A file of dispute evidence, sent to the processor with the evidence (a real network keeps it):
    `field` is the evidence field it answers (`receipt`, `customer_communication`,
    `shipping_documentation`, `refund_policy`, `uncategorized_file`: Stripe's and moneyrail's names)."""

    field: str
    filename: str
    content: bytes
    content_type: str

    def __repr__(self) -> str:
        return f"EvidenceFile({self.field!r}, {self.filename!r}, {len(self.content)} bytes)"


@dataclass(frozen=True)
class TokenizedCard:
    token: str  # the processor's reference; moneyrail stores it and never shows it
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    fingerprint: str  # the same card number gives the same fingerprint within an installation


@dataclass(frozen=True)
class Authorization:
    """The network's answer to an authorization (or to the bank authentication that followed one).

    status: `authorized` (amount held), `requires_action` (the payer must authenticate with the bank
    at `action_url` first), `declined` (with `decline_code`), `canceled`.

    `client_secret` (Stripe, `requires_action`): what the processor's own script needs in the payer's
    browser to run the bank's authentication there (Stripe.js `handleNextAction`) when the network gives
    no `action_url`. A credential of that one payment: never logged, never stored in an answer.
    """

    id: str
    status: str
    amount: int
    currency: str
    decline_code: str | None = None
    action_url: str | None = None
    client_secret: str | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class AuthorizationRequest:
    """`authorize`'s arguments but the card's, for `tokenize_and_authorize`. `saves_card`: the card
    just tokenized is kept for later charges (Stripe's `setup_future_usage`): this is the charge made
    while saving it, which a card that declines every later charge (sandbox 0341) accepts."""

    idempotency_key: str
    amount: int
    currency: str
    off_session: bool
    reference: str
    saves_card: bool = False


# What the caller asks once the card is tokenized (it may ask `card_risk` about it first): the
# authorization, or None for none (a risk rule refuses the card).
AuthorizationChoice = Callable[[TokenizedCard], Awaitable[AuthorizationRequest | None]]


@dataclass(frozen=True)
class TokenizedAndAuthorized:
    """`tokenize_and_authorize`'s answer: the card, and what `authorize` answered or raised (None: not
    asked), so that a refusal of the authorization is not taken for one of the tokenizing."""

    card: TokenizedCard
    authorization: Authorization | ProcessorRefused | ProcessorUnavailable | None


@dataclass(frozen=True)
class Capture:
    authorization_id: str
    amount_captured: int
    # when the network captured, on the tenant's clock (the sandbox's); None when it did not say (an
    # answer recorded before it said): the caller takes its own clock. Not part of what the answer is.
    captured_at: datetime | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RefundResult:
    processor_id: str
    authorization_id: str
    amount: int


@dataclass(frozen=True)
class ProcessorAuthorizationRecord:
    """An authorization as the processor's own books have it, with what it was made for (`reference`,
    the payment's id): what the orphan sweep compares with the payments that should own it."""

    id: str
    installation_id: str
    livemode: bool
    reference: str | None
    status: str  # authorized | requires_action | captured
    amount: int
    amount_captured: int
    amount_refunded: int
    currency: str
    created_at: datetime


@dataclass(frozen=True)
class CostReport:
    """The real cost of processing a captured payment, known some days after capture."""

    authorization_id: str
    cost_amount: int
    currency: str


@dataclass(frozen=True)
class OffSessionCharge:
    """One charge of `charge_off_session_many`: `authorize`'s arguments (off-session), and the key its
    capture takes once the authorization's id is known (None: authorize only, capture later)."""

    idempotency_key: str
    card_token: str
    card_fingerprint: str
    amount: int
    currency: str
    reference: str
    capture_key: Callable[[str], str] | None


@dataclass(frozen=True)
class ChargeAnswer:
    """What `authorize` then `capture` would have answered (or refused) for one charge."""

    authorization: Authorization | ProcessorRefused
    capture: Capture | ProcessorRefused | None


class Processor(Protocol):
    """What moneyrail asks of a card network and its banks.

    Every id in the answers (`Authorization.id`, `processor_id`, ...) is the processor's own: callers
    keep it in their own rows to ask about the object again and never put it in an API answer.
    """

    @property
    def batches_calls(self) -> bool:
        """Whether `create_transfers` and `charge_off_session_many` are one exchange with the network
        (the sandbox: one statement), so operations that make transfers or charges share a message and
        its one call. False where they are the single calls made concurrently (Stripe): each operation
        then runs alone, its own calls concurrent."""
        ...

    async def tokenize_card(self, tenant: Tenant, card: CardInput) -> TokenizedCard:
        """Raises CardNotAccepted for a card the network will not take, NotSupported for a kind of
        input this processor never takes (raw digits on a real processor, a token on the simulator)."""
        ...

    async def tokenize_and_authorize(
        self, tenant: Tenant, card: CardInput, choose: AuthorizationChoice
    ) -> TokenizedAndAuthorized:
        """`tokenize_card`, then `authorize` the new card as `choose` asks, with the same answers,
        refusals and faults as those two calls made in turn, in one exchange where the network allows
        (the sandbox: one statement). Tokenizing raises as `tokenize_card`; `choose` is awaited once the
        card is known and before anything is authorized; the authorization's refusal or outage is
        answered, not raised. A network without such an exchange calls the two in turn. The one
        difference: an authorization asked with `saves_card` is the charge that saves the card, which a
        card accepting no later charge (sandbox 0341) still accepts; `authorize` is always a later one."""
        ...

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
        """Hold `amount` on the card. The request is compared on a repeated key by the card's
        fingerprint, not its token: a retry that tokenized the same card again replays the first answer.
        `reference` (the payment's id) is kept with the authorization, as a real network's metadata."""
        ...

    async def charge_off_session_many(
        self, tenant: Tenant, charges: Sequence[OffSessionCharge]
    ) -> list[ChargeAnswer]:
        """Several off-session charges in one exchange, each under its own keys and answered exactly
        as `authorize` then `capture` would answer it alone (a retried charge replays its answers).
        ProcessorUnavailable: the exchange stopped there; what it answered before stands and replays."""
        ...

    async def open_authorizations(
        self, *, created_after: datetime, created_before: datetime, limit: int
    ) -> list[ProcessorAuthorizationRecord]:
        """Authorizations created in (created_after, created_before], oldest first, that still hold or
        took money: authorized, awaiting authentication, or captured and not wholly refunded."""
        ...

    async def complete_authentication(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, approved: bool
    ) -> Authorization:
        """The payer finished (approved) or abandoned (not approved) the bank's authentication."""
        ...

    async def capture(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Capture:
        """Capture `amount` (at most the authorized amount); the rest of the hold is released."""
        ...

    async def cancel(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str
    ) -> Authorization: ...

    async def increment_authorization(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Authorization:
        """Raise the hold to `amount` (the new total); `declined` leaves the old hold in place."""
        ...

    async def refund(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> RefundResult: ...

    async def cost_report(
        self, tenant: Tenant, *, authorization_id: str, as_of: datetime | None = None
    ) -> CostReport | None:
        """The payment's real processing cost, or None while the network has not reported it yet.

        `as_of` is the tenant's present as the caller sees it (a sandbox clock just advanced in the
        caller's transaction); a live network answers by its own clock.
        """
        ...

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
        """The processor's own account for one of moneyrail's connected accounts (`reference`: its id),
        able to receive transfers; `bank_account` (when known) is where its payouts go, `holder` (when
        onboarded) who it pays. The simulator keeps none of its own: it answers moneyrail's id as the
        account's."""
        ...

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
        """What moneyrail learnt of an account after it was made at the processor: the bank account its
        payouts go to (replacing the default one) and who it pays. Nothing on the simulator."""
        ...

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
        """`source_authorization_id`: the captured authorization whose money this transfer passes on
        (Stripe: the transfer's `source_transaction`, so it waits for that charge's funds rather than
        drawing on the available balance); the simulator does not need it."""
        ...

    async def create_transfers(
        self, tenant: Tenant, *, idempotency_key: str, transfers: Sequence[TransferRequest]
    ) -> list[BatchedTransfer]:
        """Several transfers in one call under one key, answered in `transfers`' order. A fault concerns
        the call as a whole: ProcessorUnavailable means nothing was made (ask again with the same key);
        a repeated key answers what the first call answered."""
        ...

    async def reverse_transfer(
        self, tenant: Tenant, *, idempotency_key: str, transfer_id: str, amount: int
    ) -> TransferReversalResult:
        """Take `amount` back from a transfer (at most what is left of it)."""
        ...

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
        """Pay `amount` out to `bank_account` (Stripe: an external account id, `""` for the account's
        default). `connected_account`: the connected account whose balance pays (Stripe: the call is
        made as that account, `Stripe-Account`); None for the installation's own balance."""
        ...

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
        """Take a paid payout's money back from the bank account it went to (a new processor payout).
        `connected_account` as the payout's."""
        ...

    async def list_transfers(self, tenant: Tenant) -> list[ProcessorTransferRecord]:
        """Every transfer the processor made for this tenant, as its own records say."""
        ...

    async def card_risk(self, tenant: Tenant, *, card_token: str) -> CardRisk: ...

    # disputes -------------------------------------------------------------------------------------
    async def open_dispute(
        self, tenant: Tenant, *, authorization_id: str, amount: int, reason: str, as_of: datetime
    ) -> NetworkDispute:
        """Sandbox only: the network opens a dispute on a captured authorization now (one per payment)."""
        ...

    async def due_disputes(self, tenant: Tenant, *, as_of: datetime) -> list[NetworkDispute]:
        """Disputes the network opened by itself by `as_of` (sandbox: the dispute card, some hours after
        capture); the same ones again on every call, so a caller that lost an answer finds it again."""
        ...

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
        """Submit the evidence (final). The files go with it where the network keeps files (Stripe);
        the simulator decides on the text alone."""
        ...

    async def accept_dispute(
        self, tenant: Tenant, *, idempotency_key: str, dispute_id: str, as_of: datetime
    ) -> None:
        """The merchant accepts the loss: the network closes the dispute against it."""
        ...

    async def dispute_outcome(self, tenant: Tenant, *, dispute_id: str, as_of: datetime) -> str | None:
        """`won` or `lost` once the network decided by `as_of`, else None."""
        ...


async def authorize_as_asked(
    processor: Processor,
    tenant: Tenant,
    *,
    card_token: str,
    card_fingerprint: str,
    asked: AuthorizationRequest,
) -> Authorization:
    """`processor.authorize` of a card with the arguments an `AuthorizationRequest` holds."""
    return await processor.authorize(
        tenant,
        idempotency_key=asked.idempotency_key,
        card_token=card_token,
        card_fingerprint=card_fingerprint,
        amount=asked.amount,
        currency=asked.currency,
        off_session=asked.off_session,
        reference=asked.reference,
    )
