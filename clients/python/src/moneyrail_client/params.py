# Generated from moneyrail's /openapi.json by clients/python/generate.py: do not edit.

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict


class AccountRequirementsOut(TypedDict):
    currently_due: list[str]
    eventually_due: list[str]
    past_due: list[str]
    disabled_reason: str | None
    object: NotRequired[Literal["connected_account_requirements"]]
    connected_account: str


class AccountSettingsOut(TypedDict):
    checkout_enabled: bool
    recurring_enabled: bool
    commission_basis_points: int
    commission_fixed_amount: int


class AllocationCreate(TypedDict, closed=True):
    recipient: str
    amount: int
    role: NotRequired[Literal["merchant", "developer", "courier", "driver", "other"] | None]
    metadata: NotRequired[dict[str, str]]


class AllocationGroupCommit(TypedDict, closed=True):
    pass


class AllocationGroupCreate(TypedDict, closed=True):
    payment_intent: str
    amount: int
    metadata: NotRequired[dict[str, str]]


class AllocationIn(TypedDict, closed=True):
    recipient: str
    role: str
    amount: NotRequired[int | None]
    basis_points: NotRequired[int | None]
    metadata: NotRequired[dict[str, str]]


class AllocationOut(TypedDict):
    id: str
    object: NotRequired[Literal["allocation"]]
    recipient: str
    role: str | None
    gross_amount: int
    commission: int
    amount: int
    transfer: str | None
    metadata: dict[str, str]


class ApiBaseOut(TypedDict):
    object: NotRequired[Literal["api"]]
    api: str
    version: str
    livemode: bool


class BalanceAmount(TypedDict):
    amount: int
    currency: str


class BalanceOut(TypedDict):
    object: NotRequired[Literal["balance"]]
    livemode: bool
    available: list[BalanceAmount]
    pending: list[BalanceAmount]
    fees_outstanding: list[BalanceAmount]


class BusinessProfile(TypedDict):
    name: str | None
    url: str | None
    support_email: str | None


class Capabilities(TypedDict):
    payments: Literal["active", "pending", "inactive"]
    transfers: Literal["active", "pending", "inactive"]
    payouts: Literal["active", "pending", "inactive"]
    refunds: Literal["active", "pending", "inactive"]


class CapabilitiesOut(TypedDict):
    transfers: Literal["active", "pending", "inactive"]
    payouts: Literal["active", "pending", "inactive"]


class CardIn(TypedDict, closed=True):
    number: str
    exp_month: int
    exp_year: int
    cvc: str


class CardOut(TypedDict):
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    fingerprint: str


class ChangeCancel(TypedDict, closed=True):
    pass


class ChangeCreate(TypedDict, closed=True):
    price: NotRequired[str | None]
    quantity: NotRequired[int | None]
    expected_version: int
    effective: Literal["immediate", "next_cycle"]


class CheckoutSessionCreate(TypedDict, closed=True):
    payment_intent: NotRequired[str | None]
    subscription: NotRequired[str | None]
    change: NotRequired[str | None]
    invoice: NotRequired[str | None]
    title: str
    success_url: str
    cancel_url: str


class CheckoutSessionExpire(TypedDict, closed=True):
    pass


class CheckoutSessionOut(TypedDict):
    id: str
    object: NotRequired[Literal["checkout_session"]]
    livemode: bool
    created: int
    payment_intent: str | None
    subscription: str | None
    change: str | None
    invoice: str | None
    title: str
    success_url: str
    cancel_url: str
    status: Literal["open", "complete", "expired"]
    expires_at: int
    checkout_url: str | None


class ClockAdvance(TypedDict, closed=True):
    seconds: int


class ClockOut(TypedDict):
    object: NotRequired[Literal["test_clock"]]
    livemode: NotRequired[Literal[False]]
    now: int
    offset_seconds: int
    work_done: dict[str, int]


class ConnectedAccountBalanceOut(TypedDict):
    object: NotRequired[Literal["balance"]]
    livemode: bool
    connected_account: str
    available: list[BalanceAmount]
    pending: list[BalanceAmount]


class Consent(TypedDict):
    status: Literal["pending", "granted", "denied", "revoked"]
    granted_at: int | None
    scopes: list[str]


class CustomerCreate(TypedDict, closed=True):
    external_reference: NotRequired[str | None]
    email: NotRequired[str | None]
    name: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]


