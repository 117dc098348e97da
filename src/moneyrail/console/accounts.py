"""Operator accounts: created from the CLI with a one-time set-up link, set up on that link's page
(a password and a TOTP second factor), signed in to server-side sessions, locked after failed sign-ins.

Account states: awaiting set-up (no password yet), active, locked (until `locked_until`), disabled.
Times are the wall clock's: operators belong to no tenant, so no sandbox clock applies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.audit import service as audit
from moneyrail.config import Settings
from moneyrail.console import credentials, repository
from moneyrail.engine.schedule import register_periodic
from moneyrail.errors import Conflict, ParameterInvalid, ResourceMissing
from moneyrail.kit import crypto, single_use
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.models import Operator, OperatorSession, OperatorSetupLink
from moneyrail.models.console import OPERATOR_ROLES

logger = structlog.get_logger("moneyrail.console")

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
SESSION_CSRF_PURPOSE = "console"
SETUP_CSRF_PURPOSE = "setup"
# ended sessions are kept this long (who was signed in when), then swept
SESSION_RECORD_LIFETIME = timedelta(days=30)


def setup_url(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}/console/setup/{token}"


def operator_status(operator: Operator, now: datetime) -> str:
    if operator.disabled_at is not None:
        return "disabled"
    if operator.password_hash is None:
        return "awaiting set-up"
    if operator.locked_until is not None and now < operator.locked_until:
        return "locked"
    return "active"


# --- the CLI: creating, listing, disabling, resetting ---------------------------------------------
@dataclass(frozen=True)
class IssuedLink:
    operator: Operator
    url: str
    expires_at: datetime


def _email(raw: str) -> str:
    email = raw.strip().lower()
    if not EMAIL.match(email) or len(email) > 254:
        raise ParameterInvalid(f"{raw!r} is not an e-mail address.", param="email")
    return email


async def _operator(session: AsyncSession, raw_email: str) -> Operator:
    operator = await repository.operator_by_email(session, _email(raw_email), for_update=True)
    if operator is None:
        raise ResourceMissing(f"No operator with the e-mail {raw_email.strip().lower()!r}.", param="email")
    return operator


async def _issue_link(session: AsyncSession, operator: Operator, settings: Settings) -> IssuedLink:
    now = utcnow()
    await repository.retire_links(session, operator.id, now)
    token = credentials.new_secret()
    expires_at = now + timedelta(hours=settings.console_setup_link_hours)
    link = OperatorSetupLink(
        id=new_id("oplink"),
        operator_id=operator.id,
        token_hash=credentials.digest(token),
        expires_at=expires_at,
    )
    await repository.add(session, link)
    return IssuedLink(operator, setup_url(settings.base_url, token), expires_at)


async def create_operator(
    session: AsyncSession, *, email: str, role: str, actor: str, settings: Settings
) -> IssuedLink:
    """A new operator, awaiting set-up, and the one-time link where they set their credentials."""
    address = _email(email)
    if role not in OPERATOR_ROLES:
        raise ParameterInvalid(f"The role is viewer or operator, not {role!r}.", param="role")
    if await repository.operator_by_email(session, address) is not None:
        raise Conflict(
            f"An operator with the e-mail {address!r} exists; `moneyrail operators reset` issues a new link.",
            param="email",
        )
    operator = Operator(id=new_id("opr"), email=address, role=role)
    await repository.add(session, operator)
    issued = await _issue_link(session, operator, settings)
    await audit.record(
        session, actor=actor, via="cli", action="operator.created", subject=address, details={"role": role}
    )
    logger.info("operator_created", operator=operator.id, role=role)
    return issued


async def list_operators(session: AsyncSession) -> Sequence[Operator]:
    return await repository.operators(session)


async def disable_operator(session: AsyncSession, email: str, *, actor: str, reason: str | None) -> Operator:
    """The account stops working at once: its sessions end, and it cannot sign in."""
    operator = await _operator(session, email)
    now = utcnow()
    operator.disabled_at = operator.disabled_at or now
    operator.updated_at = now
    await repository.end_sessions(session, operator.id, now)
    await audit.record(
        session, actor=actor, via="cli", action="operator.disabled", subject=operator.email, reason=reason
    )
    await session.flush()
    return operator


async def enable_operator(session: AsyncSession, email: str, *, actor: str, reason: str | None) -> Operator:
    operator = await _operator(session, email)
    operator.disabled_at = None
    operator.updated_at = utcnow()
    await audit.record(
        session, actor=actor, via="cli", action="operator.enabled", subject=operator.email, reason=reason
    )
    await session.flush()
    return operator


async def reset_operator(
    session: AsyncSession, email: str, *, actor: str, reason: str | None, settings: Settings
) -> IssuedLink:
    """A lost phone or password: the credentials go, every session ends, earlier links stop working,
    and a new set-up link sets both again. A lock is lifted; a disabled account stays disabled."""
    operator = await _operator(session, email)
    now = utcnow()
    operator.password_hash = None
    operator.totp_secret = None
    operator.last_totp_step = None
    operator.set_up_at = None
    operator.failed_sign_ins = 0
    operator.locked_until = None
    operator.updated_at = now
    await repository.end_sessions(session, operator.id, now)
    issued = await _issue_link(session, operator, settings)
    await audit.record(
        session, actor=actor, via="cli", action="operator.reset", subject=operator.email, reason=reason
    )
    return issued


# --- the set-up page ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SetupForm:
    password: str
    confirmation: str
    code: str
    csrf_token: str | None


@dataclass(frozen=True)
class SetupPage:
    state: str  # form | done | missing | used | opened | expired
    email: str = ""
    role: str = ""
    totp_uri: str = ""
    totp_secret: str = ""  # grouped for reading
    qr_svg: str = ""
    error: str | None = None
    csrf_token: str = ""
    new_session: str | None = None  # the first open's page session, for the browser to keep


async def _usable_link(
    session: AsyncSession, token: str, page_session: str | None
) -> tuple[OperatorSetupLink | None, Operator | None, SetupPage]:
    link = await repository.link_by_token_hash(session, credentials.digest(token))
    if link is None:
        return None, None, SetupPage("missing")
    if link.used_at is not None:
        return None, None, SetupPage("used")
    entry = single_use.enter(link, utcnow(), page_session)
    if entry.refused is not None:
        return None, None, SetupPage(entry.refused)
    operator = await repository.operator_by_id(session, link.operator_id, for_update=True)
    assert operator is not None  # a link always names its operator
    if operator.totp_secret is None or entry.new_session is not None:
        operator.totp_secret = crypto.seal_text(credentials.new_totp_secret())  # chosen at the first open
    totp_secret = crypto.open_text(operator.totp_secret)
    uri = credentials.provisioning_uri(totp_secret, operator.email)
    session_secret = entry.new_session or page_session or ""
    page = SetupPage(
        "form",
        email=operator.email,
        role=operator.role,
        totp_uri=uri,
        totp_secret=credentials.readable_secret(totp_secret),
        qr_svg=credentials.qr_code_svg(uri),
        csrf_token=credentials.csrf_token(session_secret, SETUP_CSRF_PURPOSE),
        new_session=entry.new_session,
    )
    return link, operator, page


async def show_setup(session: AsyncSession, token: str, page_session: str | None) -> SetupPage:
    return (await _usable_link(session, token, page_session))[2]


async def submit_setup(
    session: AsyncSession, token: str, page_session: str | None, form: SetupForm
) -> SetupPage:
    """A mistake shows the form again (the page session goes on); success uses the link up."""
    link, operator, page = await _usable_link(session, token, page_session)
    if link is None or operator is None:
        return page
    if not credentials.csrf_matches(page_session, SETUP_CSRF_PURPOSE, form.csrf_token):
        return replace(page, state="refused")
    problem = credentials.password_problem(form.password, form.confirmation)
    now = utcnow()
    assert operator.totp_secret is not None
    step = credentials.matching_step(crypto.open_text(operator.totp_secret), form.code, now)
    if problem is None and step is None:
        problem = (
            "That code is not the one your authenticator app shows now. Add the key to the app and try again."
        )
    if problem is not None:
        return replace(page, error=problem)
    operator.password_hash = credentials.hash_password(form.password)
    operator.last_totp_step = step
    operator.set_up_at = now
    operator.failed_sign_ins = 0
    operator.locked_until = None
    operator.updated_at = now
    link.used_at = now
    await audit.record(
        session, actor=operator.email, via="console", action="operator.set_up", subject=operator.email
    )
    logger.info("operator_set_up", operator=operator.id)
    return replace(page, state="done", totp_uri="", totp_secret="", qr_svg="")


# --- signing in -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SignInResult:
    outcome: str  # signed_in | refused | locked
    session_secret: str | None = None
    retry_after_seconds: int = 0


@dataclass(frozen=True)
class SignedIn:
    """The operator of this request's console session."""

    operator_id: str
    email: str
    role: str
    session_id: str
    csrf_token: str

    @property
    def can_act(self) -> bool:
        return self.role == "operator"


