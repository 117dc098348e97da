"""The idempotency store (CONVENTIONS.md §4, after the IETF Idempotency-Key draft).

A key is claimed inside the request's own transaction: a transaction-scoped advisory lock marks it
in flight, the stored record (if any) is replayed or refused, and the new record is written by
`routing.py` in the same transaction as the effect, so a response is stored exactly when its
effect commits.

The claim is one round trip: the lock and the lookup in one statement. That statement's snapshot is
taken before its lock, so a first request that committed in between (and so released the lock) goes
unseen; the store then finds that live record under the key, refuses to replace it, and the request
rolls back with 409 `idempotency_key_in_use` (a retry replays the first answer). No savepoint either:
a refused effect is undone by rolling the whole transaction back and taking the key's lock again.
A route whose effect is one statement may run the claim inside that statement instead (`PendingClaim`,
`scoped(..., claim_in_statement=True)`): the same lock and lookup in a CTE, the effect conditioned on
them, so the gate's own round trip goes. Such a route may also write its stored answer in that one
statement (`PendingClaim.answer_write`), which then commits by itself: no BEGIN, no COMMIT. Its
answer is sealed before the statement, so before the database stamps the new object's `created`
(a sandbox row's is its tenant's clock): it is sealed with `CREATED_MARK` where `created` goes, the
statement copies the stamped moment into the record's `answer_created_at`, and a replay fills it in.
A record the one statement cannot write (a stale one under the key, or a first answer committed
while its claim looked) fails the whole statement on the key's primary key, so nothing of the effect
stays: the route then takes the transactional path.

Stored answers are sealed (kit/crypto.py): creation answers carry credentials (a payment's or setup
intent's `client_secret`, a checkout session's URL) that the database must not hold readable. Every
answer is sealed, not only those, so a new credential-bearing answer cannot be missed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from fastapi import Request
from pydantic import BaseModel
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.api.context import Principal, request_session
from moneyrail.config import get_settings
from moneyrail.db.raw import Write, WriteAt, driver_connection
from moneyrail.db.uow import rollback
from moneyrail.engine.schedule import register_periodic
from moneyrail.errors import (
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
)
from moneyrail.kit import crypto
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.models import IdempotencyRecord

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
# POSTs under these prefixes must carry a key (spec 4: "required on every POST of the products group").
KEY_REQUIRED_PREFIXES = ("/v1/products", "/v1/prices", "/v1/subscriptions")
IDEMPOTENT_METHODS = frozenset({"POST", "DELETE"})


@dataclass
class ClaimedKey:
    key: str
    fingerprint: str
    principal: Principal
    retention: timedelta
    # the answer went in the effect's own statement (`PendingClaim.answer_write`): nothing left to store
    answered: bool = False
    # the answer rides in the effect's last statement, uncommitted (`answer_with_effect`): nothing left to
    # store unless the transaction is undone
    answer_in_transaction: bool = False

    def answer_with_effect(self, status_code: int, body: bytes) -> WriteAt:
        """The stored answer as a write for the effect's last statement, committed with it.

        For a route whose claim statement deleted a record under the key past its retention
        (`PendingClaim.stale_record_deletion`). No ON CONFLICT: a record under the key can then only be
        one a first request committed while this one's claim looked (see the module's docstring); the
        statement fails on `pk_idempotency_records` and the route answers 409 as `store` would.
        """
        tenant = self.principal.tenant
        parameters = (tenant.installation_id, tenant.livemode, self.key, self.fingerprint, status_code)
        sealed = crypto.seal(body)
        self.answer_in_transaction = True

        def at(n: int) -> Write:
            # only parameter numbers are formatted in
            sql = (
                "INSERT INTO idempotency_records (installation_id, livemode, key, fingerprint, "  # noqa: S608
                f"status_code, response_body) VALUES (${n}::text, ${n + 1}::boolean, ${n + 2}::text, "
                f"${n + 3}::text, ${n + 4}::int, ${n + 5}::bytea)"
            )
            return Write(sql, (*parameters, sealed))

        return at

    async def undo_effect(self, session: AsyncSession) -> bool:
        """A business refusal: undo what the request wrote, then hold the key again to store the refusal.

        False when another request with the key took it in the moment between: the refusal is then
        answered but not stored (nothing of it committed; the key's record will be the other's).
        """
        await rollback(session)  # the effect, and the lock with it: refusals are rare, successes not
        self.answer_in_transaction = False  # rolled back with it
        session.expunge_all()  # nothing the refused effect left in the session may be flushed later
        connection = await driver_connection(session)
        tenant = self.principal.tenant
        locked: bool = await connection.fetchval(
            "SELECT pg_try_advisory_xact_lock($1)", advisory_lock_id(tenant, self.key)
        )
        return locked


class IdempotentReplay(Exception):
    def __init__(self, status_code: int, body: bytes) -> None:
        super().__init__(status_code)
        self.status_code = status_code
        self.body = body


def _is_valid_key(key: str) -> bool:
    # printable ASCII is exactly " " to "~" (str.isprintable refuses the controls and DEL)
    return 1 <= len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable()


def _without_card_secrets(body: Any) -> Any:
    """A card number has few enough possibilities that its plain hash could be reversed: the stored
    fingerprint keeps only its last four digits, and never the CVC."""
    if isinstance(body, dict):
        card = body.get("card")
        if isinstance(card, dict):
            number = card.get("number")
            masked = {key: value for key, value in card.items() if key not in {"number", "cvc"}}
            if isinstance(number, str):
                masked["last4"] = number[-4:]
            return {**body, "card": masked}
    return body


def _canonical_body(raw: bytes) -> bytes:
    try:
        body = orjson.loads(raw) if raw.strip() else None
    except orjson.JSONDecodeError:
        return hashlib.sha256(raw).digest()
    return b"" if body is None else orjson.dumps(_without_card_secrets(body), option=orjson.OPT_SORT_KEYS)


def _without_boundary(raw: bytes, content_type: str | None) -> bytes:
    """A multipart body as its parts: the boundary is a client's random choice, new on each retry."""
    kind, _, parameters = (content_type or "").partition(";")
    if kind.strip().lower() != "multipart/form-data":
        return raw
    for parameter in parameters.split(";"):
        name, _, value = parameter.strip().partition("=")
        if name.lower() == "boundary" and value.strip('"'):
            return raw.replace(value.strip('"').encode("latin-1"), b"")
    return raw


