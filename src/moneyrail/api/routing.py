"""The request's edge: the gate every route declares, and the route class that commits.

`scoped(scope)` is the one gate a route declares: it authenticates the key, checks the
route's scope and claims the Idempotency-Key. `MoneyrailRoute` opens the request's unit of work
around the endpoint and commits it together with the stored idempotent response.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import timedelta
from functools import lru_cache
from typing import Any

from asyncpg.exceptions import UniqueViolationError
from fastapi import Request, Response, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.models import HTTPBearer as HTTPBearerModel
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import SecurityScopes
from fastapi.security.base import SecurityBase

from moneyrail.api import idempotency, rate_limits
from moneyrail.api.auth import authenticate
from moneyrail.api.context import Principal, request_id
from moneyrail.api.errors import error_body
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import IdempotencyKeyInUse, InsufficientScope, InvalidApiKey, MoneyrailError
from moneyrail.kit.scopes import grants, is_known_scope


class ApiKeyGate(SecurityBase):
    """Authentication, then the route's scope, then the Idempotency-Key claim.

    A security scheme, so each route's scope is part of /openapi.json (`security: [{"ApiKey": [scope]}]`).
    """

    def __init__(self, *, client_side: bool = False, claim_in_statement: bool = False) -> None:
        if client_side:
            self.model = HTTPBearerModel(
                description="`Authorization: Bearer pk_test_…`: the publishable key, with the object's "
                "`client_secret` in the body. A secret key stays on the server and is refused here."
            )
            self.scheme_name = "PublishableKey"
        else:
            self.model = HTTPBearerModel(description="`Authorization: Bearer sk_test_…`")
            self.scheme_name = "ApiKey"
        self.client_side = client_side
        self.claim_in_statement = claim_in_statement

    async def __call__(self, request: Request, security_scopes: SecurityScopes) -> Principal:
        if len(security_scopes.scopes) != 1 or not is_known_scope(security_scopes.scopes[0]):
            raise RuntimeError(f"a route must declare exactly one known scope, not {security_scopes.scopes}")
        scope = security_scopes.scopes[0]
        principal = await authenticate(request, allow_publishable=self.client_side)
        request.state.principal = principal
        if self.client_side and principal.key_kind != "publishable":
            raise InvalidApiKey(
                "This is a client-side route: call it with the publishable key (pk_…) and the client_secret."
                " Keep the secret key on your server."
            )
        if principal.key_kind == "secret" and not grants(principal.scopes, scope):
            raise InsufficientScope(f"This API key lacks the `{scope}` scope needed here.")
        await rate_limits.check(request, principal)  # before the key's claim: a 429 is never stored
        retention = _retention(request.app.state.settings.idempotency_retention_hours)
        await idempotency.claim(request, principal, retention, defer=self.claim_in_statement)
        return principal


@lru_cache(maxsize=8)  # one setting per app: a timedelta made once, not per request
def _retention(hours: int) -> timedelta:
    return timedelta(hours=hours)


secret_key_gate = ApiKeyGate()
secret_key_gate_claiming_in_statement = ApiKeyGate(claim_in_statement=True)
publishable_key_gate = ApiKeyGate(client_side=True)
publishable_key_gate_claiming_in_statement = ApiKeyGate(client_side=True, claim_in_statement=True)


def scoped(scope: str, *, claim_in_statement: bool = False) -> Any:
    """`principal: Annotated[Principal, scoped("customers:write")]` in an endpoint's signature.

    `claim_in_statement`: the route's effect is one statement that runs the Idempotency-Key's claim
    itself (`idempotency.pending_claim`), saving the gate's round trip; the route must run it.
    """
    if not is_known_scope(scope):
        raise ValueError(f"unknown scope {scope!r}")
    gate = secret_key_gate_claiming_in_statement if claim_in_statement else secret_key_gate
    return Security(gate, scopes=[scope])


def client_side(scope: str, *, claim_in_statement: bool = False) -> Any:
    """A route for browsers and apps: the publishable key only; the body's client_secret authorizes.

    `claim_in_statement`: as for `scoped`.
    """
    if not is_known_scope(scope):
        raise ValueError(f"unknown scope {scope!r}")
    gate = publishable_key_gate_claiming_in_statement if claim_in_statement else publishable_key_gate
    return Security(gate, scopes=[scope])


class MoneyrailRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        endpoint_handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            async with UnitOfWork(request.app.state.sessionmaker) as uow:
                request.state.uow = uow
                try:
                    response = await endpoint_handler(request)
                except idempotency.IdempotentReplay as replay:
                    return Response(
                        replay.body,
                        status_code=replay.status_code,
                        media_type="application/json",
                        headers={"Idempotent-Replayed": "true"},
                    )
                except RequestValidationError:
                    raise  # a request that never ran: nothing stored, the key stays free
                except UniqueViolationError as violation:
                    claimed = idempotency.claimed_key(request)
                    if (
                        claimed is None
                        or not claimed.answer_in_transaction
                        or violation.constraint_name != idempotency.ANSWER_CONFLICT
                    ):
                        raise
                    # a first request with the key committed while this one's claim looked: as `store`
                    raise IdempotencyKeyInUse(
                        "A request with this Idempotency-Key has just finished; retry to see its answer."
                    ) from None
                except MoneyrailError as error:
                    claimed = idempotency.claimed_key(request)
                    if claimed is not None and claimed.answered:
                        raise  # its answer committed with its effect: nothing of it to undo or store
                    if claimed is not None and claimed.answer_in_transaction and error.keeps_effect:
                        raise RuntimeError(
                            f"{request.url.path} wrote its answer, then refused keeping its effect"
                        ) from error
                    stored = claimed is not None and idempotency.is_storable(error.status)
                    if not (stored or error.keeps_effect):
                        raise
                    if claimed is not None and not error.keeps_effect:
                        # A business refusal: undo its partial effect, hold the key again, store the refusal.
                        stored = await claimed.undo_effect(uow.session) and stored
                    # (a refusal that is an outcome in itself, such as a recorded decline, commits its effect)
                    refusal = JSONResponse(error_body(error, request_id(request)), status_code=error.status)
                    if claimed is not None and stored:
                        await idempotency.store(uow.session, claimed, error.status, bytes(refusal.body))
                    await uow.commit()
                    return refusal
                if idempotency.pending_claim(request) is not None:
                    raise RuntimeError(f"{request.url.path} answered without running its key's claim")
                claimed = idempotency.claimed_key(request)
                if (
                    claimed is not None
                    and not (claimed.answered or claimed.answer_in_transaction)
                    and idempotency.is_storable(response.status_code)
                ):
                    await idempotency.store(uow.session, claimed, response.status_code, bytes(response.body))
                await uow.commit()
                return response

        return handle
