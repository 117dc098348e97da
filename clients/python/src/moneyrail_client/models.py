# Generated from moneyrail's /openapi.json by clients/python/generate.py: do not edit.

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints
from typing_extensions import TypeAliasType


class AccountRequirementsOut(BaseModel):
    currently_due: Annotated[
        list[str], Field(description="What must be provided now", title="Currently Due")
    ]
    eventually_due: Annotated[
        list[str],
        Field(
            description="What will have to be provided later", title="Eventually Due"
        ),
    ]
    past_due: Annotated[
        list[str], Field(description="What was not provided in time", title="Past Due")
    ]
    disabled_reason: Annotated[
        str | None,
        Field(
            description="Why a capability is not active, if one is not",
            title="Disabled Reason",
        ),
    ]
    object: Annotated[
        Literal["connected_account_requirements"],
        Field(description="The object's type.", title="Object"),
    ] = "connected_account_requirements"
    connected_account: Annotated[
        str, Field(description="The `acct_` id", title="Connected Account")
    ]


class AccountSettingsOut(BaseModel):
    checkout_enabled: Annotated[
        bool,
        Field(
            description="Hosted checkout is active in this environment",
            title="Checkout Enabled",
        ),
    ]
    recurring_enabled: Annotated[
        bool,
        Field(
            description="Subscriptions are active in this environment",
            title="Recurring Enabled",
        ),
    ]
    commission_basis_points: Annotated[
        int,
        Field(
            description="The service's commission rate, in basis points",
            title="Commission Basis Points",
        ),
    ]
    commission_fixed_amount: Annotated[
        int,
        Field(
            description="The commission's fixed part, in minor units",
            title="Commission Fixed Amount",
        ),
    ]


MetadataAdditionalProperty = TypeAliasType(
    "MetadataAdditionalProperty", Annotated[str, Field(max_length=500)]
)


class AllocationCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    recipient: Annotated[
        str,
        Field(
            description="A connected account (`acct_`) of this installation",
            max_length=255,
            min_length=1,
            title="Recipient",
        ),
    ]
    amount: Annotated[
        int,
        Field(
            description="The recipient's share, in minor units",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]
    role: Annotated[
        Literal["merchant", "developer", "courier", "driver", "other"] | None,
        Field(description="The recipient's role, such as `courier`", title="Role"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class AllocationGroupCommit(BaseModel):
    """
    Commit takes no parameters, and still refuses unknown ones.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class AllocationGroupCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    payment_intent: Annotated[
        str,
        Field(
            description="A captured `pi_` payment of this installation",
            max_length=255,
            min_length=1,
            title="Payment Intent",
        ),
    ]
    amount: Annotated[
        int,
        Field(
            description="Reserved; at most what is captured and not refunded or reserved",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class AllocationIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    recipient: Annotated[
        str,
        Field(
            description="Who receives this share: a `mer_` or `acct_` id",
            max_length=255,
            min_length=1,
            title="Recipient",
        ),
    ]
    role: Annotated[
        str,
        Field(
            description="The recipient's role, such as `merchant`, `courier` or `developer`",
            max_length=40,
            min_length=1,
            title="Role",
        ),
    ]
    amount: Annotated[
        int | None,
        Field(description="The share in minor units (payments)", title="Amount"),
    ] = None
    basis_points: Annotated[
        int | None,
        Field(
            description="The share in basis points (subscriptions)",
            title="Basis Points",
        ),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class AllocationOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters.",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["allocation"], Field(description="The object's type.", title="Object")
    ] = "allocation"
    recipient: Annotated[
        str,
        Field(
            description="The `acct_` or `mer_` id receiving the share",
            title="Recipient",
        ),
    ]
    role: Annotated[str | None, Field(description="The recipient's role", title="Role")]
    gross_amount: Annotated[int, Field(description="As declared", title="Gross Amount")]
    commission: Annotated[
        int,
        Field(
            description="The share of the commission taken from it (merchant allocations)",
            title="Commission",
        ),
    ]
    amount: Annotated[
        int,
        Field(
            description="What is transferred: gross_amount minus commission",
            title="Amount",
        ),
    ]
    transfer: Annotated[
        str | None,
        Field(
            description="The `tr_` id that moved it, once committed", title="Transfer"
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class ApiBaseOut(BaseModel):
    object: Annotated[
        Literal["api"], Field(description="The object's type.", title="Object")
    ] = "api"
    api: Annotated[str, Field(description="The API's name", title="Api")]
    version: Annotated[
        str, Field(description="The version serving this request", title="Version")
    ]
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]


class BalanceAmount(BaseModel):
    amount: Annotated[int, Field(description="In minor units", title="Amount")]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]


class BalanceOut(BaseModel):
    object: Annotated[
        Literal["balance"], Field(description="The object's type.", title="Object")
    ] = "balance"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]
    available: Annotated[
        list[BalanceAmount],
        Field(
            description="Funds that can be paid out, per currency", title="Available"
        ),
    ]
    pending: Annotated[
        list[BalanceAmount],
        Field(description="Funds not yet available, per currency", title="Pending"),
    ]
    fees_outstanding: Annotated[
        list[BalanceAmount],
        Field(
            description="Processing costs still to be recovered from the next payments",
            title="Fees Outstanding",
        ),
    ]


class BusinessProfile(BaseModel):
    name: Annotated[str | None, Field(description="The business's name", title="Name")]
    url: Annotated[str | None, Field(description="The business's website", title="Url")]
    support_email: Annotated[
        str | None,
        Field(description="Where its customers get help", title="Support Email"),
    ]


class Capabilities(BaseModel):
    payments: Annotated[
        Literal["active", "pending", "inactive"],
        Field(
            description="Whether the merchant can take payments now", title="Payments"
        ),
    ]
    transfers: Annotated[
        Literal["active", "pending", "inactive"],
        Field(description="Whether money can be moved to it", title="Transfers"),
    ]
    payouts: Annotated[
        Literal["active", "pending", "inactive"],
        Field(description="Whether it can be paid out", title="Payouts"),
    ]
    refunds: Annotated[
        Literal["active", "pending", "inactive"],
        Field(description="Whether its payments can be refunded", title="Refunds"),
    ]


class CapabilitiesOut(BaseModel):
    transfers: Annotated[
        Literal["active", "pending", "inactive"],
        Field(
            description="Whether money can be moved to the account: `pending` while the processor (Stripe) is making its own account for it, and transfers to it wait",
            title="Transfers",
        ),
    ]
    payouts: Annotated[
        Literal["active", "pending", "inactive"],
        Field(description="Whether the account can be paid out", title="Payouts"),
    ]


class CardIn(BaseModel):
    """
    What a payer typed. It goes to the processor only: never stored, never logged, never echoed.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    number: Annotated[
        str,
        Field(
            description="The card number", max_length=32, min_length=1, title="Number"
        ),
    ]
    exp_month: Annotated[
        int, Field(description="Expiry month, 1 to 12", ge=1, le=12, title="Exp Month")
    ]
    exp_year: Annotated[
        int,
        Field(
            description="Four digits, or two (26 is 2026)",
            ge=0,
            le=9999,
            title="Exp Year",
        ),
    ]
    cvc: Annotated[
        str,
        Field(
            description="The 3 or 4 digits on the card",
            pattern="^[0-9]{3,4}$",
            title="Cvc",
        ),
    ]


class CardOut(BaseModel):
    brand: Annotated[
        str, Field(description="The card network, such as `visa`", title="Brand")
    ]
    last4: Annotated[
        str, Field(description="The number's last four digits", title="Last4")
    ]
    exp_month: Annotated[int, Field(description="Expiry month", title="Exp Month")]
    exp_year: Annotated[
        int, Field(description="Expiry year, four digits", title="Exp Year")
    ]
    fingerprint: Annotated[
        str,
        Field(
            description="The same card number gives the same fingerprint",
            title="Fingerprint",
        ),
    ]


class ChangeCancel(BaseModel):
    """
    Withdrawing a change takes no parameters, and still refuses unknown ones.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class Price(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The desired `price_` id (same currency and frequency); omitted: the current one",
            max_length=255,
            min_length=1,
            title="Price",
        ),
    ]


class ChangeCreate(BaseModel):
    """
    A change of price and/or quantity, quoted against the subscription's current terms.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    price: Annotated[
        Price | None,
        Field(
            description="The desired `price_` id (same currency and frequency); omitted: the current one",
            title="Price",
        ),
    ] = None
    quantity: Annotated[
        int | None,
        Field(
            description="The desired quantity, 1 to 10000; omitted: the current one",
            title="Quantity",
        ),
    ] = None
    expected_version: Annotated[
        int,
        Field(
            description="Must equal the subscription's `terms_version`",
            title="Expected Version",
        ),
    ]
    effective: Annotated[
        Literal["immediate", "next_cycle"],
        Field(
            description="`immediate` (the prorated difference is charged now) or `next_cycle` (at renewal)",
            title="Effective",
        ),
    ]


class PaymentIntent(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A `pi_` id the payer pays; exclusive with `subscription`",
            max_length=255,
            min_length=1,
            title="Payment Intent",
        ),
    ]


class Subscription(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A subscription's first or overdue payment; exclusive with `payment_intent`",
            max_length=255,
            min_length=1,
            title="Subscription",
        ),
    ]


class Change(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A subscription change the payer consents to",
            max_length=255,
            min_length=1,
            title="Change",
        ),
    ]


class Invoice(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A failed subscription invoice to recover",
            max_length=255,
            min_length=1,
            title="Invoice",
        ),
    ]


class CheckoutSessionCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    payment_intent: Annotated[
        PaymentIntent | None,
        Field(
            description="A `pi_` id the payer pays; exclusive with `subscription`",
            title="Payment Intent",
        ),
    ] = None
    subscription: Annotated[
        Subscription | None,
        Field(
            description="A subscription's first or overdue payment; exclusive with `payment_intent`",
            title="Subscription",
        ),
    ] = None
    change: Annotated[
        Change | None,
        Field(
            description="A subscription change the payer consents to", title="Change"
        ),
    ] = None
    invoice: Annotated[
        Invoice | None,
        Field(description="A failed subscription invoice to recover", title="Invoice"),
    ] = None
    title: Annotated[
        str,
        Field(
            description="Shown on the hosted page",
            max_length=200,
            min_length=1,
            title="Title",
        ),
    ]
    success_url: Annotated[
        str,
        Field(
            description="Where the payer goes once paid; registered exactly",
            max_length=2048,
            pattern="^https?://",
            title="Success Url",
        ),
    ]
    cancel_url: Annotated[
        str,
        Field(
            description="Where the payer goes on cancel; registered exactly",
            max_length=2048,
            pattern="^https?://",
            title="Cancel Url",
        ),
    ]