# A path of these characters is its own `request.url.path` (Starlette escapes `?`, `#` and `\\`, and
# urlsplit drops control characters and reads a leading `//` as a host): no URL object needed.
_PLAIN_PATH = re.compile(r"/(?!/)[A-Za-z0-9/_.~%:@!$&'()*+,;=-]*\Z")


def url_path(request: Request) -> str:
    """`request.url.path`, without building the request's URL for the usual path. A path no URL can hold
    (with no Host header, a newline then `/[`: the URL drops the newline and reads `//[` as an IPv6 host
    never closed) is taken as it came, instead of failing the request."""
    path: str = request.scope["path"]
    if _PLAIN_PATH.match(path):
        return path
    try:
        return request.url.path
    except ValueError:
        return path


async def fingerprint(request: Request) -> str:
    digest = hashlib.sha256()
    digest.update(request.method.encode())
    digest.update(b"\0" + url_path(request).encode() + b"\0")
    body = _without_boundary(await request.body(), request.headers.get("content-type"))
    digest.update(_canonical_body(body))
    return digest.hexdigest()


def advisory_lock_id(tenant: Tenant, key: str) -> int:
    """The 64-bit lock that marks (tenant, key) in flight."""
    scope = f"{tenant.installation_id}|{tenant.livemode}|{key}".encode()
    return int.from_bytes(hashlib.sha256(scope).digest()[:8], "big", signed=True)


# The claim: the key's lock and its live record (one past its retention window frees the key; the purge job
# deletes it later). Its parameters are $1 to $5 ($2 to $4 the key's scope and the key), so a route that
# claims in its own first statement (`PendingClaim`) puts it in a CTE ahead of that statement's own.
CLAIM_SQL = (
    "SELECT pg_try_advisory_xact_lock($1) AS locked, r.fingerprint, r.status_code, r.response_body, "
    "r.answer_created_at "
    "FROM (SELECT 1) AS one LEFT JOIN idempotency_records AS r "
    "ON r.installation_id = $2 AND r.livemode = $3 AND r.key = $4 "
    "AND r.created_at >= now() - $5::interval"
)


