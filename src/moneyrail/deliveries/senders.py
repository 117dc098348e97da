"""How a receipt leaves: e-mail through a real SMTP server, SMS through a sender chosen by name.

Both raise the engine's outcomes, so the operation that sends is retried or ended as the reply deserves:
a connection fault or a 4xx reply is worth another attempt (TransientFailure); a 5xx reply is a
refusal (PermanentFailure), and so is a missing or unusable configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from typing import Protocol
from urllib.parse import unquote, urlsplit

import aiosmtplib
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.outcomes import PermanentFailure, TransientFailure
from moneyrail.kit.tenant import Tenant

from . import repository
from .recipients import redact

SMTP_TIMEOUT_SECONDS = 20.0
SMTP_DEFAULT_PORTS = {"smtp": 25, "smtps": 465}


# --- e-mail ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SmtpServer:
    """Where `smtp_url` points: `smtp://[user:password@]host:port`, `smtps://` for implicit TLS."""

    hostname: str
    port: int
    implicit_tls: bool
    username: str | None
    password: str | None

    def __repr__(self) -> str:  # a stray log line must not carry the password
        return f"SmtpServer({self.hostname}:{self.port}, implicit_tls={self.implicit_tls})"


def parse_smtp_url(url: str) -> SmtpServer:
    """Raises PermanentFailure for a URL no retry can make usable."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError as error:
        raise PermanentFailure("smtp_misconfigured", "The SMTP URL has an invalid port.") from error
    if parts.scheme not in SMTP_DEFAULT_PORTS or not parts.hostname:
        raise PermanentFailure(
            "smtp_misconfigured",
            "The SMTP URL must look like smtp://[user:password@]host:port (or smtps://).",
        )
    return SmtpServer(
        hostname=parts.hostname,
        port=port or SMTP_DEFAULT_PORTS[parts.scheme],
        implicit_tls=parts.scheme == "smtps",
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def _by_reply_code(code: int, description: str) -> Exception:
    if 500 <= code < 600:
        return PermanentFailure("smtp_refused", description)
    return TransientFailure(description)


async def send_email(server: SmtpServer, message: EmailMessage, *, sender: str, recipient: str) -> None:
    """Hand one message for one recipient to the SMTP server, or raise the matching outcome.

    `redact` keeps the full address out of the error text a server may echo back (it becomes the
    delivery's `last_error`, shown over the API next to the masked recipient).
    """
    try:
        await aiosmtplib.send(
            message,
            sender=sender,
            recipients=[recipient],
            hostname=server.hostname,
            port=server.port,
            username=server.username,
            password=server.password,
            use_tls=server.implicit_tls,
            timeout=SMTP_TIMEOUT_SECONDS,
        )
    except aiosmtplib.SMTPRecipientsRefused as refused:
        reply = refused.recipients[0]
        described = redact(f"{reply.code} {reply.message}", "email", recipient)
        raise _by_reply_code(reply.code, f"The mail server refused the recipient: {described}") from refused
    except aiosmtplib.SMTPResponseException as error:
        described = redact(f"{error.code} {error.message}", "email", recipient)
        raise _by_reply_code(error.code, f"The mail server answered {described}") from error
    except (aiosmtplib.SMTPException, OSError) as error:  # connection refused or lost, timeout, TLS
        raise TransientFailure(f"The mail server could not be reached: {type(error).__name__}") from error


# --- SMS ---------------------------------------------------------------------------------------
class SmsSender(Protocol):
    """Sends one text. `idempotency_key` is the same for every attempt of one receipt: a sender that
    talks to a provider passes it on, so a retried attempt never sends twice. Raises TransientFailure
    or PermanentFailure like the SMTP path."""

    async def send(
        self, session: AsyncSession, tenant: Tenant, *, recipient: str, body: str, idempotency_key: str
    ) -> None: ...


class SandboxSmsSender:
    """Sends nothing: records the message, once per idempotency key, for tests and developers."""

    async def send(
        self, session: AsyncSession, tenant: Tenant, *, recipient: str, body: str, idempotency_key: str
    ) -> None:
        await repository.record_sandbox_sms(
            session, tenant, recipient=recipient, body=body, idempotency_key=idempotency_key
        )


_SMS_SENDERS: dict[str, SmsSender] = {}


def register_sms_sender(name: str, sender: SmsSender) -> None:
    """A provider's sender, registered by a plug-in module (MONEYRAIL_WORKER_MODULES) under a name that
    MONEYRAIL_SMS_SENDER then chooses."""
    _SMS_SENDERS[name] = sender


def sms_sender(name: str) -> SmsSender:
    sender = _SMS_SENDERS.get(name)
    if sender is None:
        raise PermanentFailure("sms_not_configured", f"No SMS sender is registered under the name {name!r}.")
    return sender


register_sms_sender("sandbox", SandboxSmsSender())