def _locked_for(operator: Operator, now: datetime) -> int:
    assert operator.locked_until is not None
    return max(1, math.ceil((operator.locked_until - now).total_seconds()))


async def sign_in(
    session: AsyncSession, *, email: str, password: str, code: str, settings: Settings
) -> SignInResult:
    """Password and TOTP code together. Whatever is wrong (the address, the password, the code) the
    answer is the same; each failure counts, and `console_lockout_attempts` in a row lock the account
    for `console_lockout_seconds`, during which not even the right credentials open it."""
    now = utcnow()
    address = email.strip().lower()
    operator = await repository.operator_by_email(session, address, for_update=True) if address else None
    if operator is not None and operator.locked_until is not None and now < operator.locked_until:
        return SignInResult("locked", retry_after_seconds=_locked_for(operator, now))
    stored = operator.password_hash if operator is not None and operator.disabled_at is None else None
    password_ok = credentials.password_matches(stored, password)  # hashes even for no account: same time
    if operator is None or stored is None:
        return SignInResult("refused")
    step = None
    if password_ok and operator.totp_secret is not None:
        step = credentials.matching_step(crypto.open_text(operator.totp_secret), code, now)
        if step is not None and operator.last_totp_step is not None and step <= operator.last_totp_step:
            step = None  # a code already used: never twice
    operator.updated_at = now
    if step is None:
        operator.failed_sign_ins += 1
        if operator.failed_sign_ins < settings.console_lockout_attempts:
            return SignInResult("refused")
        operator.failed_sign_ins = 0
        operator.locked_until = now + timedelta(seconds=settings.console_lockout_seconds)
        await audit.record(
            session,
            actor=operator.email,
            via="console",
            action="operator.locked",
            subject=operator.email,
            details={
                "failed_sign_ins": settings.console_lockout_attempts,
                "until": operator.locked_until.isoformat(),
            },
        )
        logger.warning("operator_locked", operator=operator.id)
        return SignInResult("locked", retry_after_seconds=_locked_for(operator, now))
    if credentials.needs_rehash(stored):
        operator.password_hash = credentials.hash_password(password)
    operator.failed_sign_ins = 0
    operator.locked_until = None
    operator.last_totp_step = step
    operator.last_sign_in_at = now
    secret = credentials.new_secret()
    await repository.add(
        session,
        OperatorSession(
            id=credentials.digest(secret),
            operator_id=operator.id,
            last_seen_at=now,
            expires_at=now + timedelta(seconds=settings.console_session_absolute_seconds),
        ),
    )
    await audit.record(
        session, actor=operator.email, via="console", action="operator.signed_in", subject=operator.email
    )
    logger.info("operator_signed_in", operator=operator.id)
    return SignInResult("signed_in", session_secret=secret)


