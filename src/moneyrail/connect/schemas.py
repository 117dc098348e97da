from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Metadata, RequestBody, ResourceOut
from moneyrail.models import ConnectedAccount

from .requirements import Requirements

Kind = Literal["courier", "driver", "merchant", "other"]
Country = Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}$")]
AccountNumber = Annotated[str, StringConstraints(pattern=r"^[0-9A-Z]{6,34}$")]
DisplayName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
ReturnUrl = Annotated[str, StringConstraints(pattern=r"^https?://", max_length=2048)]
CapabilityStatus = Literal["active", "pending", "inactive"]


class ExternalAccountIn(RequestBody):
    account_number: AccountNumber = Field(
        description="The bank account payouts go to (sandbox: `000111111116` makes payouts fail)"
    )


class ConnectedAccountCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "kind": "courier",
                    "country": "DE",
                    "email": "rider@example.com",
                    "display_name": "Rider 7",
                    "external_account": {"account_number": "DE89370400440532013000"},
                }
            ]
        }
    )

    kind: Kind = Field(description="Who the account belongs to: `courier`, `driver`, `merchant` or `other`")
    country: Country = Field(default="DE", description="ISO 3166-1 alpha-2 country of the account")
    email: EmailStr | None = Field(default=None, description="The person's e-mail")
    display_name: DisplayName | None = Field(default=None, description="A name to show")
    external_account: ExternalAccountIn = Field(description="The bank account payouts go to")
    metadata: Metadata = Field(default_factory=dict)


class OnboardingLinkCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"return_url": "https://platform.example/couriers/done"}]}
    )

    return_url: ReturnUrl | None = Field(
        default=None, description="Offered to the person once onboarding is done; registered exactly"
    )


class CapabilitiesOut(BaseModel):
    transfers: CapabilityStatus = Field(
        description="Whether money can be moved to the account: `pending` while the processor (Stripe) "
        "is making its own account for it, and transfers to it wait"
    )
    payouts: CapabilityStatus = Field(description="Whether the account can be paid out")


class RequirementsOut(BaseModel):
    currently_due: list[str] = Field(description="What must be provided now")
    eventually_due: list[str] = Field(description="What will have to be provided later")
    past_due: list[str] = Field(description="What was not provided in time")
    disabled_reason: str | None = Field(description="Why a capability is not active, if one is not")


class ExternalAccountOut(BaseModel):
    object: Literal["bank_account"] = "bank_account"
    bank_last4: str = Field(description="The bank account number's last four characters")


class ConnectedAccountOut(ResourceOut):
    object: Literal["connected_account"] = "connected_account"
    kind: Kind = Field(description="Who the account belongs to")
    country: str = Field(description="The account's country")
    email: str | None = Field(description="The person's e-mail")
    display_name: str | None = Field(description="A name to show")
    capabilities: CapabilitiesOut = Field(description="What the account can do now")
    requirements: RequirementsOut = Field(description="What must still be provided")
    details_submitted: bool = Field(description="Whether onboarding was completed")
    payouts_enabled: bool = Field(description="Whether the account can be paid out")
    external_account: ExternalAccountOut | None = Field(
        description="The bank account payouts go to; null while a merchant's is still due"
    )
    merchant: str | None = Field(
        description="The `mer_` merchant this account pays (kind `merchant`, created on its connection); "
        "null for accounts created by the API"
    )
    metadata: dict[str, str]


class AccountRequirementsOut(RequirementsOut):
    object: Literal["connected_account_requirements"] = "connected_account_requirements"
    connected_account: str = Field(description="The `acct_` id")


class OnboardingLinkOut(BaseModel):
    object: Literal["onboarding_link"] = "onboarding_link"
    livemode: bool
    connected_account: str = Field(description="The `acct_` id being onboarded")
    created: int
    expires_at: int = Field(description="Unix seconds on the environment's clock; 5 minutes after creation")
    url: str = Field(description="The hosted onboarding page, a single-use credential: answered once")


class BalanceAmount(BaseModel):
    amount: int = Field(description="In minor units")
    currency: str


class ConnectedAccountBalanceOut(BaseModel):
    object: Literal["balance"] = "balance"
    livemode: bool
    connected_account: str = Field(description="The `acct_` id")
    available: list[BalanceAmount] = Field(description="Funds that can be paid out, per currency")
    pending: list[BalanceAmount] = Field(description="Funds not yet available, per currency")


def render_requirements(requirements: Requirements) -> RequirementsOut:
    return RequirementsOut(
        currently_due=list(requirements.currently_due),
        eventually_due=list(requirements.eventually_due),
        past_due=list(requirements.past_due),
        disabled_reason=requirements.disabled_reason,
    )


def render_connected_account(account: ConnectedAccount) -> ConnectedAccountOut:
    requirements = Requirements.of(account)
    making = account.link_operation_id is not None and account.processor_account is None
    return ConnectedAccountOut(
        id=account.id,
        livemode=account.livemode,
        created=to_unix(account.created_at),
        kind=account.kind,
        country=account.country,
        email=account.email,
        display_name=account.display_name,
        capabilities=CapabilitiesOut(
            # while its operation makes it at the processor (Stripe), money waits for it
            transfers="pending" if making else "active",
            payouts="active" if requirements.payouts_enabled else "pending",
        ),
        requirements=render_requirements(requirements),
        details_submitted=account.onboarding_status == "complete",
        payouts_enabled=requirements.payouts_enabled,
        external_account=ExternalAccountOut(bank_last4=account.bank_last4) if account.bank_last4 else None,
        merchant=account.merchant_id,
        metadata=account.metadata_,
    )