# For a claim run in a statement whose answer is then written without ON CONFLICT
# (`ClaimedKey.answer_with_effect`): a CTE deleting the record under the key that is past its retention
# window (the claim ignores it; the purge job would delete it later), once the claim holds the key's lock.
# The claim's parameters, its CTE named `claim`; in the request's transaction, so undone if the request is.
STALE_RECORD_DELETION_SQL = (
    "DELETE FROM idempotency_records AS stale USING claim WHERE claim.locked "
    "AND stale.installation_id = $2 AND stale.livemode = $3 AND stale.key = $4 "
    "AND stale.created_at < now() - $5::interval"
)
# The constraint an answer written with its effect meets when a first request's answer got there first.
ANSWER_CONFLICT = "pk_idempotency_records"


# Where `created` goes in an answer sealed before the database stamped it: a raw NUL byte, which JSON
# text never holds (control characters inside strings are escaped), so it cannot be mistaken for content.
CREATED_MARK = b"\x00"


def awaiting_created(body: bytes) -> bytes:
    """An answer rendered with `created` 0, its `created` turned into the mark.

    The first `"created":0` is the object's own: `created` comes before any caller-given field in
    every resource (`ResourceOut`), and inside a JSON string a quote is always escaped.
    """
    template = body.replace(b'"created":0', b'"created":' + CREATED_MARK, 1)
    if template == body:
        raise ValueError("the answer has no top-level created of 0 to mark")
    return template


def with_created(template: bytes, created_at: datetime) -> bytes:
    return template.replace(CREATED_MARK, str(to_unix(created_at)).encode(), 1)


def _stored_answer(claim_row: Mapping[str, Any]) -> bytes:
    body = crypto.open_sealed(bytes(claim_row["response_body"]))
    created_at: datetime | None = claim_row["answer_created_at"]
    return body if created_at is None else with_created(body, created_at)


@dataclass
class PendingClaim:
    """A valid Idempotency-Key whose claim has not run yet.

    The gate runs it at once (`claim`); a route declared with `scoped(..., claim_in_statement=True)`
    gets it to run inside its own first statement instead (one round trip fewer), then hands the
    claim's row to `settle` before anything else happens.
    """

    request: Request
    key: str
    fingerprint: str
    principal: Principal
    retention: timedelta

    @property
    def sql(self) -> str:
        return CLAIM_SQL

    @property
    def stale_record_deletion(self) -> str:
        return STALE_RECORD_DELETION_SQL

    @property
    def parameters(self) -> tuple[Any, ...]:
        tenant = self.principal.tenant
        return (
            advisory_lock_id(tenant, self.key),
            tenant.installation_id,
            tenant.livemode,
            self.key,
            self.retention,
        )

    def settle(self, claim_row: Mapping[str, Any]) -> None:
        """Raise the replay or the refusal the claim's row calls for; else the key is this request's."""
        self.request.state.pending_idempotency = None
        if not claim_row["locked"]:
            raise IdempotencyKeyInUse(
                "A request with this Idempotency-Key is still being processed; retry later."
            )
        if claim_row["fingerprint"] is not None:
            if claim_row["fingerprint"] != self.fingerprint:
                raise IdempotencyKeyReused(
                    "This Idempotency-Key was used with another request (method, path or body differ)."
                )
            raise IdempotentReplay(claim_row["status_code"], _stored_answer(claim_row))
        self.request.state.idempotency = ClaimedKey(
            key=self.key,
            fingerprint=self.fingerprint,
            principal=self.principal,
            retention=self.retention,
            answered=bool(claim_row.get("answered")),
        )

    def answer_write(self, status_code: int, template: bytes, first_parameter: int) -> Write:
        """The stored answer's INSERT, for a CTE of the statement that runs this claim and its effect.

        `template` is the answer with `CREATED_MARK` for `created` (`awaiting_created`). The statement
        names its effect's CTE `effect`, with the stamped `created_at` in its RETURNING: the record is
        written only where the effect was. No ON CONFLICT: a record under the key (a stale one, or a
        first answer committed after this statement's snapshot) fails the whole statement with a
        unique violation on `pk_idempotency_records`, and the caller takes the transactional path.
        The statement must select `stored.answered` as `answered`, for `settle`.
        """
        n = first_parameter
        # only parameter numbers are formatted in
        sql = (
            "INSERT INTO idempotency_records (installation_id, livemode, key, fingerprint, status_code, "  # noqa: S608
            f"response_body, answer_created_at) SELECT $2, $3, $4, ${n}::text, ${n + 1}::int, "
            f"${n + 2}::bytea, effect.created_at FROM effect RETURNING true AS answered"
        )
        return Write(sql, (self.fingerprint, status_code, crypto.seal(template)))


