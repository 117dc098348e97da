"""Merchants connected over OAuth 2.1 with PKCE (spec 4.D, 5.4; CONVENTIONS.md §13).

    POST /v1/merchant-connections   a `pending` merchant and a consent link (30 minutes, opened once)
    /oauth/authorize                the merchant approves (a code, 10 minutes, used once) or denies
    POST /oauth/token               the code and its PKCE verifier -> the merchant is `active`

A merchant's connection state machine is data:

    pending -> active       the application exchanged the code of an approved consent
    pending -> denied       the merchant denied on the consent page
    active | pending -> revoked    DELETE: this application's access ends (its own row only)
    denied | revoked | pending -> (a new consent session; the state moves on its decision)

The rules of the flow itself (redirect URI, PKCE, the code's client, errors) are authlib's
(`oauth.py`); this module loads what authlib needs, and writes what it decided.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal
from urllib.parse import urlencode

import structlog
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc7636.challenge import CODE_CHALLENGE_PATTERN
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.api import keys
from moneyrail.connect import merchants as merchant_accounts
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import (
    Conflict,
    ParameterInvalid,
    ReferencedResourceMissing,
    ResourceMissing,
    UrlNotRegistered,
)
from moneyrail.events.service import record_event
from moneyrail.installations import service as installations
from moneyrail.kit import single_use
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.pagination import Position
from moneyrail.kit.scopes import grants
from moneyrail.kit.tenant import Tenant
from moneyrail.models import (
    Merchant,
    MerchantAuthorizationCode,
    MerchantConnection,
)

from . import repository
from .oauth import (
    DEFAULT_SCOPE,
    Answer,
    Application,
    MerchantAuthorizationServer,
    PresentedCode,
    Request,
    client_id_of,
)
from .schemas import (
    MerchantConnectionCreate,
    capabilities_of,
    render_merchant,
)

logger = structlog.get_logger("moneyrail.merchants")

CONNECTION_LIFETIME = timedelta(minutes=30)
CODE_LIFETIME = timedelta(minutes=10)  # RFC 6749 §4.1.2's recommended maximum
ONBOARDING_LIFETIME = timedelta(minutes=30)
TOKEN_LENGTH = 43  # 256 bits
CONNECTION_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"active", "denied", "revoked"}),
    "active": frozenset({"revoked"}),
    "denied": frozenset({"pending"}),  # a new consent session
    "revoked": frozenset({"pending"}),  # a new consent session
}
RESTARTABLE = frozenset({"pending", "denied", "revoked"})
# A bank account to pay out to: due in live until the activation page collects it (live money never goes
# to a made-up account); the sandbox business form can leave it due, else the sandbox makes one up.
BANK_ACCOUNT_REQUIREMENT = "external_account"


def _move(merchant: Merchant, status: str) -> None:
    if status == merchant.connection_status:
        return
    if status not in CONNECTION_TRANSITIONS[merchant.connection_status]:
        raise Conflict(f"A merchant connection cannot go from {merchant.connection_status} to {status}.")
    merchant.connection_status = status
    merchant.updated_at = utcnow()


async def announce(session: AsyncSession, tenant: Tenant, merchant: Merchant, event_type: str) -> None:
    shown = render_merchant(merchant, await connected_account_of(session, tenant, merchant.id))
    await record_event(session, tenant, event_type, shown.model_dump(mode="json"))


async def connected_account_of(session: AsyncSession, tenant: Tenant, merchant_id: str) -> str | None:
    """The `acct_` the merchant is paid through (spec 2: recipients are `acct_`), once it has one."""
    return (await merchant_accounts.accounts_of_merchants(session, tenant, [merchant_id])).get(merchant_id)


async def connected_accounts_of(
    session: AsyncSession, tenant: Tenant, merchants: Sequence[Merchant]
) -> dict[str, str]:
    return await merchant_accounts.accounts_of_merchants(session, tenant, [item.id for item in merchants])


# --- connecting -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreatedConnection:
    connection: MerchantConnection
    token: str  # inside the consent URL, answered once, never stored


def _check_pkce(command: MerchantConnectionCreate) -> None:
    if command.code_challenge_method == "plain":
        raise ParameterInvalid(
            "code_challenge_method `plain` is refused: OAuth 2.1 takes S256 only, so the verifier "
            "never travels through the browser.",
            param="code_challenge_method",
        )
    if command.code_challenge_method != "S256":
        raise ParameterInvalid("code_challenge_method must be S256.", param="code_challenge_method")
    if not CODE_CHALLENGE_PATTERN.match(command.code_challenge):
        raise ParameterInvalid(
            "code_challenge must be BASE64URL(SHA-256(code_verifier)) without padding, 43 characters.",
            param="code_challenge",
        )


async def _open_connection(
    session: AsyncSession, tenant: Tenant, merchant: Merchant, command: MerchantConnectionCreate
) -> CreatedConnection:
    token = random_base62(TOKEN_LENGTH)
    connection = MerchantConnection(
        id=new_id("mcon"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        merchant_id=merchant.id,
        token_hash=hash_secret(token),
        redirect_uri=command.redirect_uri,
        state=command.state,
        code_challenge=command.code_challenge,
        code_challenge_method=command.code_challenge_method,
        scope=DEFAULT_SCOPE,
        status="open",
        expires_at=await tenant_now(session, tenant) + CONNECTION_LIFETIME,
    )
    await repository.add(session, connection)
    return CreatedConnection(connection, token)


async def _check_redirect_uri(session: AsyncSession, tenant: Tenant, redirect_uri: str) -> None:
    settings = await installations.environment_settings_of(session, tenant)
    if redirect_uri not in settings.oauth_redirect_uris:
        raise UrlNotRegistered(
            f"redirect_uri {redirect_uri!r} is not an OAuth redirect URI registered for this environment; "
            "the operator registers each one exactly (moneyrail settings set --oauth-redirect-uri).",
            param="redirect_uri",
        )


async def create_connection(
    session: AsyncSession, tenant: Tenant, command: MerchantConnectionCreate
) -> CreatedConnection:
    """A new merchant, `pending` until it approves and the application exchanges the code."""
    _check_pkce(command)
    await _check_redirect_uri(session, tenant, command.redirect_uri)
    now = utcnow()
    merchant = Merchant(
        id=new_id("mer"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        connection_status="pending",
        consent_status="pending",
        scopes=[],
        requirements_due=[],
        updated_at=now,
    )
    await repository.add(session, merchant)
    created = await _open_connection(session, tenant, merchant, command)
    await announce(session, tenant, merchant, "merchant.created")
    logger.info("merchant_connection_created", merchant=merchant.id, connection=created.connection.id)
    return created


async def restart_consent(
    session: AsyncSession, tenant: Tenant, merchant_id: str, command: MerchantConnectionCreate
) -> CreatedConnection:
    """A new consent link for a pending, denied or revoked merchant; earlier open links stop working."""
    _check_pkce(command)
    merchant = await locked_merchant(session, tenant, merchant_id)
    if merchant.connection_status not in RESTARTABLE:
        raise Conflict(
            f"This merchant is {merchant.connection_status}: consent restarts only for a pending, denied "
            "or revoked connection."
        )
    await _check_redirect_uri(session, tenant, command.redirect_uri)
    for earlier in await repository.open_connections_of(session, merchant.id):
        earlier.status = "expired"
    _move(merchant, "pending")
    merchant.consent_status = "pending"
    await session.flush()
    created = await _open_connection(session, tenant, merchant, command)
    await announce(session, tenant, merchant, "merchant.updated")
    return created


def consent_url(base_url: str, created: CreatedConnection) -> str:
    connection = created.connection
    query = {
        "response_type": "code",
        "client_id": client_id_of(Tenant(connection.installation_id, connection.livemode)),
        "redirect_uri": connection.redirect_uri,
        "scope": connection.scope,
        "state": connection.state,
        "code_challenge": connection.code_challenge,
        "code_challenge_method": connection.code_challenge_method,
        "connection": created.token,
    }
    return f"{base_url}/oauth/authorize?{urlencode(query)}"


# --- the consent page -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConsentView:
    application: str
    scopes: list[str]
    livemode: bool
    redirect_uri: str


@dataclass(frozen=True)
class ConsentForm:
    view: ConsentView
    error: str | None = None
    new_session: str | None = None  # the link's first open: its page session, for the browser to keep


@dataclass(frozen=True)
class Redirect:
    url: str


@dataclass(frozen=True)
class Notice:
    reason: Literal["missing", "expired", "used", "opened", "altered", "refused"]
    detail: str | None = None


ConsentStep = ConsentForm | Redirect | Notice


@dataclass(frozen=True)
class _Consent:
    connection: MerchantConnection
    tenant: Tenant
    server: MerchantAuthorizationServer
    request: Request
    grant: object
    view: ConsentView
    new_session: str | None


def _single(query: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = query.get(name) or []
    return values[0] if len(values) == 1 else None


async def _consent(
    session: AsyncSession,
    method: str,
    uri: str,
    query: Mapping[str, Sequence[str]],
    page_session: str | None,
) -> _Consent | Redirect | Notice:
    """The consent a link asks for, if this request may see it: the link's first open (which spends
    it: kit/single_use.py), or the browser that made it, presenting its page session. A link that is
    altered or refused by authlib is not spent, and a refused request changes nothing."""
    token = _single(query, "connection")
    connection = await repository.connection_by_token_hash(session, hash_secret(token)) if token else None
    if connection is None:
        return Notice("missing")
    tenant = Tenant(connection.installation_id, connection.livemode)
    if connection.status != "open":
        return Notice("used")
    if await tenant_now(session, tenant) >= connection.expires_at:
        return Notice("expired")
    # the link's parameters are the ones the application registered with the connection, untouched
    recorded = {
        "client_id": client_id_of(tenant),
        "response_type": "code",
        "redirect_uri": connection.redirect_uri,
        "scope": connection.scope,
        "state": connection.state,
        "code_challenge": connection.code_challenge,
        "code_challenge_method": connection.code_challenge_method,
    }
    if any(_single(query, name) != value for name, value in recorded.items()):
        return Notice("altered")
    settings = await installations.environment_settings_of(session, tenant)
    application = Application(tenant, settings.oauth_redirect_uris)
    server = MerchantAuthorizationServer(application)
    try:
        request = Request(method, uri, query, {})
    except OAuth2Error as insecure:  # authlib: OAuth over https only (or a loopback address)
        return Notice("refused", insecure.description)
    try:
        grant = server.get_consent_grant(request)
    except OAuth2Error as error:
        if error.redirect_uri:  # authlib's own error redirect, to a redirect URI it validated
            answer = server.handle_error_response(request, error)
            return Redirect(answer.location)
        # never to an unregistered redirect URI (it may have been unregistered since)
        return Notice("refused", error.description or error.error)
    entry = single_use.enter(connection, await tenant_now(session, tenant), page_session)
    if entry.refused is not None:
        return Notice(entry.refused)
    installation = await installations.require_installation(session, tenant.installation_id)
    view = ConsentView(
        application=installation.name,
        scopes=connection.scope.split(),
        livemode=tenant.livemode,
        redirect_uri=connection.redirect_uri,
    )
    return _Consent(connection, tenant, server, request, grant, view, entry.new_session)


async def show_consent(
    session: AsyncSession, uri: str, query: Mapping[str, Sequence[str]], page_session: str | None
) -> ConsentStep:
    loaded = await _consent(session, "GET", uri, query, page_session)
    return (
        ConsentForm(loaded.view, new_session=loaded.new_session) if isinstance(loaded, _Consent) else loaded
    )


@dataclass(frozen=True)
class BusinessForm:
    decision: str | None
    name: str | None
    url: str | None
    support_email: str | None
    leave_requirement_due: bool


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _profile_error(form: BusinessForm) -> str | None:
    if not (form.name or "").strip() or len(form.name or "") > 100:
        return "Enter the business name (up to 100 characters)."
    if form.url and (not re.match(r"^https?://[^\s]+$", form.url) or len(form.url) > 500):
        return "Enter the website as an http(s) address, such as https://shop.example."
    if form.support_email and (not _EMAIL.match(form.support_email) or len(form.support_email) > 254):
        return "Enter the support e-mail as an address, such as help@shop.example."
    return None


async def decide_consent(
    session: AsyncSession,
    uri: str,
    query: Mapping[str, Sequence[str]],
    page_session: str | None,
    form: BusinessForm,
) -> ConsentStep:
    """The merchant approves or denies; authlib answers the redirect (a code and the state, or
    `error=access_denied` and the state) to the registered redirect URI."""
    loaded = await _consent(session, "POST", uri, query, page_session)
    if not isinstance(loaded, _Consent):
        return loaded
    connection, tenant, server = loaded.connection, loaded.tenant, loaded.server
    merchant = await locked_merchant(session, tenant, connection.merchant_id)
    now = await tenant_now(session, tenant)
    if form.decision == "deny":
        answer: Answer = server.create_authorization_response(loaded.request, None, loaded.grant)
        connection.status, connection.decided_at = "denied", now
        _move(merchant, "denied")
        merchant.consent_status = "denied"
        await session.flush()
        await announce(session, tenant, merchant, "merchant.denied")
        logger.info("merchant_consent_denied", merchant=merchant.id)
        return Redirect(answer.location or connection.redirect_uri)
    if form.decision != "approve":
        return ConsentForm(loaded.view, "Choose whether to connect.", loaded.new_session)
    problem = _profile_error(form)
    if problem is not None:
        return ConsentForm(loaded.view, problem, loaded.new_session)

    answer = server.create_authorization_response(loaded.request, merchant.id, loaded.grant)
    if not server.issued:  # authlib refused after all: its error redirect stands
        return Redirect(answer.location or connection.redirect_uri)
    issued = server.issued[0]
    await repository.add(
        session,
        MerchantAuthorizationCode(
            id=new_id("mcode"),
            installation_id=tenant.installation_id,
            livemode=tenant.livemode,
            code_hash=hash_secret(issued.code),
            merchant_id=merchant.id,
            connection_id=connection.id,
            redirect_uri=issued.redirect_uri,
            scope=issued.scope,
            code_challenge=issued.code_challenge,
            code_challenge_method=issued.code_challenge_method,
            expires_at=now + CODE_LIFETIME,
        ),
    )
    connection.status, connection.decided_at = "approved", now
    merchant.business_name = (form.name or "").strip()
    merchant.business_url = form.url or None
    merchant.support_email = form.support_email or None
    merchant.consent_status = "granted"
    merchant.consent_granted_at = now
    merchant.scopes = issued.scope.split()
    # the sandbox form can leave a requirement due, to exercise activation; live has no such switch
    leave_due = form.leave_requirement_due and not tenant.livemode
    merchant.requirements_due = [BANK_ACCOUNT_REQUIREMENT] if leave_due else []
    merchant.revoked_at = None
    merchant.updated_at = utcnow()
    await session.flush()
    await announce(session, tenant, merchant, "merchant.updated")
    logger.info("merchant_consent_granted", merchant=merchant.id)
    assert answer.location is not None
    return Redirect(answer.location)


# --- the token endpoint -----------------------------------------------------------------------------
def _bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def exchange_code(
    session: AsyncSession, uri: str, form: Mapping[str, Sequence[str]], authorization: str | None
) -> Answer:
    """`POST /oauth/token`: the secret key as Bearer, `grant_type=authorization_code`, `code`,
    `code_verifier`, `redirect_uri` -> `{merchant, scope, livemode}`, or an RFC 6749 error."""
    application: Application | None = None
    presented: PresentedCode | None = None
    merchant: Merchant | None = None
    stored: MerchantAuthorizationCode | None = None
    secret = _bearer(authorization)
    key = (
        await keys.lookup_secret_key(session, hash_secret(secret))
        if secret and secret.startswith(("sk_test_", "sk_live_"))
        else None
    )
    if key is not None:
        tenant = Tenant(key.installation_id, key.livemode)
        settings = await installations.environment_settings_of(session, tenant)
        application = Application(
            tenant, settings.oauth_redirect_uris, may_connect=grants(frozenset(key.scopes), "merchants:write")
        )
        code = _single(form, "code")
        stored = await repository.code_by_hash(session, tenant, hash_secret(code)) if code else None
        if (
            stored is not None
            and stored.used_at is None
            and await tenant_now(session, tenant) < stored.expires_at
        ):
            merchant = await locked_merchant(session, tenant, stored.merchant_id)
            if merchant.consent_status == "granted":  # not revoked since it approved
                presented = PresentedCode(
                    id=stored.id,
                    merchant_id=stored.merchant_id,
                    redirect_uri=stored.redirect_uri,
                    scope=stored.scope,
                    code_challenge=stored.code_challenge,
                    code_challenge_method=stored.code_challenge_method,
                )
    server = MerchantAuthorizationServer(application, presented)
    try:
        request = Request("POST", uri, form, {})
    except OAuth2Error as insecure:  # authlib: OAuth over https only (or a loopback address)
        return server.handle_response(*insecure())
    answer: Answer = server.create_token_response(request)
    if isinstance(answer.body, dict) and answer.body.get("error") == "invalid_client":
        # RFC 6749 §5.2: a client that tried the Authorization header gets 401 and a challenge
        answer = Answer(401, answer.body, [*answer.headers, ("WWW-Authenticate", "Bearer")])
    if server.consumed and application is not None and merchant is not None and stored is not None:
        stored.used_at = utcnow()
        _move(merchant, "active")
        await session.flush()
        account = await merchant_accounts.ensure_account_for_merchant(
            session,
            application.tenant,
            merchant_id=merchant.id,
            business_name=merchant.business_name,
            email=merchant.support_email,
            bank_account_due=BANK_ACCOUNT_REQUIREMENT in merchant.requirements_due,
        )
        if account.bank_account_number is None and BANK_ACCOUNT_REQUIREMENT not in merchant.requirements_due:
            # its account has nowhere to pay out to yet (always so in live): activation collects it
            merchant.requirements_due = [*merchant.requirements_due, BANK_ACCOUNT_REQUIREMENT]
        await announce(session, application.tenant, merchant, "merchant.connected")
        logger.info("merchant_connected", merchant=merchant.id)
    return answer


# --- reading and revoking ---------------------------------------------------------------------------
async def locked_merchant(session: AsyncSession, tenant: Tenant, merchant_id: str) -> Merchant:
    merchant = await repository.get_merchant(session, tenant, merchant_id, for_update=True)
    if merchant is None:
        raise ResourceMissing(f"No such merchant: {merchant_id!r}", param="merchant")
    return merchant


async def get_merchant(session: AsyncSession, tenant: Tenant, merchant_id: str) -> Merchant:
    merchant = await repository.get_merchant(session, tenant, merchant_id)
    if merchant is None:
        raise ResourceMissing(f"No such merchant: {merchant_id!r}", param="merchant")
    return merchant


async def list_merchants(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Merchant]:
    return await repository.list_merchants(session, tenant, limit=limit, after=after)


async def revoke(session: AsyncSession, tenant: Tenant, merchant_id: str) -> Merchant:
    """This application's access ends; the merchant's other applications keep theirs (their own rows)."""
    merchant = await locked_merchant(session, tenant, merchant_id)
    if merchant.connection_status not in {"active", "pending"}:
        raise Conflict(f"This merchant is {merchant.connection_status}: there is no access to revoke.")
    for open_link in await repository.open_connections_of(session, merchant.id):
        open_link.status = "expired"
    _move(merchant, "revoked")
    merchant.consent_status = "revoked"
    merchant.revoked_at = utcnow()
    await session.flush()
    await announce(session, tenant, merchant, "merchant.revoked")
    logger.info("merchant_revoked", merchant=merchant.id)
    return merchant


async def merchant_for_payment(session: AsyncSession, tenant: Tenant, merchant_id: str) -> Merchant:
    """The merchant a payment names: this tenant's, active, and able to take payments."""
    merchant = await repository.get_merchant(session, tenant, merchant_id)
    if merchant is None:
        raise ReferencedResourceMissing(f"No such merchant: {merchant_id!r}", param="merchant")
    if merchant.connection_status != "active":
        raise ParameterInvalid(
            f"Merchant {merchant_id!r} is {merchant.connection_status}, not active: it takes payments once "
            "it has approved the connection and you have exchanged its code.",
            param="merchant",
        )
    if capabilities_of(merchant).payments != "active":
        raise ParameterInvalid(
            f"Merchant {merchant_id!r} cannot take payments yet: requirements are due "
            f"({', '.join(merchant.requirements_due)}). Open an onboarding session for it.",
            param="merchant",
        )
    return merchant


async def unpayable_merchants(
    session: AsyncSession, tenant: Tenant, merchant_ids: Sequence[str]
) -> dict[str, str]:
    """Of these merchants, those whose connection is not active (merchant id -> status): their connected
    accounts receive no new distribution or transfer until they connect again."""
    statuses = await repository.connection_statuses(session, tenant, merchant_ids)
    return {merchant_id: status for merchant_id, status in statuses.items() if status != "active"}
