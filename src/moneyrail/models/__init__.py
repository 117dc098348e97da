"""Every table of moneyrail, one module per aggregate. Import this package to register them all."""

from moneyrail.models.audit import AuditEntry
from moneyrail.models.base import Base
from moneyrail.models.billing import Price, Product, Subscription, SubscriptionChange, SubscriptionInvoice
from moneyrail.models.checkout import CheckoutSession
from moneyrail.models.commerce import Order
from moneyrail.models.connect import ConnectedAccount, OnboardingLink
from moneyrail.models.console import Operator, OperatorSession, OperatorSetupLink
from moneyrail.models.customer import Customer
from moneyrail.models.dispute import Dispute, DisputeFile
from moneyrail.models.event import Event, WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint
from moneyrail.models.idempotency import IdempotencyRecord
from moneyrail.models.installation import ApiKey, EnvironmentSettings, Installation, PublishableKey
from moneyrail.models.invoice import Invoice, InvoiceDelivery, InvoiceNumberCounter
from moneyrail.models.ledger import (
    JournalTransaction,
    LedgerAccount,
    LedgerBalanceCheckpoint,
    LedgerBlock,
    LedgerBlockEntry,
    LedgerPosting,
)
from moneyrail.models.merchant import (
    Merchant,
    MerchantAuthorizationCode,
    MerchantConnection,
    MerchantOnboardingSession,
)
from moneyrail.models.operation import Operation, OperationAttempt
from moneyrail.models.payment import PaymentIntent, ReceiptDelivery, Refund, SandboxSmsMessage
from moneyrail.models.payment_method import CustomerSession, PaymentMethod, SetupIntent
from moneyrail.models.payout import Payout
from moneyrail.models.processor_event import ProcessorEvent
from moneyrail.models.processor_orphan import ProcessorOrphan, ProcessorOrphanSweep
from moneyrail.models.reconciliation import ReconciliationRun
from moneyrail.models.risk import Review, ValueList, ValueListItem
from moneyrail.models.sandbox import (
    SandboxAuthorization,
    SandboxCard,
    SandboxClock,
    SandboxProcessorCall,
    SandboxProcessorFault,
)
from moneyrail.models.transfer import (
    Allocation,
    AllocationGroup,
    PaymentDistribution,
    Transfer,
    TransferReversal,
)

__all__ = [
    "Allocation",
    "AllocationGroup",
    "ApiKey",
    "AuditEntry",
    "Base",
    "CheckoutSession",
    "ConnectedAccount",
    "Customer",
    "CustomerSession",
    "Dispute",
    "DisputeFile",
    "EnvironmentSettings",
    "Event",
    "IdempotencyRecord",
    "Installation",
    "Invoice",
    "InvoiceDelivery",
    "InvoiceNumberCounter",
    "JournalTransaction",
    "LedgerAccount",
    "LedgerBalanceCheckpoint",
    "LedgerBlock",
    "LedgerBlockEntry",
    "LedgerPosting",
    "Merchant",
    "MerchantAuthorizationCode",
    "MerchantConnection",
    "MerchantOnboardingSession",
    "OnboardingLink",
    "Operation",
    "OperationAttempt",
    "Operator",
    "OperatorSession",
    "OperatorSetupLink",
    "Order",
    "PaymentDistribution",
    "PaymentIntent",
    "PaymentMethod",
    "Payout",
    "Price",
    "ProcessorEvent",
    "ProcessorOrphan",
    "ProcessorOrphanSweep",
    "Product",
    "PublishableKey",
    "ReceiptDelivery",
    "ReconciliationRun",
    "Refund",
    "Review",
    "SandboxAuthorization",
    "SandboxCard",
    "SandboxClock",
    "SandboxProcessorCall",
    "SandboxProcessorFault",
    "SandboxSmsMessage",
    "SetupIntent",
    "Subscription",
    "SubscriptionChange",
    "SubscriptionInvoice",
    "Transfer",
    "TransferReversal",
    "ValueList",
    "ValueListItem",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "WebhookEndpoint",
]