class AnswerWithEffect:
    """A route's answer serialized once, and stored under the request's key by the effect's last
    statement (`ClaimedKey.answer_with_effect`) instead of an INSERT of its own after it.

    The route's service calls `write` with the answer just before its last statement and runs the write
    it gets (None: no key was sent); the endpoint then answers `body`, the very bytes stored, so a replay
    is byte-identical. Only an answer that ends the request goes this way: a refusal raised after it
    would roll the stored answer back with the effect (`undo_effect`), and one that keeps its effect
    cannot (the route refuses to commit both).
    """

    def __init__(self, request: Request) -> None:
        self._request = request
        self.body: bytes | None = None

    def write(self, answer: BaseModel) -> WriteAt | None:
        if self.body is not None:
            raise RuntimeError("a request has one answer")
        self.body = answer.__pydantic_serializer__.to_json(answer)
        claimed = claimed_key(self._request)
        return claimed.answer_with_effect(200, self.body) if claimed is not None else None


async def claim(request: Request, principal: Principal, retention: timedelta, *, defer: bool = False) -> None:
    """Claim the request's Idempotency-Key, or raise the replay / refusal it calls for.

    `defer`: check the key and take the request's fingerprint only; the route's first statement runs
    the claim (`pending_claim`).
    """
    if request.method not in IDEMPOTENT_METHODS:
        return
    key = request.headers.get(HEADER)
    if key is None:
        if request.method == "POST" and url_path(request).startswith(KEY_REQUIRED_PREFIXES):
            raise IdempotencyKeyRequired(f"This request needs an {HEADER} header.")
        return
    if not _is_valid_key(key):
        raise IdempotencyKeyInvalid(f"{HEADER} must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.")

    pending = PendingClaim(request, key, await fingerprint(request), principal, retention)
    if defer:
        request.state.pending_idempotency = pending
        return
    connection = await driver_connection(request_session(request))  # every POST: straight on the driver
    pending.settle(await connection.fetchrow(pending.sql, *pending.parameters))


def pending_claim(request: Request) -> PendingClaim | None:
    """The claim a `claim_in_statement` route must run in its first statement (None: no key sent)."""
    pending: PendingClaim | None = getattr(request.state, "pending_idempotency", None)
    return pending


def claimed_key(request: Request) -> ClaimedKey | None:
    claimed: ClaimedKey | None = getattr(request.state, "idempotency", None)
    return claimed


async def store(session: AsyncSession, claimed: ClaimedKey, status_code: int, body: bytes) -> None:
    """Write the response in the request's transaction; an expired record under the key is replaced.

    A live record under the key means a first request committed while this one's claim looked (see the
    module's docstring): this one then rolls back as in flight, and its retry replays the first.
    """
    tenant = claimed.principal.tenant
    connection = await driver_connection(session)
    written = await connection.fetchval(
        """
        INSERT INTO idempotency_records
            (installation_id, livemode, key, fingerprint, status_code, response_body)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (installation_id, livemode, key) DO UPDATE
        SET fingerprint = EXCLUDED.fingerprint, status_code = EXCLUDED.status_code,
            response_body = EXCLUDED.response_body, created_at = now()
        WHERE idempotency_records.created_at < now() - $7::interval
        RETURNING true
        """,
        tenant.installation_id,
        tenant.livemode,
        claimed.key,
        claimed.fingerprint,
        status_code,
        crypto.seal(body),
        claimed.retention,
    )
    if written is None:
        raise IdempotencyKeyInUse(
            "A request with this Idempotency-Key has just finished; retry to see its answer."
        )


def is_storable(status_code: int) -> bool:
    """Stored: 2xx and business 4xx. Not stored: 401, 403, 429 and 5xx (the key stays free)."""
    return status_code < 500 and status_code not in {401, 403, 429}


async def purge_expired(session: AsyncSession, retention: timedelta) -> int:
    result = await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < utcnow() - retention)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def _purge_with_configured_retention(session: AsyncSession) -> Awaitable[int]:
    return purge_expired(session, timedelta(hours=get_settings().idempotency_retention_hours))


register_periodic("idempotency.purge", timedelta(minutes=10), _purge_with_configured_retention)