class CheckoutSessionExpire(BaseModel):
    """
    The expire operation takes no parameters, and still refuses unknown ones.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class CheckoutSessionOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["checkout_session"],
        Field(description="The object's type.", title="Object"),
    ] = "checkout_session"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    payment_intent: Annotated[
        str | None,
        Field(description="The `pi_` id the payer pays", title="Payment Intent"),
    ]
    subscription: Annotated[
        str | None,
        Field(description="The subscription paid for, if any", title="Subscription"),
    ]
    change: Annotated[
        str | None,
        Field(
            description="The subscription change consented to, if any", title="Change"
        ),
    ]
    invoice: Annotated[
        str | None,
        Field(
            description="The subscription invoice recovered, if any", title="Invoice"
        ),
    ]
    title: Annotated[str, Field(description="Shown on the hosted page", title="Title")]
    success_url: Annotated[
        str, Field(description="Where the payer goes once paid", title="Success Url")
    ]
    cancel_url: Annotated[
        str, Field(description="Where the payer goes on cancel", title="Cancel Url")
    ]
    status: Annotated[
        Literal["open", "complete", "expired"],
        Field(description="`open`, `complete` or `expired`", title="Status"),
    ]
    expires_at: Annotated[
        int,
        Field(
            description="Unix seconds on the environment's clock (the sandbox clock)",
            title="Expires At",
        ),
    ]
    checkout_url: Annotated[
        str | None,
        Field(
            description="The hosted page, a temporary credential: answered once, at creation; null afterwards",
            title="Checkout Url",
        ),
    ]


class ClockAdvance(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    seconds: Annotated[
        int,
        Field(description="How far to move the sandbox clock forward", title="Seconds"),
    ]


class ClockOut(BaseModel):
    object: Annotated[
        Literal["test_clock"], Field(description="The object's type.", title="Object")
    ] = "test_clock"
    livemode: Annotated[
        Literal[False],
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ] = False
    now: Annotated[
        int, Field(description="The sandbox clock's time, in Unix seconds", title="Now")
    ]
    offset_seconds: Annotated[
        int,
        Field(
            description="How far the sandbox clock is ahead of real time",
            title="Offset Seconds",
        ),
    ]
    work_done: Annotated[
        dict[str, int],
        Field(
            description="Work that fell due while advancing, counted by kind",
            title="Work Done",
        ),
    ]


class ConnectedAccountBalanceOut(BaseModel):
    object: Annotated[
        Literal["balance"], Field(description="The object's type.", title="Object")
    ] = "balance"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]
    connected_account: Annotated[
        str, Field(description="The `acct_` id", title="Connected Account")
    ]
    available: Annotated[
        list[BalanceAmount],
        Field(
            description="Funds that can be paid out, per currency", title="Available"
        ),
    ]
    pending: Annotated[
        list[BalanceAmount],
        Field(description="Funds not yet available, per currency", title="Pending"),
    ]


class DisplayName(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A name to show",
            max_length=200,
            min_length=1,
            title="Display Name",
        ),
    ]


class Consent(BaseModel):
    status: Annotated[
        Literal["pending", "granted", "denied", "revoked"],
        Field(
            description="`pending`, `granted`, `denied` or `revoked`", title="Status"
        ),
    ]
    granted_at: Annotated[
        int | None,
        Field(
            description="When the merchant granted access, in Unix seconds",
            title="Granted At",
        ),
    ]
    scopes: Annotated[
        list[str],
        Field(
            description="What this application may do for the merchant", title="Scopes"
        ),
    ]


class ExternalReference(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Your own reference; a second create with it returns the same customer",
            max_length=255,
            min_length=1,
            title="External Reference",
        ),
    ]


class Name(RootModel[str]):
    root: Annotated[
        str, Field(description="The customer's name", max_length=255, title="Name")
    ]


class CustomerCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    external_reference: Annotated[
        ExternalReference | None,
        Field(
            description="Your own reference; a second create with it returns the same customer",
            title="External Reference",
        ),
    ] = None
    email: Annotated[
        str | None, Field(description="Where receipts go", title="Email")
    ] = None
    name: Annotated[
        Name | None, Field(description="The customer's name", title="Name")
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class CustomerOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["customer"], Field(description="The object's type.", title="Object")
    ] = "customer"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    external_reference: Annotated[
        str | None, Field(description="Your own reference", title="External Reference")
    ]
    email: Annotated[str | None, Field(description="Where receipts go", title="Email")]
    name: Annotated[str | None, Field(description="The customer's name", title="Name")]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class CustomerSessionAccess(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    client_secret: Annotated[
        str,
        Field(
            description="The customer session's `client_secret`",
            max_length=255,
            min_length=1,
            title="Client Secret",
        ),
    ]


class CustomerSessionOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["customer_session"],
        Field(description="The object's type.", title="Object"),
    ] = "customer_session"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    customer: Annotated[
        str,
        Field(
            description="The `cus_` id whose saved cards the session shows",
            title="Customer",
        ),
    ]
    client_secret: Annotated[
        str,
        Field(
            description="Shown once, in the answer that creates it",
            title="Client Secret",
        ),
    ]
    expires_at: Annotated[
        int,
        Field(description="When the session ends, in Unix seconds", title="Expires At"),
    ]


class CustomerSheetSessionOut(BaseModel):
    """
    Everything a native customer sheet needs, in one answer; it is not stored as such.
    """

    object: Annotated[
        Literal["customer_sheet_session"],
        Field(description="The object's type.", title="Object"),
    ] = "customer_sheet_session"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC).",
            title="Created",
        ),
    ]
    customer: Annotated[str, Field(description="The `cus_` id", title="Customer")]
    customer_session: Annotated[
        str,
        Field(
            description="The customer session listing the saved cards",
            title="Customer Session",
        ),
    ]
    customer_session_client_secret: Annotated[
        str,
        Field(
            description="Its client secret, shown once",
            title="Customer Session Client Secret",
        ),
    ]
    setup_intent: Annotated[
        str,
        Field(
            description="The setup intent that saves a new card", title="Setup Intent"
        ),
    ]
    setup_intent_client_secret: Annotated[
        str,
        Field(
            description="Its client secret, shown once",
            title="Setup Intent Client Secret",
        ),
    ]
    publishable_key: Annotated[
        str,
        Field(
            description="The key the app calls the client-side routes with",
            title="Publishable Key",
        ),
    ]
    expires_at: Annotated[
        int,
        Field(
            description="When the sheet's session ends, in Unix seconds",
            title="Expires At",
        ),
    ]


class DeletedOut(BaseModel):
    id: Annotated[str, Field(description="The deleted object's id", title="Id")]
    object: Annotated[str, Field(description="The object's type.", title="Object")]
    deleted: Annotated[
        Literal[True], Field(description="Always `true`", title="Deleted")
    ] = True


class DeliveryAttemptOut(BaseModel):
    number: Annotated[
        int, Field(description="The attempt's number, from 1", title="Number")
    ]
    attempted_at: Annotated[
        int,
        Field(description="When it was made, in Unix seconds", title="Attempted At"),
    ]
    outcome: Annotated[
        Literal["succeeded", "failed"],
        Field(description="`succeeded` (a 2xx answer) or `failed`", title="Outcome"),
    ]
    response_status: Annotated[
        int | None,
        Field(
            description="The receiver's HTTP status; null if none came",
            title="Response Status",
        ),
    ]
    latency_ms: Annotated[
        float | None,
        Field(
            description="How long the receiver took to answer, in milliseconds; null if it did not",
            title="Latency Ms",
        ),
    ]
    error: Annotated[
        str | None,
        Field(
            description="Why the attempt failed; null when it succeeded", title="Error"
        ),
    ]


class DeliveryOut(BaseModel):
    """
    One channel's receipt of a succeeded payment.
    """

    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["delivery"], Field(description="The object's type.", title="Object")
    ] = "delivery"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    channel: Annotated[
        Literal["email", "sms"],
        Field(description="How the receipt is sent", title="Channel"),
    ]
    recipient: Annotated[
        str,
        Field(
            description="Masked: `j***@example.com`, `+*******1234`", title="Recipient"
        ),
    ]
    status: Annotated[
        Literal["pending", "sent", "failed"],
        Field(
            description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), `sent`, or `failed` (final: refused, or its operation discarded by an operator)",
            title="Status",
        ),
    ]
    last_error: Annotated[
        str | None,
        Field(
            description="Why the last attempt failed: while `pending` (retried) and once `failed`",
            title="Last Error",
        ),
    ]
    operation: Annotated[
        str | None,
        Field(
            description="The `op_` operation that sends it (GET /v1/operations/{id})",
            title="Operation",
        ),
    ]
    sent_at: Annotated[
        int | None, Field(description="Unix seconds, when `sent`", title="Sent At")
    ]


class DisputeClose(BaseModel):
    """
    Closing takes no parameters, and still refuses unknown ones.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class MerchantOfRecord(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The `mer_` id selling",
            max_length=255,
            min_length=1,
            title="Merchant Of Record",
        ),
    ]


class DistributionIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    merchant_of_record: Annotated[
        MerchantOfRecord | None,
        Field(description="The `mer_` id selling", title="Merchant Of Record"),
    ] = None
    allocations: Annotated[
        list[AllocationIn],
        Field(
            description="The shares; amounts sum to the payment's amount",
            max_length=50,
            min_length=1,
            title="Allocations",
        ),
    ]


class DistributionUpdate(BaseModel):
    """
    A new version of a platform subscription's shares, for invoices opened from now on.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    distribution: Annotated[
        DistributionIn,
        Field(
            description="The shares in basis_points summing to 10000, with the same merchant_of_record"
        ),
    ]
    expected_version: Annotated[
        int,
        Field(
            description="Must equal the subscription's `distribution_version`",
            title="Expected Version",
        ),
    ]


class EmptyBody(BaseModel):
    """
    This operation takes no parameters, and still refuses unknown ones.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class EventOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["event"], Field(description="The object's type.", title="Object")
    ] = "event"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    type: Annotated[
        str,
        Field(
            description="What happened, such as `payment_intent.succeeded`",
            title="Type",
        ),
    ]
    api_version: Annotated[
        str,
        Field(
            description="The API version the object is rendered in", title="Api Version"
        ),
    ]
    data: Annotated[
        dict[str, Any],
        Field(
            description='`{"object": {...}}`: the object as it was after the change',
            title="Data",
        ),
    ]


class EventReceived(BaseModel):
    received: Annotated[
        bool | None,
        Field(
            description="The event was verified and kept (or kept already)",
            title="Received",
        ),
    ] = True
    duplicate: Annotated[
        bool,
        Field(
            description="`true` when this event id was received before: nothing more is done",
            title="Duplicate",
        ),
    ]


class ProductDescription(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="What was sold", max_length=20000, title="Product Description"
        ),
    ]


class CustomerName(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The customer's name", max_length=20000, title="Customer Name"
        ),
    ]


class CustomerEmailAddress(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The customer's e-mail address",
            max_length=20000,
            title="Customer Email Address",
        ),
    ]


class BillingAddress(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The billing address", max_length=20000, title="Billing Address"
        ),
    ]


class ServiceDate(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="When the service was provided or the goods delivered",
            max_length=20000,
            title="Service Date",
        ),
    ]


class RefundPolicyDisclosure(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="How the refund policy was shown to the customer",
            max_length=20000,
            title="Refund Policy Disclosure",
        ),
    ]


class CancellationRebuttal(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Why the customer is not owed a cancellation",
            max_length=20000,
            title="Cancellation Rebuttal",
        ),
    ]


class AccessActivityLog(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The customer's use of the service",
            max_length=20000,
            title="Access Activity Log",
        ),
    ]


class UncategorizedText(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Anything else", max_length=20000, title="Uncategorized Text"
        ),
    ]


class Receipt(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A `file_` id: the receipt",
            max_length=255,
            min_length=1,
            title="Receipt",
        ),
    ]


class CustomerCommunication(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A `file_` id: correspondence with the customer",
            max_length=255,
            min_length=1,
            title="Customer Communication",
        ),
    ]


class ShippingDocumentation(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A `file_` id: proof of shipping",
            max_length=255,
            min_length=1,
            title="Shipping Documentation",
        ),
    ]


class RefundPolicy(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A `file_` id: the refund policy",
            max_length=255,
            min_length=1,
            title="Refund Policy",
        ),
    ]


class UncategorizedFile(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A `file_` id: any other document",
            max_length=255,
            min_length=1,
            title="Uncategorized File",
        ),
    ]


class Evidence(BaseModel):
    """
    Text answers, and `file_` ids uploaded to this dispute (POST /v1/disputes/{id}/files).
    Fields left out keep what was saved before; an empty string clears one.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    product_description: Annotated[
        ProductDescription | None,
        Field(description="What was sold", title="Product Description"),
    ] = None
    customer_name: Annotated[
        CustomerName | None,
        Field(description="The customer's name", title="Customer Name"),
    ] = None
    customer_email_address: Annotated[
        CustomerEmailAddress | None,
        Field(
            description="The customer's e-mail address", title="Customer Email Address"
        ),
    ] = None
    billing_address: Annotated[
        BillingAddress | None,
        Field(description="The billing address", title="Billing Address"),
    ] = None
    service_date: Annotated[
        ServiceDate | None,
        Field(
            description="When the service was provided or the goods delivered",
            title="Service Date",
        ),
    ] = None
    refund_policy_disclosure: Annotated[
        RefundPolicyDisclosure | None,
        Field(
            description="How the refund policy was shown to the customer",
            title="Refund Policy Disclosure",
        ),
    ] = None
    cancellation_rebuttal: Annotated[
        CancellationRebuttal | None,
        Field(
            description="Why the customer is not owed a cancellation",
            title="Cancellation Rebuttal",
        ),
    ] = None
    access_activity_log: Annotated[
        AccessActivityLog | None,
        Field(
            description="The customer's use of the service", title="Access Activity Log"
        ),
    ] = None
    uncategorized_text: Annotated[
        UncategorizedText | None,
        Field(description="Anything else", title="Uncategorized Text"),
    ] = None
    receipt: Annotated[
        Receipt | None, Field(description="A `file_` id: the receipt", title="Receipt")
    ] = None
    customer_communication: Annotated[
        CustomerCommunication | None,
        Field(
            description="A `file_` id: correspondence with the customer",
            title="Customer Communication",
        ),
    ] = None
    shipping_documentation: Annotated[
        ShippingDocumentation | None,
        Field(
            description="A `file_` id: proof of shipping",
            title="Shipping Documentation",
        ),
    ] = None
    refund_policy: Annotated[
        RefundPolicy | None,
        Field(description="A `file_` id: the refund policy", title="Refund Policy"),
    ] = None
    uncategorized_file: Annotated[
        UncategorizedFile | None,
        Field(
            description="A `file_` id: any other document", title="Uncategorized File"
        ),
    ] = None


class EvidenceDetails(BaseModel):
    due_by: Annotated[
        int,
        Field(
            description="Unix seconds: evidence is accepted until then", title="Due By"
        ),
    ]
    has_evidence: Annotated[
        bool,
        Field(description="true once any evidence was saved", title="Has Evidence"),
    ]
    past_due: Annotated[
        bool,
        Field(
            description="true once `due_by` has passed without a submission",
            title="Past Due",
        ),
    ]
    submission_count: Annotated[
        int,
        Field(
            description="How many times evidence was submitted: 0 or 1",
            title="Submission Count",
        ),
    ]


class EvidenceUpdate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    evidence: Annotated[
        Evidence | None,
        Field(
            description="Evidence fields to save; those left out keep what was saved before"
        ),
    ] = None
    submit: Annotated[
        bool | None,
        Field(
            description="true sends the evidence to the issuing bank: once, and the dispute is then read-only",
            title="Submit",
        ),
    ] = False
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(description="Your own key-value pairs, merged", title="Metadata"),
    ] = None


class ExternalAccountIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    account_number: Annotated[
        str,
        Field(
            description="The bank account payouts go to (sandbox: `000111111116` makes payouts fail)",
            pattern="^[0-9A-Z]{6,34}$",
            title="Account Number",
        ),
    ]


class ExternalAccountOut(BaseModel):
    object: Annotated[
        Literal["bank_account"], Field(description="The object's type.", title="Object")
    ] = "bank_account"
    bank_last4: Annotated[
        str,
        Field(
            description="The bank account number's last four characters",
            title="Bank Last4",
        ),
    ]


class FaultCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    operation_type: Annotated[
        str,
        Field(
            description="The processor call to fail, such as `capture` or `refund`",
            title="Operation Type",
        ),
    ]
    mode: Annotated[
        Literal["transient", "permanent"],
        Field(
            description="`transient` faults are retried; `permanent` ones refuse",
            title="Mode",
        ),
    ]
    count: Annotated[
        int,
        Field(
            description="How many of the next calls fail", ge=1, le=1000, title="Count"
        ),
    ]


class FaultOut(BaseModel):
    object: Annotated[
        Literal["processor_fault"],
        Field(description="The object's type.", title="Object"),
    ] = "processor_fault"
    operation_type: Annotated[
        str, Field(description="The processor call that fails", title="Operation Type")
    ]
    mode: Annotated[
        Literal["transient", "permanent"],
        Field(description="How it fails", title="Mode"),
    ]
    count: Annotated[
        int, Field(description="How many calls are still to fail", title="Count")
    ]


class FeesOut(BaseModel):
    status: Annotated[
        Literal["pending", "final"],
        Field(
            description="`pending` until the processor reports the payment's real cost, then `final`",
            title="Status",
        ),
    ]
    reserve: Annotated[
        int | None,
        Field(
            description="Withheld at capture under the commission policy; null without one",
            title="Reserve",
        ),
    ]
    commission: Annotated[
        int | None,
        Field(
            description="Total final commission; null until the cost is known",
            title="Commission",
        ),
    ]
    collected: Annotated[
        int | None,
        Field(
            description="The commission collected from this payment", title="Collected"
        ),
    ]
    prior_recovery: Annotated[
        int,
        Field(
            description="Earlier shortfalls recovered from this payment",
            title="Prior Recovery",
        ),
    ]
    outstanding: Annotated[
        int | None,
        Field(
            description="Commission still owed, recovered from later payments",
            title="Outstanding",
        ),
    ]


class FileOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["file"], Field(description="The object's type.", title="Object")
    ] = "file"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    purpose: Annotated[
        Literal["dispute_evidence"],
        Field(description="What the file is for", title="Purpose"),
    ] = "dispute_evidence"
    dispute: Annotated[
        str, Field(description="The `dp_` dispute it was uploaded to", title="Dispute")
    ]
    type: Annotated[
        Literal["pdf", "jpeg", "png"],
        Field(description="Recognised from the content, not the name", title="Type"),
    ]
    size: Annotated[int, Field(description="Its size in bytes", title="Size")]
    sha256: Annotated[
        str, Field(description="The SHA-256 of its content, in hex", title="Sha256")
    ]
    filename: Annotated[
        str | None,
        Field(
            description="The name it was uploaded with, if any; not trusted",
            title="Filename",
        ),
    ]


class FiscalBaseOut(BaseModel):
    object: Annotated[
        Literal["api"], Field(description="The object's type.", title="Object")
    ] = "api"
    api: Annotated[
        Literal["fiscal"], Field(description="The API's name", title="Api")
    ] = "fiscal"
    version: Annotated[
        str, Field(description="The version serving this request", title="Version")
    ]
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]
    operations: Annotated[
        list[str],
        Field(
            description="The fiscal operations of this interface: none yet",
            title="Operations",
        ),
    ]


class FundsFlowItem(BaseModel):
    party: Annotated[
        Literal["installation", "service"],
        Field(description="Who gets this part", title="Party"),
    ]
    role: Annotated[
        Literal["proceeds", "commission_reserve", "prior_recovery"],
        Field(description="What it is for", title="Role"),
    ]
    amount: Annotated[int, Field(description="In minor units", title="Amount")]


class IncrementAuthorization(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    amount: Annotated[
        int,
        Field(
            description="The new total to hold, above the current amount",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]


class Description(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Shown to the customer on the invoice",
            max_length=1000,
            title="Description",
        ),
    ]


class SuccessUrl(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Where the hosted payment page returns; registered exactly (needed to send)",
            max_length=2048,
            pattern="^https?://",
            title="Success Url",
        ),
    ]


class CancelUrl(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Registered exactly (needed to send)",
            max_length=2048,
            pattern="^https?://",
            title="Cancel Url",
        ),
    ]


class InvoiceDeliveryOut(BaseModel):
    id: Annotated[str, Field(description="The delivery's id", title="Id")]
    object: Annotated[
        Literal["invoice_delivery"],
        Field(description="The object's type.", title="Object"),
    ] = "invoice_delivery"
    channel: Annotated[
        str, Field(description="How it was sent: `email`", title="Channel")
    ]
    recipient: Annotated[
        str, Field(description="Where it was sent, masked", title="Recipient")
    ]
    status: Annotated[
        str,
        Field(
            description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), `sent`, or `failed` (final: refused, or its operation discarded by an operator)",
            title="Status",
        ),
    ]
    checkout_session: Annotated[
        str | None,
        Field(
            description="The `cs_` hosted payment session the message links to",
            title="Checkout Session",
        ),
    ]
    last_error: Annotated[
        str | None,
        Field(
            description="Why the last attempt failed; null otherwise",
            title="Last Error",
        ),
    ]
    operation: Annotated[
        str | None,
        Field(
            description="The `op_` operation that sends it (GET /v1/operations/{id})",
            title="Operation",
        ),
    ]
    sent_at: Annotated[
        int | None,
        Field(
            description="When it was sent, in Unix seconds; null until sent",
            title="Sent At",
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the delivery was requested, in Unix seconds",
            title="Created",
        ),
    ]


class InvoiceFinalize(BaseModel):
    """
    No fields: finalization takes the next number and creates the invoice's payment.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class InvoiceLineIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    description: Annotated[
        str,
        Field(
            description="What the line is",
            max_length=500,
            min_length=1,
            title="Description",
        ),
    ]
    quantity: Annotated[
        int | None,
        Field(description="How many: 1 to 10000", ge=1, le=10000, title="Quantity"),
    ] = 1
    unit_amount: Annotated[
        int,
        Field(
            description="The price of one, in minor units",
            ge=1,
            le=99999999,
            title="Unit Amount",
        ),
    ]