class CustomerOut(TypedDict):
    id: str
    object: NotRequired[Literal["customer"]]
    livemode: bool
    created: int
    external_reference: str | None
    email: str | None
    name: str | None
    metadata: dict[str, str]


class CustomerSessionAccess(TypedDict, closed=True):
    client_secret: str


class CustomerSessionOut(TypedDict):
    id: str
    object: NotRequired[Literal["customer_session"]]
    livemode: bool
    created: int
    customer: str
    client_secret: str
    expires_at: int


class CustomerSheetSessionOut(TypedDict):
    object: NotRequired[Literal["customer_sheet_session"]]
    livemode: bool
    created: int
    customer: str
    customer_session: str
    customer_session_client_secret: str
    setup_intent: str
    setup_intent_client_secret: str
    publishable_key: str
    expires_at: int


class DeletedOut(TypedDict):
    id: str
    object: str
    deleted: NotRequired[Literal[True]]


class DeliveryAttemptOut(TypedDict):
    number: int
    attempted_at: int
    outcome: Literal["succeeded", "failed"]
    response_status: int | None
    latency_ms: float | None
    error: str | None


class DeliveryOut(TypedDict):
    id: str
    object: NotRequired[Literal["delivery"]]
    livemode: bool
    created: int
    channel: Literal["email", "sms"]
    recipient: str
    status: Literal["pending", "sent", "failed"]
    last_error: str | None
    operation: str | None
    sent_at: int | None


class DisputeClose(TypedDict, closed=True):
    pass


class DistributionIn(TypedDict, closed=True):
    merchant_of_record: NotRequired[str | None]
    allocations: list[AllocationIn]


class DistributionUpdate(TypedDict, closed=True):
    distribution: DistributionIn
    expected_version: int


class EmptyBody(TypedDict, closed=True):
    pass


class EventOut(TypedDict):
    id: str
    object: NotRequired[Literal["event"]]
    livemode: bool
    created: int
    type: str
    api_version: str
    data: dict[str, Any]


class EventReceived(TypedDict):
    received: NotRequired[bool]
    duplicate: bool


class Evidence(TypedDict, closed=True):
    product_description: NotRequired[str | None]
    customer_name: NotRequired[str | None]
    customer_email_address: NotRequired[str | None]
    billing_address: NotRequired[str | None]
    service_date: NotRequired[str | None]
    refund_policy_disclosure: NotRequired[str | None]
    cancellation_rebuttal: NotRequired[str | None]
    access_activity_log: NotRequired[str | None]
    uncategorized_text: NotRequired[str | None]
    receipt: NotRequired[str | None]
    customer_communication: NotRequired[str | None]
    shipping_documentation: NotRequired[str | None]
    refund_policy: NotRequired[str | None]
    uncategorized_file: NotRequired[str | None]


class EvidenceDetails(TypedDict):
    due_by: int
    has_evidence: bool
    past_due: bool
    submission_count: int


class EvidenceUpdate(TypedDict, closed=True):
    evidence: NotRequired[Evidence | None]
    submit: NotRequired[bool]
    metadata: NotRequired[dict[str, str] | None]


class ExternalAccountIn(TypedDict, closed=True):
    account_number: str


class ExternalAccountOut(TypedDict):
    object: NotRequired[Literal["bank_account"]]
    bank_last4: str


class FaultCreate(TypedDict, closed=True):
    operation_type: str
    mode: Literal["transient", "permanent"]
    count: int


class FaultOut(TypedDict):
    object: NotRequired[Literal["processor_fault"]]
    operation_type: str
    mode: Literal["transient", "permanent"]
    count: int


class FeesOut(TypedDict):
    status: Literal["pending", "final"]
    reserve: int | None
    commission: int | None
    collected: int | None
    prior_recovery: int
    outstanding: int | None


class FileOut(TypedDict):
    id: str
    object: NotRequired[Literal["file"]]
    livemode: bool
    created: int
    purpose: NotRequired[Literal["dispute_evidence"]]
    dispute: str
    type: Literal["pdf", "jpeg", "png"]
    size: int
    sha256: str
    filename: str | None


class FiscalBaseOut(TypedDict):
    object: NotRequired[Literal["api"]]
    api: NotRequired[Literal["fiscal"]]
    version: str
    livemode: bool
    operations: list[str]


class FundsFlowItem(TypedDict):
    party: Literal["installation", "service"]
    role: Literal["proceeds", "commission_reserve", "prior_recovery"]
    amount: int