async def signed_in(session: AsyncSession, secret: str | None, settings: Settings) -> SignedIn | None:
    """The session this cookie's secret opens, if it is still going: not ended, within its absolute
    lifetime and its idle time, its operator neither disabled nor reset. Each use restarts the idle time."""
    if not secret:
        return None
    now = utcnow()
    found = await repository.session_by_id(session, credentials.digest(secret))
    if (
        found is None
        or found.ended_at is not None
        or now >= found.expires_at
        or now >= found.last_seen_at + timedelta(seconds=settings.console_session_idle_seconds)
    ):
        return None
    operator = await repository.operator_by_id(session, found.operator_id)
    if operator is None or operator.disabled_at is not None or operator.password_hash is None:
        return None
    found.last_seen_at = now
    return SignedIn(
        operator_id=operator.id,
        email=operator.email,
        role=operator.role,
        session_id=found.id,
        csrf_token=credentials.csrf_token(secret, SESSION_CSRF_PURPOSE),
    )


async def sign_out(session: AsyncSession, signed: SignedIn) -> None:
    found = await repository.session_by_id(session, signed.session_id)
    if found is not None and found.ended_at is None:
        found.ended_at = utcnow()
        await session.flush()


async def _sweep_sessions(session: AsyncSession) -> int:
    return await repository.delete_sessions_over(session, utcnow() - SESSION_RECORD_LIFETIME)


register_periodic("console.sessions", timedelta(hours=1), _sweep_sessions)