class InvoiceLineOut(BaseModel):
    description: Annotated[
        str, Field(description="What the line is", title="Description")
    ]
    quantity: Annotated[int, Field(description="How many", title="Quantity")]
    unit_amount: Annotated[
        int, Field(description="The price of one, in minor units", title="Unit Amount")
    ]
    amount: Annotated[
        int,
        Field(
            description="`quantity` times `unit_amount`, in minor units", title="Amount"
        ),
    ]


class InvoiceOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["invoice"], Field(description="The object's type.", title="Object")
    ] = "invoice"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    status: Annotated[
        Literal["draft", "open", "paid"],
        Field(
            description="`draft`, `open` (finalized, payable) or `paid`", title="Status"
        ),
    ]
    number: Annotated[
        str | None,
        Field(
            description="The environment's gapless number, given at finalization; null on a draft",
            title="Number",
        ),
    ]
    customer: Annotated[
        str, Field(description="The `cus_` customer billed", title="Customer")
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    lines: Annotated[
        list[InvoiceLineOut], Field(description="The invoice's lines", title="Lines")
    ]
    amount_due: Annotated[
        int,
        Field(description="The sum of the lines, in minor units", title="Amount Due"),
    ]
    amount_paid: Annotated[
        int, Field(description="What was paid, in minor units", title="Amount Paid")
    ]
    description: Annotated[
        str | None, Field(description="Shown to the customer", title="Description")
    ]
    payment_intent: Annotated[
        str | None,
        Field(
            description="The `pi_` payment created at finalization; null on a draft",
            title="Payment Intent",
        ),
    ]
    success_url: Annotated[
        str | None,
        Field(
            description="Where the payment page returns after payment",
            title="Success Url",
        ),
    ]
    cancel_url: Annotated[
        str | None,
        Field(
            description="Where the payment page returns when abandoned",
            title="Cancel Url",
        ),
    ]
    finalized_at: Annotated[
        int | None,
        Field(
            description="When it was finalized, in Unix seconds", title="Finalized At"
        ),
    ]
    paid_at: Annotated[
        int | None,
        Field(description="When it was paid, in Unix seconds", title="Paid At"),
    ]
    deliveries: Annotated[
        list[InvoiceDeliveryOut],
        Field(description="The e-mails sent with it, newest first", title="Deliveries"),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class InvoiceSend(BaseModel):
    """
    No fields: the e-mail goes to the customer's address, with a new hosted payment link.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class Lines(RootModel[list[InvoiceLineIn]]):
    root: Annotated[
        list[InvoiceLineIn],
        Field(
            description="New lines replacing the draft's: 1 to 100",
            max_length=100,
            min_length=1,
            title="Lines",
        ),
    ]


class SuccessUrl1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Where the payment page returns after payment; registered exactly",
            max_length=2048,
            pattern="^https?://",
            title="Success Url",
        ),
    ]


class CancelUrl1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Where the payment page returns when abandoned; registered exactly",
            max_length=2048,
            pattern="^https?://",
            title="Cancel Url",
        ),
    ]


class InvoiceUpdate(BaseModel):
    """
    A draft's terms; a finalized invoice cannot change.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    lines: Annotated[
        Lines | None,
        Field(description="New lines replacing the draft's: 1 to 100", title="Lines"),
    ] = None
    description: Annotated[
        Description | None,
        Field(description="Shown to the customer on the invoice", title="Description"),
    ] = None
    success_url: Annotated[
        SuccessUrl1 | None,
        Field(
            description="Where the payment page returns after payment; registered exactly",
            title="Success Url",
        ),
    ] = None
    cancel_url: Annotated[
        CancelUrl1 | None,
        Field(
            description="Where the payment page returns when abandoned; registered exactly",
            title="Cancel Url",
        ),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(description="Your own key-value pairs, merged", title="Metadata"),
    ] = None


class IssueOut(BaseModel):
    type: Annotated[
        Literal["missing_at_processor", "missing_in_ledger", "amount_mismatch", "status_mismatch"],
        Field(
            description="`missing_at_processor`, `missing_in_ledger`, `amount_mismatch` or `status_mismatch`",
            title="Type",
        ),
    ]
    transfer: Annotated[
        str | None,
        Field(
            description="The `tr_` transfer; null when the ledger has none",
            title="Transfer",
        ),
    ]
    processor_transfer: Annotated[
        str | None,
        Field(
            description="The sandbox simulator's id for the transfer; null when the processor has none, and on a real processor (Stripe), whose ids are never shown",
            title="Processor Transfer",
        ),
    ]
    expected: Annotated[
        Any,
        Field(
            description="What the ledger says (null when it has nothing)",
            title="Expected",
        ),
    ]
    actual: Annotated[
        Any,
        Field(
            description="What the processor says (null when it has nothing)",
            title="Actual",
        ),
    ]


class ListEnvelopeCustomerOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[CustomerOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeDeliveryOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[DeliveryOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeEventOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[EventOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeInvoiceOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[InvoiceOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class LivenessOut(BaseModel):
    status: Annotated[
        Literal["ok"],
        Field(description="Always `ok` while the process answers", title="Status"),
    ]


class MerchantCapabilitiesOut(BaseModel):
    payments: Annotated[
        Literal["active", "pending", "inactive"],
        Field(
            description="Whether the merchant can take payments now", title="Payments"
        ),
    ]
    transfers: Annotated[
        Literal["active", "pending", "inactive"],
        Field(description="Whether money can be moved to it", title="Transfers"),
    ]
    payouts: Annotated[
        Literal["active", "pending", "inactive"],
        Field(description="Whether it can be paid out", title="Payouts"),
    ]
    refunds: Annotated[
        Literal["active", "pending", "inactive"],
        Field(description="Whether its payments can be refunded", title="Refunds"),
    ]
    object: Annotated[
        Literal["merchant_capabilities"],
        Field(description="The object's type.", title="Object"),
    ] = "merchant_capabilities"
    merchant: Annotated[str, Field(description="The `mer_` id", title="Merchant")]


class MerchantConnectionCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    redirect_uri: Annotated[
        str,
        Field(
            description="Exactly one of the environment's registered OAuth redirect URIs",
            max_length=2048,
            min_length=1,
            title="Redirect Uri",
        ),
    ]
    code_challenge: Annotated[
        str,
        Field(
            description="BASE64URL(SHA-256(code_verifier)), RFC 7636",
            max_length=128,
            min_length=43,
            title="Code Challenge",
        ),
    ]
    code_challenge_method: Annotated[
        str,
        Field(
            description="`S256` only; `plain` is refused",
            max_length=16,
            min_length=1,
            title="Code Challenge Method",
        ),
    ]
    state: Annotated[
        str,
        Field(
            description="Carried back to the redirect URI unchanged: check it there",
            max_length=500,
            min_length=1,
            title="State",
        ),
    ]


class MerchantConnectionOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["merchant_connection"],
        Field(description="The object's type.", title="Object"),
    ] = "merchant_connection"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    url: Annotated[
        str | None,
        Field(
            description="The consent page; a temporary credential, answered once",
            title="Url",
        ),
    ]
    expires_at: Annotated[
        int,
        Field(
            description="When the consent link stops working, in Unix seconds",
            title="Expires At",
        ),
    ]


class MerchantRequirementsOut(BaseModel):
    currently_due: Annotated[
        list[str],
        Field(
            description="What the merchant must still provide", title="Currently Due"
        ),
    ]
    past_due: Annotated[
        list[str],
        Field(description="What it failed to provide in time", title="Past Due"),
    ]
    disabled_reason: Annotated[
        str | None,
        Field(
            description="Why a capability is not active, if one is not",
            title="Disabled Reason",
        ),
    ]
    object: Annotated[
        Literal["merchant_requirements"],
        Field(description="The object's type.", title="Object"),
    ] = "merchant_requirements"
    merchant: Annotated[str, Field(description="The `mer_` id", title="Merchant")]


class NoParameters(BaseModel):
    """
    A route that takes no parameters still refuses unknown ones (CONVENTIONS.md §3).
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class ReturnUrl(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Offered to the person once onboarding is done; registered exactly",
            max_length=2048,
            pattern="^https?://",
            title="Return Url",
        ),
    ]


class OnboardingLinkCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    return_url: Annotated[
        ReturnUrl | None,
        Field(
            description="Offered to the person once onboarding is done; registered exactly",
            title="Return Url",
        ),
    ] = None


class OnboardingLinkOut(BaseModel):
    object: Annotated[
        Literal["onboarding_link"],
        Field(description="The object's type.", title="Object"),
    ] = "onboarding_link"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]
    connected_account: Annotated[
        str,
        Field(description="The `acct_` id being onboarded", title="Connected Account"),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC).",
            title="Created",
        ),
    ]
    expires_at: Annotated[
        int,
        Field(
            description="Unix seconds on the environment's clock; 5 minutes after creation",
            title="Expires At",
        ),
    ]
    url: Annotated[
        str,
        Field(
            description="The hosted onboarding page, a single-use credential: answered once",
            title="Url",
        ),
    ]


class OnboardingSessionCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    return_url: Annotated[
        str,
        Field(
            description="Where the activation page sends the merchant back; registered exactly",
            max_length=2048,
            min_length=1,
            title="Return Url",
        ),
    ]


class OnboardingSessionOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["merchant_onboarding_session"],
        Field(description="The object's type.", title="Object"),
    ] = "merchant_onboarding_session"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    merchant: Annotated[
        str, Field(description="The `mer_` id being activated", title="Merchant")
    ]
    status: Annotated[
        Literal["open", "complete", "expired"],
        Field(description="`open`, `complete` or `expired`", title="Status"),
    ]
    url: Annotated[
        str | None,
        Field(
            description="The activation page; a temporary credential, answered once",
            title="Url",
        ),
    ]
    return_url: Annotated[
        str,
        Field(description="Where the merchant goes back once done", title="Return Url"),
    ]
    expires_at: Annotated[
        int,
        Field(
            description="When the link stops working, in Unix seconds",
            title="Expires At",
        ),
    ]


class OperationErrorOut(BaseModel):
    """
    The last error the operation moving an object met (CONVENTIONS.md §9: final means final).
    """

    code: Annotated[
        str,
        Field(
            description="What went wrong, such as `processor_unavailable`, `processor_error` or a refusal's code",
            title="Code",
        ),
    ]
    message: Annotated[
        str, Field(description="A human-readable explanation", title="Message")
    ]
    at: Annotated[
        int, Field(description="When the attempt failed, in Unix seconds", title="At")
    ]


class OperationOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["operation"], Field(description="The object's type.", title="Object")
    ] = "operation"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    type: Annotated[
        str,
        Field(
            description="What the operation does, such as `refund` or `transfer`",
            title="Type",
        ),
    ]
    status: Annotated[
        Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"],
        Field(
            description="`pending`, `running`, `succeeded`, `failed` (a business refusal), `dead_letter` (retries exhausted) or `canceled`",
            title="Status",
        ),
    ]
    attempts: Annotated[
        int, Field(description="Attempts made so far", title="Attempts")
    ]
    last_error: Annotated[
        str | None,
        Field(description="Why the last attempt failed, if it did", title="Last Error"),
    ]
    resource: Annotated[
        str | None,
        Field(
            description="The id of the object the operation acts on", title="Resource"
        ),
    ]
    updated: Annotated[
        int,
        Field(
            description="When the operation last changed, in Unix seconds",
            title="Updated",
        ),
    ]


class OrderBind(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    expected_version: Annotated[
        int,
        Field(
            description="The order's `version` as you last read it",
            ge=1,
            title="Expected Version",
        ),
    ]
    payment_intent_id: Annotated[
        str,
        Field(
            description="A `pi_` created with capture_method manual, for the order's amount and currency",
            max_length=255,
            min_length=1,
            title="Payment Intent Id",
        ),
    ]


class ExternalReference1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Your own reference for the order",
            max_length=255,
            min_length=1,
            title="External Reference",
        ),
    ]


class OrderLineIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    description: Annotated[
        str,
        Field(
            description="What the line is: 1 to 500 characters",
            max_length=500,
            min_length=1,
            title="Description",
        ),
    ]
    quantity: Annotated[
        int | None,
        Field(description="How many: 1 to 10000", ge=1, le=10000, title="Quantity"),
    ] = 1
    unit_amount: Annotated[
        int,
        Field(
            description="The price of one, in minor units",
            ge=1,
            le=99999999,
            title="Unit Amount",
        ),
    ]


class OrderLineOut(BaseModel):
    description: Annotated[
        str, Field(description="What the line is", title="Description")
    ]
    quantity: Annotated[int, Field(description="How many", title="Quantity")]
    unit_amount: Annotated[
        int, Field(description="The price of one, in minor units", title="Unit Amount")
    ]
    amount: Annotated[
        int,
        Field(
            description="`quantity` times `unit_amount`, in minor units", title="Amount"
        ),
    ]


class OrderOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["order"], Field(description="The object's type.", title="Object")
    ] = "order"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    status: Annotated[
        Literal["pending", "preparing", "canceled"],
        Field(description="`pending`, `preparing` or `canceled`", title="Status"),
    ]
    version: Annotated[
        int,
        Field(
            description="Increases with every change; send it back as `expected_version`",
            title="Version",
        ),
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    amount_total: Annotated[
        int,
        Field(description="The order's total, in minor units", title="Amount Total"),
    ]
    lines: Annotated[
        list[OrderLineOut], Field(description="The order's lines", title="Lines")
    ]
    payment_intent: Annotated[
        str | None,
        Field(
            description="The bound `pi_` payment; null until bound",
            title="Payment Intent",
        ),
    ]
    external_reference: Annotated[
        str | None, Field(description="Your own reference", title="External Reference")
    ]
    preparation_started_at: Annotated[
        int | None,
        Field(
            description="When preparation started (and the payment was captured), in Unix seconds",
            title="Preparation Started At",
        ),
    ]
    canceled_at: Annotated[
        int | None,
        Field(
            description="When the order was canceled, in Unix seconds",
            title="Canceled At",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class OrderTransition(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    expected_version: Annotated[
        int,
        Field(
            description="The order's `version` as you last read it",
            ge=1,
            title="Expected Version",
        ),
    ]


class PaymentErrorOut(BaseModel):
    type: Annotated[
        str,
        Field(
            description="The error's family, `card_error` for declines", title="Type"
        ),
    ]
    code: Annotated[
        str,
        Field(
            description="Why the payment failed, such as `card_declined`", title="Code"
        ),
    ]
    decline_code: Annotated[
        str | None,
        Field(
            description="The network's reason, such as `insufficient_funds`",
            title="Decline Code",
        ),
    ]
    message: Annotated[
        str, Field(description="A human-readable explanation", title="Message")
    ]
    payment_method: Annotated[
        str | None,
        Field(
            description="The `pm_` id of the card that failed, if saved",
            title="Payment Method",
        ),
    ]


class PaymentIntentCancel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    cancellation_reason: Annotated[
        Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"] | None,
        Field(description="Why the payment is canceled", title="Cancellation Reason"),
    ] = None


class AmountToCapture(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="At most the authorized amount; defaults to all of it",
            ge=1,
            le=99999999,
            title="Amount To Capture",
        ),
    ]


class PaymentIntentCapture(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    amount_to_capture: Annotated[
        AmountToCapture | None,
        Field(
            description="At most the authorized amount; defaults to all of it",
            title="Amount To Capture",
        ),
    ] = None


class PaymentMethod(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A saved card of the payment's customer",
            max_length=255,
            min_length=1,
            title="Payment Method",
        ),
    ]


class CardToken(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The card as the processor's own fields collected it in the payer's browser: the `tok_…` token Stripe.js `createToken` made (or a `pm_…` payment method), so that the number never reaches moneyrail. Environments on a real processor (every live one, and a sandbox set to Stripe's test mode) take only this; the sandbox simulator takes `card` instead. Exclusive with `card`.",
            pattern="^(tok|pm)_[A-Za-z0-9_]{1,250}$",
            title="Card Token",
        ),
    ]


class ReturnUrl1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Where bank authentication returns to",
            max_length=2048,
            pattern="^https?://",
            title="Return Url",
        ),
    ]


class PaymentIntentConfirm(BaseModel):
    """
    Pays with a saved card of the payment's customer (`payment_method`), or with a new card. The card comes in one of two shapes, by the environment's processor (CONVENTIONS.md §6): `card`, the digits as typed, on the sandbox simulator only; or `card_token`, the token Stripe.js made in the payer's browser (`stripe.createToken(cardElement)`), on every live environment and on a sandbox set to Stripe's test mode, where a typed `card` is refused (400 `parameter_invalid`, `card_token_required`) and nothing is recorded. The two are exclusive (400 `parameters_exclusive`).
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    client_secret: Annotated[
        str,
        Field(
            description="The payment's `client_secret`, from its creation answer",
            max_length=255,
            min_length=1,
            title="Client Secret",
        ),
    ]
    payment_method: Annotated[
        PaymentMethod | None,
        Field(
            description="A saved card of the payment's customer", title="Payment Method"
        ),
    ] = None
    card: Annotated[
        CardIn | None,
        Field(
            description="A new card as typed: the sandbox simulator only (elsewhere `card_token`); exclusive with `card_token` and `payment_method`"
        ),
    ] = None
    card_token: Annotated[
        CardToken | None,
        Field(
            description="The card as the processor's own fields collected it in the payer's browser: the `tok_…` token Stripe.js `createToken` made (or a `pm_…` payment method), so that the number never reaches moneyrail. Environments on a real processor (every live one, and a sandbox set to Stripe's test mode) take only this; the sandbox simulator takes `card` instead. Exclusive with `card`.",
            title="Card Token",
        ),
    ] = None
    save_payment_method: Annotated[
        bool | None,
        Field(
            description="The customer's consent to keep the card",
            title="Save Payment Method",
        ),
    ] = False
    return_url: Annotated[
        ReturnUrl1 | None,
        Field(description="Where bank authentication returns to", title="Return Url"),
    ] = None


class Customer(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A `cus_` id; without it the payment is anonymous",
            max_length=255,
            min_length=1,
            title="Customer",
        ),
    ]


class PaymentMethod1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A saved card of `customer`",
            max_length=255,
            min_length=1,
            title="Payment Method",
        ),
    ]


class Merchant(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Marketplace payments (platform installations)",
            max_length=255,
            min_length=1,
            title="Merchant",
        ),
    ]