class IncrementAuthorization(TypedDict, closed=True):
    amount: int


class InvoiceDeliveryOut(TypedDict):
    id: str
    object: NotRequired[Literal["invoice_delivery"]]
    channel: str
    recipient: str
    status: str
    checkout_session: str | None
    last_error: str | None
    operation: str | None
    sent_at: int | None
    created: int


class InvoiceFinalize(TypedDict, closed=True):
    pass


class InvoiceLineIn(TypedDict, closed=True):
    description: str
    quantity: NotRequired[int]
    unit_amount: int


class InvoiceLineOut(TypedDict):
    description: str
    quantity: int
    unit_amount: int
    amount: int


class InvoiceOut(TypedDict):
    id: str
    object: NotRequired[Literal["invoice"]]
    livemode: bool
    created: int
    status: Literal["draft", "open", "paid"]
    number: str | None
    customer: str
    currency: str
    lines: list[InvoiceLineOut]
    amount_due: int
    amount_paid: int
    description: str | None
    payment_intent: str | None
    success_url: str | None
    cancel_url: str | None
    finalized_at: int | None
    paid_at: int | None
    deliveries: list[InvoiceDeliveryOut]
    metadata: dict[str, str]


class InvoiceSend(TypedDict, closed=True):
    pass


class InvoiceUpdate(TypedDict, closed=True):
    lines: NotRequired[list[InvoiceLineIn] | None]
    description: NotRequired[str | None]
    success_url: NotRequired[str | None]
    cancel_url: NotRequired[str | None]
    metadata: NotRequired[dict[str, str] | None]


class IssueOut(TypedDict):
    type: Literal["missing_at_processor", "missing_in_ledger", "amount_mismatch", "status_mismatch"]
    transfer: str | None
    processor_transfer: str | None
    expected: Any
    actual: Any


class ListEnvelopeCustomerOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[CustomerOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeDeliveryOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[DeliveryOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeEventOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[EventOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeInvoiceOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[InvoiceOut]
    has_more: bool
    next_cursor: str | None


class LivenessOut(TypedDict):
    status: Literal["ok"]


class MerchantCapabilitiesOut(TypedDict):
    payments: Literal["active", "pending", "inactive"]
    transfers: Literal["active", "pending", "inactive"]
    payouts: Literal["active", "pending", "inactive"]
    refunds: Literal["active", "pending", "inactive"]
    object: NotRequired[Literal["merchant_capabilities"]]
    merchant: str


class MerchantConnectionCreate(TypedDict, closed=True):
    redirect_uri: str
    code_challenge: str
    code_challenge_method: str
    state: str


class MerchantConnectionOut(TypedDict):
    id: str
    object: NotRequired[Literal["merchant_connection"]]
    livemode: bool
    created: int
    url: str | None
    expires_at: int


class MerchantRequirementsOut(TypedDict):
    currently_due: list[str]
    past_due: list[str]
    disabled_reason: str | None
    object: NotRequired[Literal["merchant_requirements"]]
    merchant: str


class NoParameters(TypedDict, closed=True):
    pass


class OnboardingLinkCreate(TypedDict, closed=True):
    return_url: NotRequired[str | None]


class OnboardingLinkOut(TypedDict):
    object: NotRequired[Literal["onboarding_link"]]
    livemode: bool
    connected_account: str
    created: int
    expires_at: int
    url: str


class OnboardingSessionCreate(TypedDict, closed=True):
    return_url: str


class OnboardingSessionOut(TypedDict):
    id: str
    object: NotRequired[Literal["merchant_onboarding_session"]]
    livemode: bool
    created: int
    merchant: str
    status: Literal["open", "complete", "expired"]
    url: str | None
    return_url: str
    expires_at: int


class OperationErrorOut(TypedDict):
    code: str
    message: str
    at: int


class OperationOut(TypedDict):
    id: str
    object: NotRequired[Literal["operation"]]
    livemode: bool
    created: int
    type: str
    status: Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"]
    attempts: int
    last_error: str | None
    resource: str | None
    updated: int


class OrderBind(TypedDict, closed=True):
    expected_version: int
    payment_intent_id: str


class OrderLineIn(TypedDict, closed=True):
    description: str
    quantity: NotRequired[int]
    unit_amount: int


class OrderLineOut(TypedDict):
    description: str
    quantity: int
    unit_amount: int
    amount: int


class OrderOut(TypedDict):
    id: str
    object: NotRequired[Literal["order"]]
    livemode: bool
    created: int
    status: Literal["pending", "preparing", "canceled"]
    version: int
    currency: str
    amount_total: int
    lines: list[OrderLineOut]
    payment_intent: str | None
    external_reference: str | None
    preparation_started_at: int | None
    canceled_at: int | None
    metadata: dict[str, str]


class OrderTransition(TypedDict, closed=True):
    expected_version: int


class PaymentErrorOut(TypedDict):
    type: str
    code: str
    decline_code: str | None
    message: str
    payment_method: str | None


class PaymentIntentCancel(TypedDict, closed=True):
    cancellation_reason: NotRequired[Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"] | None]


class PaymentIntentCapture(TypedDict, closed=True):
    amount_to_capture: NotRequired[int | None]


class PaymentIntentConfirm(TypedDict, closed=True):
    client_secret: str
    payment_method: NotRequired[str | None]
    card: NotRequired[CardIn | None]
    card_token: NotRequired[str | None]
    save_payment_method: NotRequired[bool]
    return_url: NotRequired[str | None]


class PaymentIntentCreate(TypedDict, closed=True):
    amount: int
    currency: str
    capture_method: NotRequired[Literal["automatic", "manual"]]
    customer: NotRequired[str | None]
    payment_method: NotRequired[str | None]
    merchant: NotRequired[str | None]
    distribution: NotRequired[DistributionIn | None]
    external_reference: NotRequired[str | None]
    description: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]
    receipt_email: NotRequired[str | None]
    receipt_phone: NotRequired[str | None]


class PaymentIntentOut(TypedDict):
    id: str
    object: NotRequired[Literal["payment_intent"]]
    livemode: bool
    created: int
    amount: int
    amount_capturable: int
    amount_received: int
    amount_refunded: int
    currency: str
    status: str
    capture_method: str
    client_secret: str | None
    publishable_key: str | None
    customer: str | None
    payment_method: str | None
    merchant: str | None
    distribution: dict[str, Any] | None
    external_reference: str | None
    description: str | None
    metadata: dict[str, str]
    receipt_email: str | None
    fees: FeesOut
    next_action: dict[str, Any] | None
    last_payment_error: PaymentErrorOut | None
    cancellation_reason: str | None
    canceled_at: int | None


class PaymentIntentUpdate(TypedDict, closed=True):
    amount: NotRequired[int | None]
    payment_method: NotRequired[str | None]
    description: NotRequired[str | None]
    metadata: NotRequired[dict[str, str] | None]
    receipt_email: NotRequired[str | None]


class PaymentMethodOut(TypedDict):
    id: str
    object: NotRequired[Literal["payment_method"]]
    livemode: bool
    created: int
    type: NotRequired[Literal["card"]]
    customer: str | None
    card: CardOut
    preferred: bool
    merchant: str | None


class PaymentQuoteCreate(TypedDict, closed=True):
    amount: int
    currency: str
    merchant: NotRequired[str | None]
    distribution: NotRequired[DistributionIn | None]


class PayoutCreate(TypedDict, closed=True):
    amount: int
    currency: str
    method: NotRequired[Literal["standard", "instant"]]
    metadata: NotRequired[dict[str, str]]


class PayoutOut(TypedDict):
    id: str
    object: NotRequired[Literal["payout"]]
    livemode: bool
    created: int
    connected_account: str | None
    amount: int
    fee_amount: int
    currency: str
    method: Literal["standard", "instant"]
    status: Literal["pending", "in_transit", "paid", "failed", "canceled"]
    arrival_date: int | None
    failure_code: str | None
    failure_message: str | None
    operation: str | None
    last_operation_error: OperationErrorOut | None
    original_payout: str | None
    reversed_by: str | None
    metadata: dict[str, str]


class PayoutReverse(TypedDict, closed=True):
    metadata: NotRequired[dict[str, str]]


class ProcessorTransferChange(TypedDict, closed=True):
    amount: NotRequired[int | None]
    status: NotRequired[Literal["paid", "reversed", "failed"] | None]


class ProductCreate(TypedDict, closed=True):
    name: str
    description: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]


class ProductOut(TypedDict):
    id: str
    object: NotRequired[Literal["product"]]
    livemode: bool
    created: int
    name: str
    description: str | None
    active: bool
    archived: bool
    metadata: dict[str, str]


class ProductUpdate(TypedDict, closed=True):
    name: NotRequired[str | None]
    description: NotRequired[str | None]
    active: NotRequired[bool | None]
    metadata: NotRequired[dict[str, str] | None]


class QuoteFeesOut(TypedDict):
    commission_basis_points: int
    commission_fixed_amount: int
    commission_reserve: int
    prior_recovery: int
    amount_fixed: bool
    processing_cost: NotRequired[Literal["reported_after_capture"]]


class QuoteOut(TypedDict):
    object: NotRequired[Literal["price_quote"]]
    price: str
    quantity: int
    amount: int
    currency: str


class QuoteRequest(TypedDict, closed=True):
    quantity: int


class ReadinessOut(TypedDict):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str]


class ReconciliationRunCreate(TypedDict, closed=True):
    pass


class ReconciliationRunOut(TypedDict):
    id: str
    object: NotRequired[Literal["reconciliation_run"]]
    livemode: bool
    created: int
    status: Literal["pending", "completed", "failed"]
    transfers_checked: int
    issues: list[IssueOut]
    operation: OperationOut | None
    completed_at: int | None


class RefundCreate(TypedDict, closed=True):
    payment_intent: str
    amount: NotRequired[int | None]
    reason: NotRequired[Literal["duplicate", "fraudulent", "requested_by_customer"] | None]
    metadata: NotRequired[dict[str, str]]


class RefundOut(TypedDict):
    id: str
    object: NotRequired[Literal["refund"]]
    livemode: bool
    created: int
    payment_intent: str
    amount: int
    currency: str
    status: str
    reason: str | None
    failure_reason: str | None
    operation: str | None
    last_operation_error: OperationErrorOut | None
    metadata: dict[str, str]


class Requirements(TypedDict):
    currently_due: list[str]
    past_due: list[str]
    disabled_reason: str | None


class RequirementsOut(TypedDict):
    currently_due: list[str]
    eventually_due: list[str]
    past_due: list[str]
    disabled_reason: str | None


class ReversalCreate(TypedDict, closed=True):
    amount: NotRequired[int | None]
    metadata: NotRequired[dict[str, str]]


class ReversalOut(TypedDict):
    id: str
    object: NotRequired[Literal["transfer_reversal"]]
    livemode: bool
    created: int
    transfer: str
    amount: int
    currency: str
    refund: str | None
    metadata: dict[str, str]


class ReviewOut(TypedDict):
    id: str
    object: NotRequired[Literal["review"]]
    livemode: bool
    created: int
    payment_intent: str
    reason: Literal["rule", "value_list"]
    matched: dict[str, str]
    open: bool
    status: Literal["open", "approved"]
    closed_reason: Literal["approved"] | None
    approved_at: int | None


class SecretRotation(TypedDict, closed=True):
    expire_previous_in_seconds: NotRequired[int]


class SetupIntentConfirm(TypedDict, closed=True):
    client_secret: str
    card: NotRequired[CardIn | None]
    card_token: NotRequired[str | None]


class SetupIntentCreate(TypedDict, closed=True):
    metadata: NotRequired[dict[str, str]]


class SetupIntentOut(TypedDict):
    id: str
    object: NotRequired[Literal["setup_intent"]]
    livemode: bool
    created: int
    customer: str
    status: Literal["requires_payment_method", "succeeded", "canceled"]
    cancellation_reason: Literal["abandoned"] | None
    usage: Literal["off_session"]
    payment_method: str | None
    client_secret: str | None
    expires_at: int
    metadata: dict[str, str]


class SubscriptionCancel(TypedDict, closed=True):
    at_period_end: NotRequired[bool]


class SubscriptionChangeOut(TypedDict):
    id: str
    object: NotRequired[Literal["subscription_change"]]
    livemode: bool
    created: int
    subscription: str
    price: str
    quantity: int
    currency: str
    effective: Literal["immediate", "next_cycle"]
    status: Literal["open", "accepted", "awaiting_payment", "applied", "canceled", "expired"]
    expected_version: int
    current_amount: int
    amount: int
    amount_due: int
    expires_at: int
    subscription_invoice: str | None
    accepted_at: int | None
    applied_at: int | None
    canceled_at: int | None


class SubscriptionInvoiceOut(TypedDict):
    id: str
    object: NotRequired[Literal["subscription_invoice"]]
    livemode: bool
    created: int
    subscription: str
    billing_kind: Literal["cycle", "upgrade"]
    status: Literal["open", "paid", "failed", "void"]
    amount: int
    currency: str
    period_start: int
    period_end: int
    payment_intent: str
    terms_version: int
    distribution_version: int | None
    allocation_group: str | None
    settlement_status: str
    failure_code: str | None
    operation: str | None
    last_operation_error: OperationErrorOut | None
    paid_at: int | None


class SubscriptionOut(TypedDict):
    id: str
    object: NotRequired[Literal["subscription"]]
    livemode: bool
    created: int
    customer: str
    merchant: NotRequired[str | None]
    price: str
    quantity: int
    currency: str
    amount: int
    interval: Literal["month", "year"]
    interval_count: int
    status: Literal["incomplete", "active", "past_due", "canceled", "review_required"]
    review_reason: str | None
    entitled: bool
    access_until: int | None
    current_period_start: int
    current_period_end: int
    cancel_at_period_end: bool
    canceled_at: int | None
    terms_version: int
    distribution_version: int
    distribution: dict[str, Any] | None
    latest_invoice: str | None
    metadata: dict[str, str]


class TestDisputeCreate(TypedDict, closed=True):
    payment_intent: str
    reason: NotRequired[Literal["bank_cannot_process", "credit_not_processed", "customer_initiated", "debit_not_authorized", "duplicate", "fraudulent", "general", "incorrect_account_details", "insufficient_funds", "product_not_received", "product_unacceptable", "subscription_canceled", "unrecognized"]]
    amount: NotRequired[int | None]


class TierIn(TypedDict, closed=True):
    up_to: int | None
    unit_amount: int
    flat_amount: NotRequired[int]


class TierOut(TypedDict):
    up_to: int | None
    unit_amount: int
    flat_amount: int


class TransferCreate(TypedDict, closed=True):
    destination: str
    amount: int
    source_transaction: str
    currency: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]


