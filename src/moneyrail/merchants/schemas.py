"""Merchant connections, merchants and their sessions over the API (CONVENTIONS.md §13)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import RequestBody, ResourceOut
from moneyrail.models import Merchant, MerchantConnection, MerchantOnboardingSession

Url = Annotated[str, StringConstraints(min_length=1, max_length=2048)]


class MerchantConnectionCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "redirect_uri": "https://platform.example/oauth/callback",
                    "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                    "code_challenge_method": "S256",
                    "state": "af0ifjsldkj",
                }
            ]
        }
    )

    redirect_uri: Url = Field(description="Exactly one of the environment's registered OAuth redirect URIs")
    code_challenge: Annotated[str, StringConstraints(min_length=43, max_length=128)] = Field(
        description="BASE64URL(SHA-256(code_verifier)), RFC 7636"
    )
    code_challenge_method: Annotated[str, StringConstraints(min_length=1, max_length=16)] = Field(
        description="`S256` only; `plain` is refused"
    )
    state: Annotated[str, StringConstraints(min_length=1, max_length=500)] = Field(
        description="Carried back to the redirect URI unchanged: check it there"
    )


class OnboardingSessionCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"return_url": "https://platform.example/merchants/done"}]}
    )

    return_url: Url = Field(
        description="Where the activation page sends the merchant back; registered exactly"
    )


class MerchantConnectionOut(ResourceOut):
    object: Literal["merchant_connection"] = "merchant_connection"
    url: str | None = Field(description="The consent page; a temporary credential, answered once")
    expires_at: int = Field(description="When the consent link stops working, in Unix seconds")


class BusinessProfile(BaseModel):
    name: str | None = Field(description="The business's name")
    url: str | None = Field(description="The business's website")
    support_email: str | None = Field(description="Where its customers get help")


class Consent(BaseModel):
    status: Literal["pending", "granted", "denied", "revoked"] = Field(
        description="`pending`, `granted`, `denied` or `revoked`"
    )
    granted_at: int | None = Field(description="When the merchant granted access, in Unix seconds")
    scopes: list[str] = Field(description="What this application may do for the merchant")


Capability = Literal["active", "pending", "inactive"]


class Capabilities(BaseModel):
    payments: Capability = Field(description="Whether the merchant can take payments now")
    transfers: Capability = Field(description="Whether money can be moved to it")
    payouts: Capability = Field(description="Whether it can be paid out")
    refunds: Capability = Field(description="Whether its payments can be refunded")


class Requirements(BaseModel):
    currently_due: list[str] = Field(description="What the merchant must still provide")
    past_due: list[str] = Field(description="What it failed to provide in time")
    disabled_reason: str | None = Field(description="Why a capability is not active, if one is not")


class MerchantOut(ResourceOut):
    object: Literal["merchant"] = "merchant"
    business_profile: BusinessProfile = Field(description="The business, as the merchant described it")
    connection_status: Literal["pending", "active", "denied", "revoked"] = Field(
        description="Where this application's connection stands"
    )
    consent: Consent = Field(description="What the merchant agreed to")
    capabilities: Capabilities = Field(description="What the merchant can do now")
    requirements: Requirements = Field(description="What the merchant must still provide")
    connected_account: str | None = Field(
        description="The `acct_` connected account the merchant is paid through: the recipient to name in "
        "distributions and transfers (created when its code is exchanged; null before)"
    )


class MerchantCapabilitiesOut(Capabilities):
    object: Literal["merchant_capabilities"] = "merchant_capabilities"
    merchant: str = Field(description="The `mer_` id")


class MerchantRequirementsOut(Requirements):
    object: Literal["merchant_requirements"] = "merchant_requirements"
    merchant: str = Field(description="The `mer_` id")


class OnboardingSessionOut(ResourceOut):
    object: Literal["merchant_onboarding_session"] = "merchant_onboarding_session"
    merchant: str = Field(description="The `mer_` id being activated")
    status: Literal["open", "complete", "expired"] = Field(description="`open`, `complete` or `expired`")
    url: str | None = Field(description="The activation page; a temporary credential, answered once")
    return_url: str = Field(description="Where the merchant goes back once done")
    expires_at: int = Field(description="When the link stops working, in Unix seconds")


def capabilities_of(merchant: Merchant) -> Capabilities:
    """What the merchant may do now, from its connection and requirements (a table, not branches)."""
    if merchant.connection_status != "active":
        state: Capability = "pending" if merchant.connection_status == "pending" else "inactive"
        return Capabilities(payments=state, transfers=state, payouts=state, refunds=state)
    blocked: Capability = "pending" if merchant.requirements_due else "active"
    # money may still move between accounts while the business finishes its activation; taking new
    # payments and paying out wait for it
    return Capabilities(payments=blocked, transfers="active", payouts=blocked, refunds="active")


DISABLED_REASONS = {
    "pending": "consent.pending",
    "denied": "consent.denied",
    "revoked": "consent.revoked",
}


def requirements_of(merchant: Merchant) -> Requirements:
    reason = DISABLED_REASONS.get(merchant.connection_status)
    if reason is None and merchant.requirements_due:
        reason = "requirements.currently_due"
    return Requirements(currently_due=list(merchant.requirements_due), past_due=[], disabled_reason=reason)


def render_merchant(merchant: Merchant, connected_account: str | None) -> MerchantOut:
    return MerchantOut(
        id=merchant.id,
        livemode=merchant.livemode,
        created=to_unix(merchant.created_at),
        business_profile=BusinessProfile(
            name=merchant.business_name, url=merchant.business_url, support_email=merchant.support_email
        ),
        connection_status=merchant.connection_status,
        consent=Consent(
            status=merchant.consent_status,
            granted_at=to_unix(merchant.consent_granted_at) if merchant.consent_granted_at else None,
            scopes=list(merchant.scopes),
        ),
        capabilities=capabilities_of(merchant),
        requirements=requirements_of(merchant),
        connected_account=connected_account,
    )


def render_connection(connection: MerchantConnection, *, url: str | None = None) -> MerchantConnectionOut:
    return MerchantConnectionOut(
        id=connection.id,
        livemode=connection.livemode,
        created=to_unix(connection.created_at),
        url=url,
        expires_at=to_unix(connection.expires_at),
    )


def render_onboarding_session(
    onboarding: MerchantOnboardingSession, *, url: str | None = None
) -> OnboardingSessionOut:
    return OnboardingSessionOut(
        id=onboarding.id,
        livemode=onboarding.livemode,
        created=to_unix(onboarding.created_at),
        merchant=onboarding.merchant_id,
        status=onboarding.status,
        url=url,
        return_url=onboarding.return_url,
        expires_at=to_unix(onboarding.expires_at),
    )