class ExternalReference2(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Your own reference",
            max_length=255,
            min_length=1,
            title="External Reference",
        ),
    ]


class Description2(RootModel[str]):
    root: Annotated[
        str,
        Field(description="Shown on the receipt", max_length=1000, title="Description"),
    ]


class ReceiptPhone(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="E.164; an SMS receipt goes there",
            pattern="^\\+[1-9][0-9]{6,14}$",
            title="Receipt Phone",
        ),
    ]


class PaymentIntentCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    amount: Annotated[
        int,
        Field(
            description="What the payer pays, in minor units",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]
    capture_method: Annotated[
        Literal["automatic", "manual"] | None,
        Field(
            description="`manual`: authorize now, capture later with /capture",
            title="Capture Method",
        ),
    ] = "automatic"
    customer: Annotated[
        Customer | None,
        Field(
            description="A `cus_` id; without it the payment is anonymous",
            title="Customer",
        ),
    ] = None
    payment_method: Annotated[
        PaymentMethod1 | None,
        Field(description="A saved card of `customer`", title="Payment Method"),
    ] = None
    merchant: Annotated[
        Merchant | None,
        Field(
            description="Marketplace payments (platform installations)",
            title="Merchant",
        ),
    ] = None
    distribution: Annotated[
        DistributionIn | None,
        Field(description="How a platform's payment is shared out among recipients"),
    ] = None
    external_reference: Annotated[
        ExternalReference2 | None,
        Field(description="Your own reference", title="External Reference"),
    ] = None
    description: Annotated[
        Description2 | None,
        Field(description="Shown on the receipt", title="Description"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None
    receipt_email: Annotated[
        str | None,
        Field(description="Defaults to the customer's e-mail", title="Receipt Email"),
    ] = None
    receipt_phone: Annotated[
        ReceiptPhone | None,
        Field(description="E.164; an SMS receipt goes there", title="Receipt Phone"),
    ] = None


class PaymentIntentOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["payment_intent"],
        Field(description="The object's type.", title="Object"),
    ] = "payment_intent"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    amount: Annotated[
        int, Field(description="What the payer pays, in minor units", title="Amount")
    ]
    amount_capturable: Annotated[
        int,
        Field(description="Authorized and not yet captured", title="Amount Capturable"),
    ]
    amount_received: Annotated[
        int, Field(description="Captured so far", title="Amount Received")
    ]
    amount_refunded: Annotated[
        int, Field(description="Refunded so far", title="Amount Refunded")
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    status: Annotated[
        str,
        Field(
            description="`requires_payment_method`, `requires_confirmation`, `requires_action`, `processing`, `requires_capture`, `succeeded` or `canceled`",
            title="Status",
        ),
    ]
    capture_method: Annotated[
        str, Field(description="`automatic` or `manual`", title="Capture Method")
    ]
    client_secret: Annotated[
        str | None,
        Field(description="Only in the creation answer", title="Client Secret"),
    ]
    publishable_key: Annotated[
        str | None,
        Field(
            description="The key a client confirms this payment with",
            title="Publishable Key",
        ),
    ]
    customer: Annotated[
        str | None, Field(description="The `cus_` id paying, if any", title="Customer")
    ]
    payment_method: Annotated[
        str | None,
        Field(
            description="The `pm_` id of the card used, once known",
            title="Payment Method",
        ),
    ]
    merchant: Annotated[
        str | None,
        Field(
            description="The `mer_` id selling (marketplace payments)", title="Merchant"
        ),
    ]
    distribution: Annotated[
        dict[str, Any] | None,
        Field(
            description="How the payment is shared out, if it is", title="Distribution"
        ),
    ]
    external_reference: Annotated[
        str | None, Field(description="Your own reference", title="External Reference")
    ]
    description: Annotated[
        str | None, Field(description="Shown on the receipt", title="Description")
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]
    receipt_email: Annotated[
        str | None, Field(description="Where the receipt goes", title="Receipt Email")
    ]
    fees: Annotated[
        FeesOut, Field(description="The service's commission on this payment")
    ]
    next_action: Annotated[
        dict[str, Any] | None,
        Field(
            description="What the payer must do next (`redirect_to_url` for bank authentication)",
            title="Next Action",
        ),
    ]
    last_payment_error: Annotated[
        PaymentErrorOut | None, Field(description="Why the last attempt failed")
    ]
    cancellation_reason: Annotated[
        str | None,
        Field(description="Why the payment was canceled", title="Cancellation Reason"),
    ]
    canceled_at: Annotated[
        int | None,
        Field(description="When it was canceled, in Unix seconds", title="Canceled At"),
    ]


class Amount(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="A new amount, before confirmation",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]


class PaymentMethod2(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A saved card of the customer",
            max_length=255,
            min_length=1,
            title="Payment Method",
        ),
    ]


class PaymentIntentUpdate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    amount: Annotated[
        Amount | None,
        Field(description="A new amount, before confirmation", title="Amount"),
    ] = None
    payment_method: Annotated[
        PaymentMethod2 | None,
        Field(description="A saved card of the customer", title="Payment Method"),
    ] = None
    description: Annotated[
        Description2 | None,
        Field(description="Shown on the receipt", title="Description"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(description="Merged; an empty value removes a key", title="Metadata"),
    ] = None
    receipt_email: Annotated[
        str | None, Field(description="Where the receipt goes", title="Receipt Email")
    ] = None


class PaymentMethodOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["payment_method"],
        Field(description="The object's type.", title="Object"),
    ] = "payment_method"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    type: Annotated[
        Literal["card"],
        Field(description="The kind of method; cards only", title="Type"),
    ] = "card"
    customer: Annotated[
        str | None,
        Field(
            description="The customer it is attached to; null once detached",
            title="Customer",
        ),
    ]
    card: Annotated[
        CardOut, Field(description="What can be shown of the card; never its number")
    ]
    preferred: Annotated[
        bool,
        Field(
            description="The customer's preferred method for payments",
            title="Preferred",
        ),
    ]
    merchant: Annotated[
        str | None,
        Field(
            description="The merchant whose own payment account holds the card (direct model); null: the installation's account, shared by its merchants in a platform installation",
            title="Merchant",
        ),
    ]


class Merchant1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The `mer_` id selling (platforms)",
            max_length=255,
            min_length=1,
            title="Merchant",
        ),
    ]


class PaymentQuoteCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    amount: Annotated[
        int,
        Field(
            description="The payment's amount, in minor units",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]
    merchant: Annotated[
        Merchant1 | None,
        Field(description="The `mer_` id selling (platforms)", title="Merchant"),
    ] = None
    distribution: Annotated[
        DistributionIn | None, Field(description="The shares, as on a payment")
    ] = None


class PayoutCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    amount: Annotated[
        int,
        Field(
            description="How much to pay out, in minor units, from the available balance",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]
    currency: Annotated[
        str,
        Field(
            description="The balance's currency: a lowercase ISO 4217 code",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]
    method: Annotated[
        Literal["standard", "instant"] | None,
        Field(
            description="`standard` arrives on the next business days; `instant` within minutes, for a fee",
            title="Method",
        ),
    ] = "standard"
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class PayoutOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["payout"], Field(description="The object's type.", title="Object")
    ] = "payout"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    connected_account: Annotated[
        str | None,
        Field(
            description="The `acct_` connected account paid out; null for the installation's own balance",
            title="Connected Account",
        ),
    ]
    amount: Annotated[
        int,
        Field(description="Paid to the bank account, in minor units", title="Amount"),
    ]
    fee_amount: Annotated[
        int,
        Field(
            description="Taken from the balance on top of `amount` (instant payouts)",
            title="Fee Amount",
        ),
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    method: Annotated[
        Literal["standard", "instant"],
        Field(description="`standard` or `instant`", title="Method"),
    ]
    status: Annotated[
        Literal["pending", "in_transit", "paid", "failed", "canceled"],
        Field(
            description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), `in_transit`, `paid`, `failed` (final: refused for good, or its operation discarded by an operator; the money is back in the balance) or `canceled`",
            title="Status",
        ),
    ]
    arrival_date: Annotated[
        int | None,
        Field(
            description="Unix seconds on the environment's clock, once in transit",
            title="Arrival Date",
        ),
    ]
    failure_code: Annotated[
        str | None,
        Field(
            description="Why the payout failed (such as `account_closed`, or `operation_discarded`); null otherwise",
            title="Failure Code",
        ),
    ]
    failure_message: Annotated[
        str | None,
        Field(
            description="A human-readable failure reason; null otherwise",
            title="Failure Message",
        ),
    ]
    operation: Annotated[
        str | None,
        Field(
            description="The `op_` payout operation that hands it to the bank",
            title="Operation",
        ),
    ]
    last_operation_error: Annotated[
        OperationErrorOut | None,
        Field(
            description="The last error its operation met, while the object waits on it (the operation retries, or waits in `dead_letter` for an operator) and once it failed; null otherwise. The object stays in its pending state until the operation ends for good"
        ),
    ]
    original_payout: Annotated[
        str | None,
        Field(
            description="On a reversal: the paid payout whose money it brings back to the balance; else null",
            title="Original Payout",
        ),
    ]
    reversed_by: Annotated[
        str | None,
        Field(
            description="This payout's reversal (`po_`), once reversed; else null",
            title="Reversed By",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class PayoutReverse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class Name1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="An internal name for the price",
            max_length=250,
            min_length=1,
            title="Name",
        ),
    ]


class Amount1(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="The amount the processor's record will say, in minor units",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]


class ProcessorTransferChange(BaseModel):
    """
    A sandbox helper: make the processor's record of a transfer disagree with the ledger.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    amount: Annotated[
        Amount1 | None,
        Field(
            description="The amount the processor's record will say, in minor units",
            title="Amount",
        ),
    ] = None
    status: Annotated[
        Literal["paid", "reversed", "failed"] | None,
        Field(description="The status the processor's record will say", title="Status"),
    ] = None


class Description4(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Up to 1000 characters", max_length=1000, title="Description"
        ),
    ]


class ProductCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    name: Annotated[
        str,
        Field(
            description="Shown to payers, on the hosted checkout page: 1 to 250 characters",
            max_length=250,
            min_length=1,
            title="Name",
        ),
    ]
    description: Annotated[
        Description4 | None,
        Field(description="Up to 1000 characters", title="Description"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class ProductOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["product"], Field(description="Always `product`", title="Object")
    ] = "product"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    name: Annotated[str, Field(description="Shown to payers", title="Name")]
    description: Annotated[
        str | None,
        Field(
            description="The product's description; null when none was set",
            title="Description",
        ),
    ]
    active: Annotated[
        bool,
        Field(
            description="Whether the product takes new prices and subscriptions",
            title="Active",
        ),
    ]
    archived: Annotated[
        bool,
        Field(
            description="Archived for good: closed to new subscriptions; existing ones renew until cancelled",
            title="Archived",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them", title="Metadata"
        ),
    ]


class Name3(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="A new name: 1 to 250 characters",
            max_length=250,
            min_length=1,
            title="Name",
        ),
    ]


class Description5(RootModel[str]):
    root: Annotated[
        str,
        Field(description="A new description", max_length=1000, title="Description"),
    ]


class ProductUpdate(BaseModel):
    """
    Presentation and availability only: a product carries no financial terms.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    name: Annotated[
        Name3 | None, Field(description="A new name: 1 to 250 characters", title="Name")
    ] = None
    description: Annotated[
        Description5 | None, Field(description="A new description", title="Description")
    ] = None
    active: Annotated[
        bool | None,
        Field(
            description="`false` closes the product to new prices and subscriptions until set back to `true`; an archived product cannot be reactivated",
            title="Active",
        ),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Merged into the product's metadata; an empty value removes a key",
            title="Metadata",
        ),
    ] = None


class QuoteFeesOut(BaseModel):
    commission_basis_points: Annotated[
        int,
        Field(
            description="The commission policy's rate, in basis points",
            title="Commission Basis Points",
        ),
    ]
    commission_fixed_amount: Annotated[
        int,
        Field(
            description="The commission policy's fixed part, in minor units",
            title="Commission Fixed Amount",
        ),
    ]
    commission_reserve: Annotated[
        int,
        Field(
            description="Withheld at capture; 0 without a commission policy",
            title="Commission Reserve",
        ),
    ]
    prior_recovery: Annotated[
        int,
        Field(
            description="Earlier costs this payment would recover, at today's balance",
            title="Prior Recovery",
        ),
    ]
    amount_fixed: Annotated[
        bool,
        Field(
            description="True when the reserve fixes the payment's amount (rule 1 of 4.B)",
            title="Amount Fixed",
        ),
    ]
    processing_cost: Annotated[
        Literal["reported_after_capture"],
        Field(
            description="The real cost is known only after capture",
            title="Processing Cost",
        ),
    ] = "reported_after_capture"


class QuoteOut(BaseModel):
    object: Annotated[
        Literal["price_quote"],
        Field(description="Always `price_quote`", title="Object"),
    ] = "price_quote"
    price: Annotated[str, Field(description="The `price_` id quoted", title="Price")]
    quantity: Annotated[int, Field(description="The quantity quoted", title="Quantity")]
    amount: Annotated[
        int,
        Field(
            description="The exact total for `quantity`, in minor units; nothing is charged",
            title="Amount",
        ),
    ]
    currency: Annotated[
        str, Field(description="The price's currency", title="Currency")
    ]


class QuoteRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    quantity: Annotated[
        int,
        Field(
            description="The quantity to price: 1 to 10000",
            ge=1,
            le=10000,
            title="Quantity",
        ),
    ]


class ReadinessOut(BaseModel):
    status: Annotated[
        Literal["ok", "unavailable"],
        Field(description="`ok` when every check passed", title="Status"),
    ]
    checks: Annotated[
        dict[str, str],
        Field(
            description="Each dependency's state: `ok`, or `down: <reason>`",
            title="Checks",
        ),
    ]


class ReconciliationRunCreate(BaseModel):
    """
    A run takes no parameters (it compares every transfer of the environment), and still refuses
    unknown ones.
    """

    model_config = ConfigDict(
        extra="forbid",
    )


class ReconciliationRunOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["reconciliation_run"],
        Field(description="The object's type.", title="Object"),
    ] = "reconciliation_run"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    status: Annotated[
        Literal["pending", "completed", "failed"],
        Field(
            description="`pending` until its operation has compared the books, then `completed` (or `failed`)",
            title="Status",
        ),
    ]
    transfers_checked: Annotated[
        int,
        Field(
            description="How many transfers were compared", title="Transfers Checked"
        ),
    ]
    issues: Annotated[
        list[IssueOut],
        Field(
            description="Every disagreement found between the ledger and the processor",
            title="Issues",
        ),
    ]
    operation: Annotated[
        OperationOut | None,
        Field(
            description="The `reconciliation` operation doing the comparison (on creation and retrieval)"
        ),
    ]
    completed_at: Annotated[
        int | None,
        Field(
            description="When the run completed, in Unix seconds", title="Completed At"
        ),
    ]