class TransferOut(TypedDict):
    id: str
    object: NotRequired[Literal["transfer"]]
    livemode: bool
    created: int
    amount: int
    currency: str
    destination: str
    source_transaction: str
    allocation_group: str
    allocation: str
    status: Literal["pending", "paid", "failed", "reversed", "canceled"]
    amount_reversed: int
    reversals: list[ReversalOut]
    failure_code: str | None
    failure_message: str | None
    operation: str | None
    last_operation_error: OperationErrorOut | None
    metadata: dict[str, str]


class ValueListCreate(TypedDict, closed=True):
    alias: str
    name: str
    item_type: Literal["card_fingerprint", "email", "ip_address", "customer_id", "card_country"]
    action: Literal["block", "review"]
    metadata: NotRequired[dict[str, str]]


class ValueListItemCreate(TypedDict, closed=True):
    value: str


class ValueListItemOut(TypedDict):
    id: str
    object: NotRequired[Literal["radar.value_list_item"]]
    livemode: bool
    created: int
    value_list: str
    value: str


class ValueListOut(TypedDict):
    id: str
    object: NotRequired[Literal["radar.value_list"]]
    livemode: bool
    created: int
    alias: str
    name: str
    item_type: Literal["card_fingerprint", "email", "ip_address", "customer_id", "card_country"]
    action: Literal["block", "review"]
    metadata: dict[str, str]


