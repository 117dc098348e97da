from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, EmailStr, Field, StringConstraints

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
    kind: Kind
    country: Country = "DE"
    email: EmailStr | None = None
    display_name: DisplayName | None = None
    external_account: ExternalAccountIn
    metadata: Metadata = Field(default_factory=dict)


class OnboardingLinkCreate(RequestBody):
    return_url: ReturnUrl | None = Field(
        default=None, description="Offered to the person once onboarding is done; registered exactly"
    )


class CapabilitiesOut(BaseModel):
    transfers: CapabilityStatus
    payouts: CapabilityStatus


class RequirementsOut(BaseModel):
    currently_due: list[str]
    eventually_due: list[str]
    past_due: list[str]
    disabled_reason: str | None


class ExternalAccountOut(BaseModel):
    object: Literal["bank_account"] = "bank_account"
    bank_last4: str


class ConnectedAccountOut(ResourceOut):
    object: Literal["connected_account"] = "connected_account"
    kind: Kind
    country: str
    email: str | None
    display_name: str | None
    capabilities: CapabilitiesOut
    requirements: RequirementsOut
    details_submitted: bool
    payouts_enabled: bool
    external_account: ExternalAccountOut
    metadata: dict[str, str]


class AccountRequirementsOut(RequirementsOut):
    object: Literal["connected_account_requirements"] = "connected_account_requirements"
    connected_account: str


class OnboardingLinkOut(BaseModel):
    object: Literal["onboarding_link"] = "onboarding_link"
    livemode: bool
    connected_account: str
    created: int
    expires_at: int = Field(description="Unix seconds on the environment's clock; 5 minutes after creation")
    url: str = Field(description="The hosted onboarding page, a single-use credential: answered once")


class BalanceAmount(BaseModel):
    amount: int
    currency: str


class ConnectedAccountBalanceOut(BaseModel):
    object: Literal["balance"] = "balance"
    livemode: bool
    connected_account: str
    available: list[BalanceAmount]
    pending: list[BalanceAmount]


def render_requirements(requirements: Requirements) -> RequirementsOut:
    return RequirementsOut(
        currently_due=list(requirements.currently_due),
        eventually_due=list(requirements.eventually_due),
        past_due=list(requirements.past_due),
        disabled_reason=requirements.disabled_reason,
    )


def render_connected_account(account: ConnectedAccount) -> ConnectedAccountOut:
    requirements = Requirements.of(account)
    return ConnectedAccountOut(
        id=account.id,
        livemode=account.livemode,
        created=to_unix(account.created_at),
        kind=account.kind,
        country=account.country,
        email=account.email,
        display_name=account.display_name,
        capabilities=CapabilitiesOut(
            transfers="active", payouts="active" if requirements.payouts_enabled else "pending"
        ),
        requirements=render_requirements(requirements),
        details_submitted=account.onboarding_status == "complete",
        payouts_enabled=requirements.payouts_enabled,
        external_account=ExternalAccountOut(bank_last4=account.bank_last4),
        metadata=account.metadata_,
    )