class Amount2(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Defaults to everything not yet refunded",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]


class RefundCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    payment_intent: Annotated[
        str,
        Field(
            description="The `pi_` id of a succeeded payment",
            max_length=255,
            min_length=1,
            title="Payment Intent",
        ),
    ]
    amount: Annotated[
        Amount2 | None,
        Field(description="Defaults to everything not yet refunded", title="Amount"),
    ] = None
    reason: Annotated[
        Literal["duplicate", "fraudulent", "requested_by_customer"] | None,
        Field(description="Why the money goes back", title="Reason"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class RefundOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["refund"], Field(description="The object's type.", title="Object")
    ] = "refund"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    payment_intent: Annotated[
        str, Field(description="The `pi_` id refunded", title="Payment Intent")
    ]
    amount: Annotated[
        int, Field(description="Refunded, in minor units", title="Amount")
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    status: Annotated[
        str,
        Field(
            description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator; the amount is held), `succeeded` or `failed` (final: refused for good, or its operation discarded by an operator; the amount is free to refund again)",
            title="Status",
        ),
    ]
    reason: Annotated[
        str | None, Field(description="Why the money goes back", title="Reason")
    ]
    failure_reason: Annotated[
        str | None,
        Field(
            description="Why it failed, when `failed`: `<code>: <message>` (`operation_discarded` for a discard)",
            title="Failure Reason",
        ),
    ]
    operation: Annotated[
        str | None,
        Field(description="The `op_` id carrying the refund out", title="Operation"),
    ]
    last_operation_error: Annotated[
        OperationErrorOut | None,
        Field(
            description="The last error its operation met, while the object waits on it (the operation retries, or waits in `dead_letter` for an operator) and once it failed; null otherwise. The object stays in its pending state until the operation ends for good"
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class Requirements(BaseModel):
    currently_due: Annotated[
        list[str],
        Field(
            description="What the merchant must still provide", title="Currently Due"
        ),
    ]
    past_due: Annotated[
        list[str],
        Field(description="What it failed to provide in time", title="Past Due"),
    ]
    disabled_reason: Annotated[
        str | None,
        Field(
            description="Why a capability is not active, if one is not",
            title="Disabled Reason",
        ),
    ]


class RequirementsOut(BaseModel):
    currently_due: Annotated[
        list[str], Field(description="What must be provided now", title="Currently Due")
    ]
    eventually_due: Annotated[
        list[str],
        Field(
            description="What will have to be provided later", title="Eventually Due"
        ),
    ]
    past_due: Annotated[
        list[str], Field(description="What was not provided in time", title="Past Due")
    ]
    disabled_reason: Annotated[
        str | None,
        Field(
            description="Why a capability is not active, if one is not",
            title="Disabled Reason",
        ),
    ]


class Amount3(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Defaults to everything not yet reversed",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]


class ReversalCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    amount: Annotated[
        Amount3 | None,
        Field(description="Defaults to everything not yet reversed", title="Amount"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class ReversalOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["transfer_reversal"],
        Field(description="The object's type.", title="Object"),
    ] = "transfer_reversal"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    transfer: Annotated[
        str, Field(description="The `tr_` id reversed", title="Transfer")
    ]
    amount: Annotated[
        int, Field(description="What came back, in minor units", title="Amount")
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    refund: Annotated[
        str | None,
        Field(
            description="The refund that reversed it, when a refund did", title="Refund"
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class ReviewOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["review"], Field(description="The object's type.", title="Object")
    ] = "review"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    payment_intent: Annotated[
        str,
        Field(
            description="The `pi_` payment held for this review", title="Payment Intent"
        ),
    ]
    reason: Annotated[
        Literal["rule", "value_list"],
        Field(
            description="`rule`: the network rates the card's risk elevated; `value_list`: a listed value matched",
            title="Reason",
        ),
    ]
    matched: Annotated[
        dict[str, str],
        Field(
            description="The value list and the item type that matched, if any",
            title="Matched",
        ),
    ]
    open: Annotated[
        bool, Field(description="true until the review is approved", title="Open")
    ]
    status: Annotated[
        Literal["open", "approved"],
        Field(description="`open` or `approved`", title="Status"),
    ]
    closed_reason: Annotated[
        Literal["approved"] | None,
        Field(
            description="Why the review closed; null while open", title="Closed Reason"
        ),
    ]
    approved_at: Annotated[
        int | None,
        Field(
            description="When it was approved, in Unix seconds; null while open",
            title="Approved At",
        ),
    ]


class SecretRotation(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    expire_previous_in_seconds: Annotated[
        int | None,
        Field(
            description="How long the previous secret keeps signing beside the new one (0: at once; default 24 hours; at most 7 days)",
            ge=0,
            le=604800,
            title="Expire Previous In Seconds",
        ),
    ] = 86400


class SetupIntentConfirm(BaseModel):
    """
    Saves the card for the setup intent's customer. The card comes in one of two shapes, by the environment's processor (CONVENTIONS.md §6): `card`, the digits as typed, on the sandbox simulator only; or `card_token`, the token Stripe.js made in the payer's browser (`stripe.createToken(cardElement)`), on every live environment and on a sandbox set to Stripe's test mode, where a typed `card` is refused (400 `parameter_invalid`, `card_token_required`) and nothing is recorded. The two are exclusive (400 `parameters_exclusive`).
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    client_secret: Annotated[
        str,
        Field(
            description="The setup intent's `client_secret`",
            max_length=255,
            min_length=1,
            title="Client Secret",
        ),
    ]
    card: Annotated[
        CardIn | None,
        Field(
            description="The card to save, as typed: the sandbox simulator only (elsewhere `card_token`); exclusive with `card_token`"
        ),
    ] = None
    card_token: Annotated[
        CardToken | None,
        Field(
            description="The card as the processor's own fields collected it in the payer's browser: the `tok_…` token Stripe.js `createToken` made (or a `pm_…` payment method), so that the number never reaches moneyrail. Environments on a real processor (every live one, and a sandbox set to Stripe's test mode) take only this; the sandbox simulator takes `card` instead. Exclusive with `card`.",
            title="Card Token",
        ),
    ] = None


class SetupIntentCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class SetupIntentOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["setup_intent"], Field(description="The object's type.", title="Object")
    ] = "setup_intent"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    customer: Annotated[
        str, Field(description="The `cus_` id the card is saved for", title="Customer")
    ]
    status: Annotated[
        Literal["requires_payment_method", "succeeded", "canceled"],
        Field(
            description="`succeeded` once a card is saved; `canceled` when none was by `expires_at`",
            title="Status",
        ),
    ]
    cancellation_reason: Annotated[
        Literal["abandoned"] | None,
        Field(
            description="Why it was canceled: `abandoned`, not confirmed before `expires_at`; else null",
            title="Cancellation Reason",
        ),
    ]
    usage: Annotated[
        Literal["off_session"],
        Field(
            description="The saved card may be charged without the customer",
            title="Usage",
        ),
    ]
    payment_method: Annotated[
        str | None,
        Field(
            description="The `pm_` id saved, once `succeeded`", title="Payment Method"
        ),
    ]
    client_secret: Annotated[
        str | None,
        Field(
            description="Shown once, in the answer that creates it; else null",
            title="Client Secret",
        ),
    ]
    expires_at: Annotated[
        int,
        Field(
            description="When it can no longer be confirmed, in Unix seconds (the sandbox clock in the sandbox)",
            title="Expires At",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class SubscriptionCancel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    at_period_end: Annotated[
        bool | None,
        Field(
            description="`true`: renewals stop and access lasts to the end of the paid period; `false`: canceled now. No refund either way",
            title="At Period End",
        ),
    ] = False


class SubscriptionChangeOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["subscription_change"],
        Field(description="The object's type.", title="Object"),
    ] = "subscription_change"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    subscription: Annotated[
        str, Field(description="The `sub_` id changed", title="Subscription")
    ]
    price: Annotated[str, Field(description="The proposed `price_` id", title="Price")]
    quantity: Annotated[
        int, Field(description="The proposed quantity", title="Quantity")
    ]
    currency: Annotated[
        str,
        Field(
            description="The subscription's currency (a change never alters it)",
            title="Currency",
        ),
    ]
    effective: Annotated[
        Literal["immediate", "next_cycle"],
        Field(description="`immediate` or `next_cycle`", title="Effective"),
    ]
    status: Annotated[
        Literal["open", "accepted", "awaiting_payment", "applied", "canceled", "expired"],
        Field(
            description="`open`, `accepted`, `awaiting_payment`, `applied`, `canceled` or `expired`",
            title="Status",
        ),
    ]
    expected_version: Annotated[
        int,
        Field(
            description="The `terms_version` this proposal was quoted against",
            title="Expected Version",
        ),
    ]
    current_amount: Annotated[
        int,
        Field(
            description="One cycle's total at the current terms, in minor units",
            title="Current Amount",
        ),
    ]
    amount: Annotated[
        int,
        Field(
            description="One cycle's total at the proposed terms, in minor units",
            title="Amount",
        ),
    ]
    amount_due: Annotated[
        int,
        Field(
            description="Payable now: ceil((amount - current_amount) x remaining / period) for `immediate`, 0 for `next_cycle`",
            title="Amount Due",
        ),
    ]
    expires_at: Annotated[
        int,
        Field(
            description="When an unaccepted proposal expires (15 minutes after it was quoted)",
            title="Expires At",
        ),
    ]
    subscription_invoice: Annotated[
        str | None,
        Field(
            description="The `upgrade` collection record of an immediate change's difference, once opened",
            title="Subscription Invoice",
        ),
    ]
    accepted_at: Annotated[
        int | None,
        Field(
            description="When the payer confirmed a next_cycle change",
            title="Accepted At",
        ),
    ]
    applied_at: Annotated[
        int | None,
        Field(description="When the new terms came into force", title="Applied At"),
    ]
    canceled_at: Annotated[
        int | None,
        Field(description="When the change was withdrawn", title="Canceled At"),
    ]


class Price1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="An active `price_` id; exclusive with `price_data`",
            max_length=255,
            min_length=1,
            title="Price",
        ),
    ]


class Merchant2(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="The connected merchant (`mer_`) this subscription sells for: active and able to take payments; a renewal after its grant was revoked stops for review (`merchant_grant_revoked`)",
            max_length=255,
            min_length=1,
            title="Merchant",
        ),
    ]


class SubscriptionInvoiceOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["subscription_invoice"],
        Field(
            description="Always `subscription_invoice`: a collection record",
            title="Object",
        ),
    ] = "subscription_invoice"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    subscription: Annotated[
        str, Field(description="The `sub_` id collected for", title="Subscription")
    ]
    billing_kind: Annotated[
        Literal["cycle", "upgrade"],
        Field(
            description="`cycle` for a cycle's collection, `upgrade` for a plan change's difference",
            title="Billing Kind",
        ),
    ]
    status: Annotated[
        Literal["open", "paid", "failed", "void"],
        Field(
            description="`open` (its renewal charges it, retries, or waits in `dead_letter` for an operator), `paid`, `failed` (declined, or its renewal discarded by an operator) or `void`",
            title="Status",
        ),
    ]
    amount: Annotated[
        int, Field(description="The amount collected, in minor units", title="Amount")
    ]
    currency: Annotated[
        str, Field(description="A lowercase ISO 4217 currency code", title="Currency")
    ]
    period_start: Annotated[
        int,
        Field(
            description="Start of the period paid for, Unix seconds (UTC)",
            title="Period Start",
        ),
    ]
    period_end: Annotated[
        int,
        Field(
            description="End of the period paid for, Unix seconds (UTC)",
            title="Period End",
        ),
    ]
    payment_intent: Annotated[
        str,
        Field(
            description="The `pi_` id of the payment collecting it",
            title="Payment Intent",
        ),
    ]
    terms_version: Annotated[
        int,
        Field(
            description="The subscription's terms_version it was opened under",
            title="Terms Version",
        ),
    ]
    distribution_version: Annotated[
        int | None,
        Field(
            description="The distribution_version snapshot it distributes; null without a distribution",
            title="Distribution Version",
        ),
    ]
    allocation_group: Annotated[
        str | None,
        Field(
            description="The allocation group distributing it, once committed",
            title="Allocation Group",
        ),
    ]
    settlement_status: Annotated[
        str,
        Field(
            description="`not_applicable`, `pending`, `distributing`, `settled` or `failed`: a collected payment is not a finished distribution",
            title="Settlement Status",
        ),
    ]
    failure_code: Annotated[
        str | None,
        Field(
            description="The decline code of a failed collection (`operation_discarded` when an operator discarded its renewal); else null",
            title="Failure Code",
        ),
    ]
    operation: Annotated[
        str | None,
        Field(
            description="The `op_` renewal operation that charges it (GET /v1/operations/{id}); null for a collection the payer pays at a checkout",
            title="Operation",
        ),
    ]
    last_operation_error: Annotated[
        OperationErrorOut | None,
        Field(
            description="The last error its operation met, while the object waits on it (the operation retries, or waits in `dead_letter` for an operator) and once it failed; null otherwise. The object stays in its pending state until the operation ends for good"
        ),
    ]
    paid_at: Annotated[
        int | None,
        Field(description="When it was paid, Unix seconds; else null", title="Paid At"),
    ]


class SubscriptionOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["subscription"],
        Field(description="Always `subscription`", title="Object"),
    ] = "subscription"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    customer: Annotated[
        str, Field(description="The `cus_` id who pays", title="Customer")
    ]
    merchant: Annotated[
        str | None,
        Field(
            description="The connected merchant (`mer_`) it sells for, if one was named",
            title="Merchant",
        ),
    ] = None
    price: Annotated[
        str, Field(description="The `price_` id of the current terms", title="Price")
    ]
    quantity: Annotated[
        int,
        Field(
            description="The quantity of the current terms: 1 to 10000",
            title="Quantity",
        ),
    ]
    currency: Annotated[
        str, Field(description="The subscription's one currency", title="Currency")
    ]
    amount: Annotated[
        int,
        Field(description="What one cycle costs at the current terms", title="Amount"),
    ]
    interval: Annotated[
        Literal["month", "year"],
        Field(
            description="The billing period's unit: `month` or `year`", title="Interval"
        ),
    ]
    interval_count: Annotated[
        int,
        Field(description="Periods of `interval` per cycle", title="Interval Count"),
    ]
    status: Annotated[
        Literal["incomplete", "active", "past_due", "canceled", "review_required"],
        Field(
            description="`incomplete` (first payment not made), `active`, `past_due` (a renewal declined), `canceled` or `review_required` (a safety check stopped automation)",
            title="Status",
        ),
    ]
    review_reason: Annotated[
        str | None,
        Field(
            description="Why automation stopped (`review_required`); else null",
            title="Review Reason",
        ),
    ]
    entitled: Annotated[
        bool,
        Field(description="now < access_until, whatever the status", title="Entitled"),
    ]
    access_until: Annotated[
        int | None,
        Field(
            description="End of the paid access, Unix seconds; the source for access decisions; null until the first payment",
            title="Access Until",
        ),
    ]
    current_period_start: Annotated[
        int,
        Field(
            description="Start of the current period, Unix seconds (UTC)",
            title="Current Period Start",
        ),
    ]
    current_period_end: Annotated[
        int,
        Field(
            description="End of the current period, Unix seconds (UTC)",
            title="Current Period End",
        ),
    ]
    cancel_at_period_end: Annotated[
        bool,
        Field(
            description="A scheduled cancellation: renewals stop; the status stays `active` to the period end",
            title="Cancel At Period End",
        ),
    ]
    canceled_at: Annotated[
        int | None,
        Field(
            description="When the subscription was canceled, Unix seconds; else null",
            title="Canceled At",
        ),
    ]
    terms_version: Annotated[
        int,
        Field(
            description="Version of the price and quantity terms", title="Terms Version"
        ),
    ]
    distribution_version: Annotated[
        int,
        Field(
            description="Version of the distribution rules",
            title="Distribution Version",
        ),
    ]
    distribution: Annotated[
        dict[str, Any] | None,
        Field(
            description="Who receives each cycle, in basis points (platform installations); else null",
            title="Distribution",
        ),
    ]
    latest_invoice: Annotated[
        str | None,
        Field(
            description="The `subinv_` id of the latest collection record",
            title="Latest Invoice",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them", title="Metadata"
        ),
    ]


class Amount4(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Defaults to everything not refunded",
            ge=1,
            le=99999999,
            title="Amount",
        ),
    ]


class TestDisputeCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    payment_intent: Annotated[
        str,
        Field(
            description="A captured `pi_` payment of this installation",
            max_length=255,
            min_length=1,
            title="Payment Intent",
        ),
    ]
    reason: Annotated[
        Literal["bank_cannot_process", "credit_not_processed", "customer_initiated", "debit_not_authorized", "duplicate", "fraudulent", "general", "incorrect_account_details", "insufficient_funds", "product_not_received", "product_unacceptable", "subscription_canceled", "unrecognized"] | None,
        Field(description="The cardholder's bank's reason", title="Reason"),
    ] = "fraudulent"
    amount: Annotated[
        Amount4 | None,
        Field(description="Defaults to everything not refunded", title="Amount"),
    ] = None


class TierIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    up_to: Annotated[
        int | None,
        Field(
            description="Upper bound of the tier (inclusive), ascending across tiers; null for the last",
            title="Up To",
        ),
    ]
    unit_amount: Annotated[
        int,
        Field(
            description="Minor units per unit in this tier; not negative",
            title="Unit Amount",
        ),
    ]
    flat_amount: Annotated[
        int | None,
        Field(
            description="Minor units added once when the tier is used; not negative",
            title="Flat Amount",
        ),
    ] = 0


class TierOut(BaseModel):
    up_to: Annotated[
        int | None,
        Field(
            description="Upper bound of the tier (inclusive); null for the last",
            title="Up To",
        ),
    ]
    unit_amount: Annotated[
        int, Field(description="Minor units per unit in this tier", title="Unit Amount")
    ]
    flat_amount: Annotated[
        int,
        Field(
            description="Minor units added once when the tier is used",
            title="Flat Amount",
        ),
    ]


class Currency(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Must be the payment's; defaults to it",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]


class TransferCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    destination: Annotated[
        str,
        Field(
            description="A connected account (`acct_`) of this installation",
            max_length=255,
            min_length=1,
            title="Destination",
        ),
    ]
    amount: Annotated[
        int,
        Field(
            description="What moves, in minor units", ge=1, le=99999999, title="Amount"
        ),
    ]
    source_transaction: Annotated[
        str,
        Field(
            description="The captured `pi_` payment the money comes from",
            max_length=255,
            min_length=1,
            title="Source Transaction",
        ),
    ]
    currency: Annotated[
        Currency | None,
        Field(description="Must be the payment's; defaults to it", title="Currency"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class TransferOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["transfer"], Field(description="The object's type.", title="Object")
    ] = "transfer"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    amount: Annotated[
        int, Field(description="What moved, in minor units", title="Amount")
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    destination: Annotated[
        str, Field(description="The `acct_` id that received it", title="Destination")
    ]
    source_transaction: Annotated[
        str,
        Field(
            description="The `pi_` payment the money came from",
            title="Source Transaction",
        ),
    ]
    allocation_group: Annotated[
        str,
        Field(
            description="The allocation group it carries out", title="Allocation Group"
        ),
    ]
    allocation: Annotated[
        str, Field(description="The allocation it carries out", title="Allocation")
    ]
    status: Annotated[
        Literal["pending", "paid", "failed", "reversed", "canceled"],
        Field(
            description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), `paid`, `failed` (final: the operation ended for good, refused or discarded), `reversed` or `canceled` (never sent: a refund of its subscription payment stopped it)",
            title="Status",
        ),
    ]
    amount_reversed: Annotated[
        int,
        Field(
            description="What was reversed so far, in minor units",
            title="Amount Reversed",
        ),
    ]
    reversals: Annotated[
        list[ReversalOut],
        Field(description="Its reversals, newest first", title="Reversals"),
    ]
    failure_code: Annotated[
        str | None,
        Field(
            description="Why it failed, when `failed`: a refusal's code, or `operation_discarded`",
            title="Failure Code",
        ),
    ]
    failure_message: Annotated[
        str | None,
        Field(
            description="A human-readable explanation of the failure",
            title="Failure Message",
        ),
    ]
    operation: Annotated[
        str | None,
        Field(
            description="The `op_` operation that makes it (its allocation group's commit): GET /v1/operations/{id}",
            title="Operation",
        ),
    ]
    last_operation_error: Annotated[
        OperationErrorOut | None,
        Field(
            description="The last error its operation met, while the object waits on it (the operation retries, or waits in `dead_letter` for an operator) and once it failed; null otherwise. The object stays in its pending state until the operation ends for good"
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class ValueListCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    alias: Annotated[
        str,
        Field(
            description="Unique in the installation and environment: lowercase letters, digits, underscores",
            pattern="^[a-z0-9_]{1,100}$",
            title="Alias",
        ),
    ]
    name: Annotated[
        str,
        Field(
            description="A name for people: 1 to 100 characters",
            max_length=100,
            min_length=1,
            title="Name",
        ),
    ]
    item_type: Annotated[
        Literal["card_fingerprint", "email", "ip_address", "customer_id", "card_country"],
        Field(
            description="What the items are: card fingerprints, e-mails, IPs, customer ids or card countries",
            title="Item Type",
        ),
    ]
    action: Annotated[
        Literal["block", "review"],
        Field(
            description="What a payment matching an item gets: a decline, or a review",
            title="Action",
        ),
    ]
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class ValueListItemCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    value: Annotated[
        str,
        Field(
            description="The value to match, of the list's `item_type`",
            max_length=500,
            min_length=1,
            title="Value",
        ),
    ]


class ValueListItemOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["radar.value_list_item"],
        Field(description="The object's type.", title="Object"),
    ] = "radar.value_list_item"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    value_list: Annotated[
        str, Field(description="The `rl_` value list it belongs to", title="Value List")
    ]
    value: Annotated[str, Field(description="The listed value", title="Value")]


class ValueListOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["radar.value_list"],
        Field(description="The object's type.", title="Object"),
    ] = "radar.value_list"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    alias: Annotated[str, Field(description="The list's unique alias", title="Alias")]
    name: Annotated[str, Field(description="The list's name", title="Name")]
    item_type: Annotated[
        Literal["card_fingerprint", "email", "ip_address", "customer_id", "card_country"],
        Field(description="What the list's items are", title="Item Type"),
    ]
    action: Annotated[
        Literal["block", "review"],
        Field(
            description="`block` declines a matching payment; `review` holds it for a review",
            title="Action",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class WebhookDeliveryOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The delivery's id, which is its operation's (op_…)", title="Id"
        ),
    ]
    object: Annotated[
        Literal["webhook_delivery"],
        Field(description="The object's type.", title="Object"),
    ] = "webhook_delivery"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC).",
            title="Created",
        ),
    ]
    webhook_endpoint: Annotated[
        str,
        Field(description="The `we_` endpoint delivered to", title="Webhook Endpoint"),
    ]
    event: Annotated[
        str, Field(description="The `evt_` event delivered", title="Event")
    ]
    event_type: Annotated[
        str, Field(description="The event's type", title="Event Type")
    ]
    status: Annotated[
        str,
        Field(
            description="pending, running, succeeded, failed, dead_letter or canceled",
            title="Status",
        ),
    ]
    operation: Annotated[
        str,
        Field(
            description="The `op_` operation that delivers it: the delivery's own id",
            title="Operation",
        ),
    ]
    next_attempt_at: Annotated[
        int | None,
        Field(
            description="While pending: when the next attempt is due",
            title="Next Attempt At",
        ),
    ]
    resend_of: Annotated[
        str | None,
        Field(
            description="The delivery this one resends; null for a first delivery",
            title="Resend Of",
        ),
    ]
    attempts: Annotated[
        list[DeliveryAttemptOut],
        Field(description="Every attempt, oldest first", title="Attempts"),
    ]


class Description6(RootModel[str]):
    root: Annotated[
        str,
        Field(description="A note for yourself", max_length=500, title="Description"),
    ]


class WebhookEndpointCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    url: Annotated[
        str,
        Field(
            description="Where events are posted; `https` to a public address in live mode",
            max_length=2048,
            min_length=1,
            title="Url",
        ),
    ]
    enabled_events: Annotated[
        list[Literal["*", "payment_intent.created", "payment_intent.requires_action", "payment_intent.amount_capturable_updated", "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled", "payment_intent.fees_finalized", "refund.created", "refund.updated", "refund.failed", "checkout.session.completed", "checkout.session.expired", "merchant.created", "merchant.connected", "merchant.denied", "merchant.revoked", "merchant.updated", "connected_account.created", "connected_account.updated", "allocation_group.created", "allocation_group.updated", "transfer.created", "transfer.paid", "transfer.failed", "transfer.canceled", "transfer.reversed", "transfer.reversal.created", "payout.created", "payout.updated", "payout.failed", "payout.paid", "payout.canceled", "payout.reversed", "payout.reversal.created", "payout.reversal.updated", "payout.reversal.failed", "payout.reversal.paid", "payout.reversal.canceled", "charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed", "charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated", "review.opened", "review.closed", "radar.value_list.created", "invoice.created", "invoice.finalized", "invoice.sent", "invoice.paid", "order.created", "order.payment_bound", "order.preparation_started", "order.canceled", "subscription.created", "subscription.updated", "subscription.invoice.paid", "subscription.invoice.failed", "subscription.change.accepted", "subscription.change.awaiting_payment", "subscription.change.applied", "subscription.change.canceled", "subscription.change.expired", "operation.succeeded", "operation.failed", "operation.dead_lettered"]],
        Field(
            description="Event types to deliver (see the README's table), or `*` for every one",
            max_length=100,
            min_length=1,
            title="Enabled Events",
        ),
    ]
    description: Annotated[
        Description6 | None,
        Field(description="A note for yourself", title="Description"),
    ] = None


class WebhookEndpointOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["webhook_endpoint"],
        Field(description="The object's type.", title="Object"),
    ] = "webhook_endpoint"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    url: Annotated[str, Field(description="Where events are posted", title="Url")]
    description: Annotated[
        str | None, Field(description="A note for yourself", title="Description")
    ]
    enabled_events: Annotated[
        list[str],
        Field(description="Event types sent, or `*` for all", title="Enabled Events"),
    ]
    status: Annotated[
        Literal["enabled", "disabled"],
        Field(
            description="`enabled`, or `disabled` while deliveries are paused",
            title="Status",
        ),
    ]
    previous_secret_expires_at: Annotated[
        int | None,
        Field(
            description="While set and in the future, deliveries carry a signature by the previous secret too",
            title="Previous Secret Expires At",
        ),
    ]
    secret: Annotated[
        str | None,
        Field(
            description="Only in the answer to the creation and to a secret rotation",
            title="Secret",
        ),
    ] = None


class Url(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Where events are posted",
            max_length=2048,
            min_length=1,
            title="Url",
        ),
    ]


class EnabledEvents(
    RootModel[list[Literal["*", "payment_intent.created", "payment_intent.requires_action", "payment_intent.amount_capturable_updated", "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled", "payment_intent.fees_finalized", "refund.created", "refund.updated", "refund.failed", "checkout.session.completed", "checkout.session.expired", "merchant.created", "merchant.connected", "merchant.denied", "merchant.revoked", "merchant.updated", "connected_account.created", "connected_account.updated", "allocation_group.created", "allocation_group.updated", "transfer.created", "transfer.paid", "transfer.failed", "transfer.canceled", "transfer.reversed", "transfer.reversal.created", "payout.created", "payout.updated", "payout.failed", "payout.paid", "payout.canceled", "payout.reversed", "payout.reversal.created", "payout.reversal.updated", "payout.reversal.failed", "payout.reversal.paid", "payout.reversal.canceled", "charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed", "charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated", "review.opened", "review.closed", "radar.value_list.created", "invoice.created", "invoice.finalized", "invoice.sent", "invoice.paid", "order.created", "order.payment_bound", "order.preparation_started", "order.canceled", "subscription.created", "subscription.updated", "subscription.invoice.paid", "subscription.invoice.failed", "subscription.change.accepted", "subscription.change.awaiting_payment", "subscription.change.applied", "subscription.change.canceled", "subscription.change.expired", "operation.succeeded", "operation.failed", "operation.dead_lettered"]]]
):
    root: Annotated[
        list[Literal["*", "payment_intent.created", "payment_intent.requires_action", "payment_intent.amount_capturable_updated", "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled", "payment_intent.fees_finalized", "refund.created", "refund.updated", "refund.failed", "checkout.session.completed", "checkout.session.expired", "merchant.created", "merchant.connected", "merchant.denied", "merchant.revoked", "merchant.updated", "connected_account.created", "connected_account.updated", "allocation_group.created", "allocation_group.updated", "transfer.created", "transfer.paid", "transfer.failed", "transfer.canceled", "transfer.reversed", "transfer.reversal.created", "payout.created", "payout.updated", "payout.failed", "payout.paid", "payout.canceled", "payout.reversed", "payout.reversal.created", "payout.reversal.updated", "payout.reversal.failed", "payout.reversal.paid", "payout.reversal.canceled", "charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed", "charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated", "review.opened", "review.closed", "radar.value_list.created", "invoice.created", "invoice.finalized", "invoice.sent", "invoice.paid", "order.created", "order.payment_bound", "order.preparation_started", "order.canceled", "subscription.created", "subscription.updated", "subscription.invoice.paid", "subscription.invoice.failed", "subscription.change.accepted", "subscription.change.awaiting_payment", "subscription.change.applied", "subscription.change.canceled", "subscription.change.expired", "operation.succeeded", "operation.failed", "operation.dead_lettered"]],
        Field(
            description="Event types to deliver (see the README's table), or `*` for every one",
            max_length=100,
            min_length=1,
            title="Enabled Events",
        ),
    ]


class WebhookEndpointUpdate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    url: Annotated[
        Url | None, Field(description="Where events are posted", title="Url")
    ] = None
    enabled_events: Annotated[
        EnabledEvents | None,
        Field(
            description="Event types to deliver, or `*` for every one; replaces the list",
            title="Enabled Events",
        ),
    ] = None
    description: Annotated[
        Description6 | None,
        Field(description="A note for yourself", title="Description"),
    ] = None
    disabled: Annotated[
        bool | None,
        Field(
            description="true stops deliveries (pending ones fail); false resumes them",
            title="Disabled",
        ),
    ] = None


class ErrorDetail(BaseModel):
    """
    What went wrong (CONVENTIONS.md §3). Some errors add fields, such as `decline_code`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Annotated[
        str,
        Field(
            description="The error's family: `invalid_request_error`, `authentication_error`, `card_error`, `permission_error`, `idempotency_error`, `rate_limit_error` or `api_error`.",
            examples=["invalid_request_error"],
            title="Type",
        ),
    ]
    code: Annotated[
        str,
        Field(
            description="A stable, machine-readable reason.",
            examples=["parameter_invalid"],
            title="Code",
        ),
    ]
    message: Annotated[
        str,
        Field(
            description="A human-readable explanation; may change, do not parse it.",
            title="Message",
        ),
    ]
    param: Annotated[
        str | None,
        Field(
            description="The parameter at fault, nested fields as `metadata[key]`; null when none is.",
            examples=["amount"],
            title="Param",
        ),
    ]
    request_id: Annotated[
        str,
        Field(
            description="The request's id, as in the `Request-Id` header.",
            title="Request Id",
        ),
    ]
    decline_code: Annotated[
        str | None,
        Field(
            description="On `card_declined`: why, such as `generic_decline` or `insufficient_funds`.",
            title="Decline Code",
        ),
    ] = None


class Error(BaseModel):
    """
    The one envelope every error leaves in.
    """

    error: Annotated[ErrorDetail, Field(description="The error.")]


class AccountOut(BaseModel):
    """
    The installation as its own key sees it in this environment.
    """

    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["account"], Field(description="The object's type.", title="Object")
    ] = "account"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    name: Annotated[str, Field(description="The installation's name", title="Name")]
    kind: Annotated[
        Literal["direct", "platform"],
        Field(
            description="`direct` sells for itself; `platform` distributes payments to merchants",
            title="Kind",
        ),
    ]
    publishable_key: Annotated[
        str | None,
        Field(
            description="The key for client-side calls in this environment",
            title="Publishable Key",
        ),
    ]
    settings: Annotated[
        AccountSettingsOut,
        Field(description="What the operator set for this environment"),
    ]


class AllocationGroupOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["allocation_group"],
        Field(description="The object's type.", title="Object"),
    ] = "allocation_group"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    payment_intent: Annotated[
        str, Field(description="The `pi_` payment distributed", title="Payment Intent")
    ]
    amount: Annotated[
        int,
        Field(description="Reserved from the payment, in minor units", title="Amount"),
    ]
    amount_allocated: Annotated[
        int,
        Field(description="Allocated so far, in minor units", title="Amount Allocated"),
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    status: Annotated[
        Literal["open", "committing", "committed", "failed", "canceled"],
        Field(
            description="`open`, `committing` (its commit runs, retries or waits in `dead_letter` for an operator), `committed`, `failed` (final: the commit ended for good, refused or discarded) or `canceled` (a refund of a subscription payment stopped it before it was sent)",
            title="Status",
        ),
    ]
    source: Annotated[
        Literal["api", "distribution", "transfer"],
        Field(
            description="What created it: the API, a payment's distribution or a direct transfer",
            title="Source",
        ),
    ]
    operation: Annotated[
        str | None,
        Field(
            description="The `op_` id committing it, once committed", title="Operation"
        ),
    ]
    failure_reason: Annotated[
        str | None,
        Field(
            description="Why the commit failed, when `failed`", title="Failure Reason"
        ),
    ]
    last_operation_error: Annotated[
        OperationErrorOut | None,
        Field(
            description="The last error its operation met, while the object waits on it (the operation retries, or waits in `dead_letter` for an operator) and once it failed; null otherwise. The object stays in its pending state until the operation ends for good"
        ),
    ]
    allocations: Annotated[
        list[AllocationOut], Field(description="Its allocations", title="Allocations")
    ]
    transfers: Annotated[
        list[TransferOut],
        Field(description="The transfers made by its commit", title="Transfers"),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class ConnectedAccountCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    kind: Annotated[
        Literal["courier", "driver", "merchant", "other"],
        Field(
            description="Who the account belongs to: `courier`, `driver`, `merchant` or `other`",
            title="Kind",
        ),
    ]
    country: Annotated[
        str | None,
        Field(
            description="ISO 3166-1 alpha-2 country of the account",
            pattern="^[A-Z]{2}$",
            title="Country",
        ),
    ] = "DE"
    email: Annotated[
        str | None, Field(description="The person's e-mail", title="Email")
    ] = None
    display_name: Annotated[
        DisplayName | None, Field(description="A name to show", title="Display Name")
    ] = None
    external_account: Annotated[
        ExternalAccountIn, Field(description="The bank account payouts go to")
    ]
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class ConnectedAccountOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["connected_account"],
        Field(description="The object's type.", title="Object"),
    ] = "connected_account"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    kind: Annotated[
        Literal["courier", "driver", "merchant", "other"],
        Field(description="Who the account belongs to", title="Kind"),
    ]
    country: Annotated[str, Field(description="The account's country", title="Country")]
    email: Annotated[
        str | None, Field(description="The person's e-mail", title="Email")
    ]
    display_name: Annotated[
        str | None, Field(description="A name to show", title="Display Name")
    ]
    capabilities: Annotated[
        CapabilitiesOut, Field(description="What the account can do now")
    ]
    requirements: Annotated[
        RequirementsOut, Field(description="What must still be provided")
    ]
    details_submitted: Annotated[
        bool,
        Field(
            description="Whether onboarding was completed", title="Details Submitted"
        ),
    ]
    payouts_enabled: Annotated[
        bool,
        Field(
            description="Whether the account can be paid out", title="Payouts Enabled"
        ),
    ]
    external_account: Annotated[
        ExternalAccountOut | None,
        Field(
            description="The bank account payouts go to; null while a merchant's is still due"
        ),
    ]
    merchant: Annotated[
        str | None,
        Field(
            description="The `mer_` merchant this account pays (kind `merchant`, created on its connection); null for accounts created by the API",
            title="Merchant",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class DisputeOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["dispute"], Field(description="The object's type.", title="Object")
    ] = "dispute"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    payment_intent: Annotated[
        str, Field(description="The disputed `pi_` payment", title="Payment Intent")
    ]
    amount: Annotated[
        int, Field(description="The disputed amount, in minor units", title="Amount")
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    reason: Annotated[
        str,
        Field(
            description="The cardholder's bank's reason, such as `fraudulent`",
            title="Reason",
        ),
    ]
    status: Annotated[
        Literal["needs_response", "under_review", "won", "lost"],
        Field(
            description="`needs_response`, `under_review`, `won` or `lost`",
            title="Status",
        ),
    ]
    fee_amount: Annotated[
        int,
        Field(
            description="The network's dispute fee; kept by the network even when won",
            title="Fee Amount",
        ),
    ]
    amount_withdrawn: Annotated[
        int,
        Field(
            description="Taken from the balance: the disputed amount plus the fee",
            title="Amount Withdrawn",
        ),
    ]
    amount_reinstated: Annotated[
        int,
        Field(
            description="Given back when the dispute was won: the disputed amount",
            title="Amount Reinstated",
        ),
    ]
    amount_reversed: Annotated[
        int,
        Field(
            description="Of the withdrawal, what reversals took back from transfers",
            title="Amount Reversed",
        ),
    ]
    withdrawal_operation: Annotated[
        str | None,
        Field(
            description="The `op_` operation that withdraws the money (GET /v1/operations/{id})",
            title="Withdrawal Operation",
        ),
    ]
    withdrawal_status: Annotated[
        Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"],
        Field(
            description="`succeeded` once the money is withdrawn; until then the operation's status (`dead_letter`: stopped until an operator retries it; the dispute is still decided meanwhile)",
            title="Withdrawal Status",
        ),
    ]
    evidence: Annotated[
        dict[str, str],
        Field(description="The evidence saved so far, by field", title="Evidence"),
    ]
    evidence_details: Annotated[
        EvidenceDetails, Field(description="The deadline and the submission's state")
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them.", title="Metadata"
        ),
    ]


class FaultList(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="The object's type.", title="Object")
    ] = "list"
    data: Annotated[
        list[FaultOut], Field(description="The faults still armed", title="Data")
    ]
    has_more: Annotated[
        Literal[False],
        Field(
            description="Always `false`: every armed fault is listed", title="Has More"
        ),
    ] = False
    next_cursor: Annotated[
        None, Field(description="Always null", title="Next Cursor")
    ] = None


class InvoiceCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    customer: Annotated[
        str,
        Field(
            description="The `cus_` id billed; the invoice is sent to its e-mail",
            max_length=255,
            min_length=1,
            title="Customer",
        ),
    ]
    currency: Annotated[
        str,
        Field(
            description="The invoice's currency: a lowercase ISO 4217 code",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]
    lines: Annotated[
        list[InvoiceLineIn],
        Field(
            description="The invoice's lines: 1 to 100",
            max_length=100,
            min_length=1,
            title="Lines",
        ),
    ]
    description: Annotated[
        Description | None,
        Field(description="Shown to the customer on the invoice", title="Description"),
    ] = None
    success_url: Annotated[
        SuccessUrl | None,
        Field(
            description="Where the hosted payment page returns; registered exactly (needed to send)",
            title="Success Url",
        ),
    ] = None
    cancel_url: Annotated[
        CancelUrl | None,
        Field(description="Registered exactly (needed to send)", title="Cancel Url"),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class ListEnvelopeConnectedAccountOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[ConnectedAccountOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeDisputeOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[DisputeOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeOrderOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[OrderOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopePaymentIntentOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[PaymentIntentOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopePayoutOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[PayoutOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeProductOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[ProductOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeReconciliationRunOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[ReconciliationRunOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeRefundOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[RefundOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeReviewOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[ReviewOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeSubscriptionChangeOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[SubscriptionChangeOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeSubscriptionInvoiceOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[SubscriptionInvoiceOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeSubscriptionOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[SubscriptionOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeTransferOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[TransferOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeValueListItemOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[ValueListItemOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeValueListOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[ValueListOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeWebhookDeliveryOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[WebhookDeliveryOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopeWebhookEndpointOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[WebhookEndpointOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class MerchantOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["merchant"], Field(description="The object's type.", title="Object")
    ] = "merchant"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    business_profile: Annotated[
        BusinessProfile, Field(description="The business, as the merchant described it")
    ]
    connection_status: Annotated[
        Literal["pending", "active", "denied", "revoked"],
        Field(
            description="Where this application's connection stands",
            title="Connection Status",
        ),
    ]
    consent: Annotated[Consent, Field(description="What the merchant agreed to")]
    capabilities: Annotated[
        Capabilities, Field(description="What the merchant can do now")
    ]
    requirements: Annotated[
        Requirements, Field(description="What the merchant must still provide")
    ]
    connected_account: Annotated[
        str | None,
        Field(
            description="The `acct_` connected account the merchant is paid through: the recipient to name in distributions and transfers (created when its code is exchanged; null before)",
            title="Connected Account",
        ),
    ]


class OrderCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    currency: Annotated[
        str,
        Field(
            description="The order's currency: a lowercase ISO 4217 code",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]
    lines: Annotated[
        list[OrderLineIn],
        Field(
            description="The order's lines: 1 to 100",
            max_length=100,
            min_length=1,
            title="Lines",
        ),
    ]
    amount_total: Annotated[
        int,
        Field(
            description="The order's total; must equal the sum of its lines",
            ge=1,
            le=99999999,
            title="Amount Total",
        ),
    ]
    external_reference: Annotated[
        ExternalReference1 | None,
        Field(
            description="Your own reference for the order", title="External Reference"
        ),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class PaymentMethodList(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[PaymentMethodOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]
    preferred_payment_method: Annotated[
        str | None,
        Field(
            description="The customer's preferred method, if any",
            title="Preferred Payment Method",
        ),
    ]


class PaymentQuoteOut(BaseModel):
    object: Annotated[
        Literal["payment_quote"],
        Field(description="The object's type.", title="Object"),
    ] = "payment_quote"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox.", title="Livemode"
        ),
    ]
    amount: Annotated[
        int, Field(description="The payment's amount, in minor units", title="Amount")
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`.",
            title="Currency",
        ),
    ]
    funds_flow: Annotated[
        list[FundsFlowItem],
        Field(description="Where each minor unit would go", title="Funds Flow"),
    ]
    fees: Annotated[
        QuoteFeesOut, Field(description="The commission the payment would carry")
    ]


class Tiers(RootModel[list[TierIn]]):
    root: Annotated[
        list[TierIn],
        Field(
            description="`volume` and `graduated` only: up to 50 tiers",
            max_length=51,
            title="Tiers",
        ),
    ]


class PriceCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]
    interval: Annotated[
        Literal["month", "year"],
        Field(
            description="The billing period's unit: `month` or `year`", title="Interval"
        ),
    ]
    interval_count: Annotated[
        int | None,
        Field(
            description="Periods of `interval` per cycle: 1 to 12",
            ge=1,
            le=12,
            title="Interval Count",
        ),
    ] = 1
    pricing_model: Annotated[
        Literal["per_unit", "volume", "graduated"] | None,
        Field(
            description="`per_unit` (quantity x `amount`), `volume` (the whole quantity at the tier it falls in) or `graduated` (each tier's segment at its own rate)",
            title="Pricing Model",
        ),
    ] = "per_unit"
    amount: Annotated[
        int | None,
        Field(
            description="Minor units per unit; `per_unit` only, where it is required",
            title="Amount",
        ),
    ] = None
    tiers: Annotated[
        Tiers | None,
        Field(
            description="`volume` and `graduated` only: up to 50 tiers", title="Tiers"
        ),
    ] = None
    name: Annotated[
        Name1 | None, Field(description="An internal name for the price", title="Name")
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None
    product: Annotated[
        str,
        Field(
            description="The `prod_` id the price belongs to; an active product",
            max_length=255,
            min_length=1,
            title="Product",
        ),
    ]


class PriceData(BaseModel):
    """
    A new price created with the subscription: the body of POST /v1/prices.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`",
            pattern="^[a-z]{3}$",
            title="Currency",
        ),
    ]
    interval: Annotated[
        Literal["month", "year"],
        Field(
            description="The billing period's unit: `month` or `year`", title="Interval"
        ),
    ]
    interval_count: Annotated[
        int | None,
        Field(
            description="Periods of `interval` per cycle: 1 to 12",
            ge=1,
            le=12,
            title="Interval Count",
        ),
    ] = 1
    pricing_model: Annotated[
        Literal["per_unit", "volume", "graduated"] | None,
        Field(
            description="`per_unit` (quantity x `amount`), `volume` (the whole quantity at the tier it falls in) or `graduated` (each tier's segment at its own rate)",
            title="Pricing Model",
        ),
    ] = "per_unit"
    amount: Annotated[
        int | None,
        Field(
            description="Minor units per unit; `per_unit` only, where it is required",
            title="Amount",
        ),
    ] = None
    tiers: Annotated[
        Tiers | None,
        Field(
            description="`volume` and `graduated` only: up to 50 tiers", title="Tiers"
        ),
    ] = None
    name: Annotated[
        Name1 | None, Field(description="An internal name for the price", title="Name")
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None
    product: Annotated[
        str,
        Field(
            description="The `prod_` id the price belongs to; an active product",
            max_length=255,
            min_length=1,
            title="Product",
        ),
    ]


class PriceOut(BaseModel):
    id: Annotated[
        str,
        Field(
            description="The object's id: a prefix, `_`, 24 random characters",
            title="Id",
        ),
    ]
    object: Annotated[
        Literal["price"], Field(description="Always `price`", title="Object")
    ] = "price"
    livemode: Annotated[
        bool,
        Field(
            description="`true` in live mode, `false` in the sandbox", title="Livemode"
        ),
    ]
    created: Annotated[
        int,
        Field(
            description="When the object was created, in Unix seconds (UTC)",
            title="Created",
        ),
    ]
    product: Annotated[
        str, Field(description="The `prod_` id the price belongs to", title="Product")
    ]
    name: Annotated[
        str | None,
        Field(
            description="The price's internal name; null when none was set",
            title="Name",
        ),
    ]
    currency: Annotated[
        str,
        Field(
            description="A lowercase ISO 4217 currency code, such as `eur`",
            title="Currency",
        ),
    ]
    interval: Annotated[
        Literal["month", "year"],
        Field(
            description="The billing period's unit: `month` or `year`", title="Interval"
        ),
    ]
    interval_count: Annotated[
        int,
        Field(
            description="Periods of `interval` per cycle: 1 to 12",
            title="Interval Count",
        ),
    ]
    pricing_model: Annotated[
        Literal["per_unit", "volume", "graduated"],
        Field(description="`per_unit`, `volume` or `graduated`", title="Pricing Model"),
    ]
    amount: Annotated[
        int | None,
        Field(
            description="Minor units per unit (`per_unit`); null with tiers",
            title="Amount",
        ),
    ]
    tiers: Annotated[
        list[TierOut] | None,
        Field(
            description="The tiers (`volume`, `graduated`); null for `per_unit`",
            title="Tiers",
        ),
    ]
    active: Annotated[
        bool,
        Field(
            description="`false` once archived: no new subscriptions, existing ones unchanged",
            title="Active",
        ),
    ]
    metadata: Annotated[
        dict[str, str],
        Field(
            description="Your own key-value pairs, as you set them", title="Metadata"
        ),
    ]


class SubscriptionCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    price: Annotated[
        Price1 | None,
        Field(
            description="An active `price_` id; exclusive with `price_data`",
            title="Price",
        ),
    ] = None
    price_data: Annotated[
        PriceData | None,
        Field(
            description="A new price created for this subscription; exclusive with `price`"
        ),
    ] = None
    customer: Annotated[
        str,
        Field(
            description="The `cus_` id who pays",
            max_length=255,
            min_length=1,
            title="Customer",
        ),
    ]
    merchant: Annotated[
        Merchant2 | None,
        Field(
            description="The connected merchant (`mer_`) this subscription sells for: active and able to take payments; a renewal after its grant was revoked stops for review (`merchant_grant_revoked`)",
            title="Merchant",
        ),
    ] = None
    quantity: Annotated[
        int | None, Field(description="1 to 10000", title="Quantity")
    ] = 1
    distribution: Annotated[
        DistributionIn | None,
        Field(
            description="Required on a platform installation: who receives each cycle, in `basis_points` summing to 10000, with the `merchant_of_record`; needs payments:write and transfers:write"
        ),
    ] = None
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=40)], MetadataAdditionalProperty] | None,
        Field(
            description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters",
            max_length=50,
            title="Metadata",
        ),
    ] = None


class ListEnvelopeMerchantOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[MerchantOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]


class ListEnvelopePriceOut(BaseModel):
    object: Annotated[
        Literal["list"], Field(description="Always `list`", title="Object")
    ] = "list"
    data: Annotated[
        list[PriceOut],
        Field(description="This page of objects, newest first", title="Data"),
    ]
    has_more: Annotated[
        bool, Field(description="Whether another page follows", title="Has More")
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last",
            title="Next Cursor",
        ),
    ]