class WebhookDeliveryOut(TypedDict):
    id: str
    object: NotRequired[Literal["webhook_delivery"]]
    livemode: bool
    created: int
    webhook_endpoint: str
    event: str
    event_type: str
    status: str
    operation: str
    next_attempt_at: int | None
    resend_of: str | None
    attempts: list[DeliveryAttemptOut]


class WebhookEndpointCreate(TypedDict, closed=True):
    url: str
    enabled_events: list[Literal["*", "payment_intent.created", "payment_intent.requires_action", "payment_intent.amount_capturable_updated", "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled", "payment_intent.fees_finalized", "refund.created", "refund.updated", "refund.failed", "checkout.session.completed", "checkout.session.expired", "merchant.created", "merchant.connected", "merchant.denied", "merchant.revoked", "merchant.updated", "connected_account.created", "connected_account.updated", "allocation_group.created", "allocation_group.updated", "transfer.created", "transfer.paid", "transfer.failed", "transfer.canceled", "transfer.reversed", "transfer.reversal.created", "payout.created", "payout.updated", "payout.failed", "payout.paid", "payout.canceled", "payout.reversed", "payout.reversal.created", "payout.reversal.updated", "payout.reversal.failed", "payout.reversal.paid", "payout.reversal.canceled", "charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed", "charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated", "review.opened", "review.closed", "radar.value_list.created", "invoice.created", "invoice.finalized", "invoice.sent", "invoice.paid", "order.created", "order.payment_bound", "order.preparation_started", "order.canceled", "subscription.created", "subscription.updated", "subscription.invoice.paid", "subscription.invoice.failed", "subscription.change.accepted", "subscription.change.awaiting_payment", "subscription.change.applied", "subscription.change.canceled", "subscription.change.expired", "operation.succeeded", "operation.failed", "operation.dead_lettered"]]
    description: NotRequired[str | None]


