"""Every table of moneyrail, one module per aggregate. Import this package to register them all."""

from moneyrail.models.base import Base
from moneyrail.models.checkout import CheckoutSession
from moneyrail.models.customer import Customer
from moneyrail.models.event import Event, WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint
from moneyrail.models.idempotency import IdempotencyRecord
from moneyrail.models.installation import ApiKey, EnvironmentSettings, Installation, PublishableKey
from moneyrail.models.ledger import (
    JournalTransaction,
    LedgerAccount,
    LedgerBalanceCheckpoint,
    LedgerBlock,
    LedgerBlockEntry,
    LedgerPosting,
)
from moneyrail.models.operation import Operation, OperationAttempt
from moneyrail.models.payment import PaymentIntent, ReceiptDelivery, Refund, SandboxSmsMessage
from moneyrail.models.payment_method import CustomerSession, PaymentMethod, SetupIntent
from moneyrail.models.sandbox import (
    SandboxAuthorization,
    SandboxCard,
    SandboxClock,
    SandboxProcessorCall,
    SandboxProcessorFault,
)

__all__ = [
    "ApiKey",
    "Base",
    "CheckoutSession",
    "Customer",
    "CustomerSession",
    "EnvironmentSettings",
    "Event",
    "IdempotencyRecord",
    "Installation",
    "JournalTransaction",
    "LedgerAccount",
    "LedgerBalanceCheckpoint",
    "LedgerBlock",
    "LedgerBlockEntry",
    "LedgerPosting",
    "Operation",
    "OperationAttempt",
    "PaymentIntent",
    "PaymentMethod",
    "PublishableKey",
    "ReceiptDelivery",
    "Refund",
    "SandboxAuthorization",
    "SandboxCard",
    "SandboxClock",
    "SandboxProcessorCall",
    "SandboxProcessorFault",
    "SandboxSmsMessage",
    "SetupIntent",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "WebhookEndpoint",
]