class WebhookEndpointOut(TypedDict):
    id: str
    object: NotRequired[Literal["webhook_endpoint"]]
    livemode: bool
    created: int
    url: str
    description: str | None
    enabled_events: list[str]
    status: Literal["enabled", "disabled"]
    previous_secret_expires_at: int | None
    secret: NotRequired[str | None]


class WebhookEndpointUpdate(TypedDict, closed=True):
    url: NotRequired[str | None]
    enabled_events: NotRequired[list[Literal["*", "payment_intent.created", "payment_intent.requires_action", "payment_intent.amount_capturable_updated", "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled", "payment_intent.fees_finalized", "refund.created", "refund.updated", "refund.failed", "checkout.session.completed", "checkout.session.expired", "merchant.created", "merchant.connected", "merchant.denied", "merchant.revoked", "merchant.updated", "connected_account.created", "connected_account.updated", "allocation_group.created", "allocation_group.updated", "transfer.created", "transfer.paid", "transfer.failed", "transfer.canceled", "transfer.reversed", "transfer.reversal.created", "payout.created", "payout.updated", "payout.failed", "payout.paid", "payout.canceled", "payout.reversed", "payout.reversal.created", "payout.reversal.updated", "payout.reversal.failed", "payout.reversal.paid", "payout.reversal.canceled", "charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed", "charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated", "review.opened", "review.closed", "radar.value_list.created", "invoice.created", "invoice.finalized", "invoice.sent", "invoice.paid", "order.created", "order.payment_bound", "order.preparation_started", "order.canceled", "subscription.created", "subscription.updated", "subscription.invoice.paid", "subscription.invoice.failed", "subscription.change.accepted", "subscription.change.awaiting_payment", "subscription.change.applied", "subscription.change.canceled", "subscription.change.expired", "operation.succeeded", "operation.failed", "operation.dead_lettered"]] | None]
    description: NotRequired[str | None]
    disabled: NotRequired[bool | None]


class ErrorDetail(TypedDict):
    type: str
    code: str
    message: str
    param: str | None
    request_id: str
    decline_code: NotRequired[str | None]


class Error(TypedDict):
    error: ErrorDetail


class AccountOut(TypedDict):
    id: str
    object: NotRequired[Literal["account"]]
    livemode: bool
    created: int
    name: str
    kind: Literal["direct", "platform"]
    publishable_key: str | None
    settings: AccountSettingsOut


class AllocationGroupOut(TypedDict):
    id: str
    object: NotRequired[Literal["allocation_group"]]
    livemode: bool
    created: int
    payment_intent: str
    amount: int
    amount_allocated: int
    currency: str
    status: Literal["open", "committing", "committed", "failed", "canceled"]
    source: Literal["api", "distribution", "transfer"]
    operation: str | None
    failure_reason: str | None
    last_operation_error: OperationErrorOut | None
    allocations: list[AllocationOut]
    transfers: list[TransferOut]
    metadata: dict[str, str]


class ConnectedAccountCreate(TypedDict, closed=True):
    kind: Literal["courier", "driver", "merchant", "other"]
    country: NotRequired[str]
    email: NotRequired[str | None]
    display_name: NotRequired[str | None]
    external_account: ExternalAccountIn
    metadata: NotRequired[dict[str, str]]


class ConnectedAccountOut(TypedDict):
    id: str
    object: NotRequired[Literal["connected_account"]]
    livemode: bool
    created: int
    kind: Literal["courier", "driver", "merchant", "other"]
    country: str
    email: str | None
    display_name: str | None
    capabilities: CapabilitiesOut
    requirements: RequirementsOut
    details_submitted: bool
    payouts_enabled: bool
    external_account: ExternalAccountOut | None
    merchant: str | None
    metadata: dict[str, str]


class DisputeOut(TypedDict):
    id: str
    object: NotRequired[Literal["dispute"]]
    livemode: bool
    created: int
    payment_intent: str
    amount: int
    currency: str
    reason: str
    status: Literal["needs_response", "under_review", "won", "lost"]
    fee_amount: int
    amount_withdrawn: int
    amount_reinstated: int
    amount_reversed: int
    withdrawal_operation: str | None
    withdrawal_status: Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"]
    evidence: dict[str, str]
    evidence_details: EvidenceDetails
    metadata: dict[str, str]


class FaultList(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[FaultOut]
    has_more: NotRequired[Literal[False]]
    next_cursor: NotRequired[None]


class InvoiceCreate(TypedDict, closed=True):
    customer: str
    currency: str
    lines: list[InvoiceLineIn]
    description: NotRequired[str | None]
    success_url: NotRequired[str | None]
    cancel_url: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]


class ListEnvelopeConnectedAccountOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[ConnectedAccountOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeDisputeOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[DisputeOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeOrderOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[OrderOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopePaymentIntentOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[PaymentIntentOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopePayoutOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[PayoutOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeProductOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[ProductOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeReconciliationRunOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[ReconciliationRunOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeRefundOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[RefundOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeReviewOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[ReviewOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeSubscriptionChangeOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[SubscriptionChangeOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeSubscriptionInvoiceOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[SubscriptionInvoiceOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeSubscriptionOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[SubscriptionOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeTransferOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[TransferOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeValueListItemOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[ValueListItemOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeValueListOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[ValueListOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeWebhookDeliveryOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[WebhookDeliveryOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopeWebhookEndpointOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[WebhookEndpointOut]
    has_more: bool
    next_cursor: str | None


class MerchantOut(TypedDict):
    id: str
    object: NotRequired[Literal["merchant"]]
    livemode: bool
    created: int
    business_profile: BusinessProfile
    connection_status: Literal["pending", "active", "denied", "revoked"]
    consent: Consent
    capabilities: Capabilities
    requirements: Requirements
    connected_account: str | None


class OrderCreate(TypedDict, closed=True):
    currency: str
    lines: list[OrderLineIn]
    amount_total: int
    external_reference: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]


class PaymentMethodList(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[PaymentMethodOut]
    has_more: bool
    next_cursor: str | None
    preferred_payment_method: str | None


class PaymentQuoteOut(TypedDict):
    object: NotRequired[Literal["payment_quote"]]
    livemode: bool
    amount: int
    currency: str
    funds_flow: list[FundsFlowItem]
    fees: QuoteFeesOut


class PriceCreate(TypedDict, closed=True):
    currency: str
    interval: Literal["month", "year"]
    interval_count: NotRequired[int]
    pricing_model: NotRequired[Literal["per_unit", "volume", "graduated"]]
    amount: NotRequired[int | None]
    tiers: NotRequired[list[TierIn] | None]
    name: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]
    product: str


class PriceData(TypedDict, closed=True):
    currency: str
    interval: Literal["month", "year"]
    interval_count: NotRequired[int]
    pricing_model: NotRequired[Literal["per_unit", "volume", "graduated"]]
    amount: NotRequired[int | None]
    tiers: NotRequired[list[TierIn] | None]
    name: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]
    product: str


class PriceOut(TypedDict):
    id: str
    object: NotRequired[Literal["price"]]
    livemode: bool
    created: int
    product: str
    name: str | None
    currency: str
    interval: Literal["month", "year"]
    interval_count: int
    pricing_model: Literal["per_unit", "volume", "graduated"]
    amount: int | None
    tiers: list[TierOut] | None
    active: bool
    metadata: dict[str, str]


class SubscriptionCreate(TypedDict, closed=True):
    price: NotRequired[str | None]
    price_data: NotRequired[PriceData | None]
    customer: str
    merchant: NotRequired[str | None]
    quantity: NotRequired[int]
    distribution: NotRequired[DistributionIn | None]
    metadata: NotRequired[dict[str, str]]


class ListEnvelopeMerchantOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[MerchantOut]
    has_more: bool
    next_cursor: str | None


class ListEnvelopePriceOut(TypedDict):
    object: NotRequired[Literal["list"]]
    data: list[PriceOut]
    has_more: bool
    next_cursor: str | None
