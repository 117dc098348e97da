"""Bearer-key authentication (CONVENTIONS.md §2)."""

from __future__ import annotations

from fastapi import Request

from moneyrail.api import keys
from moneyrail.api.context import Principal, request_uow
from moneyrail.errors import AuthenticationRequired, InvalidApiKey
from moneyrail.kit.tenant import Tenant


def _bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise AuthenticationRequired("No API key provided. Send it as `Authorization: Bearer <API_KEY>`.")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationRequired("The Authorization header must be `Bearer <API_KEY>`.")
    return token


async def authenticate(request: Request, *, allow_publishable: bool = False) -> Principal:
    token = _bearer_token(request)
    uow = request_uow(request)  # a remembered key needs no session, a lookup a lone statement
    if token.startswith(("pk_test_", "pk_live_")):
        if not allow_publishable:
            raise InvalidApiKey("A publishable key cannot be used on this server route; use a secret key.")
        publishable = await keys.find_active_publishable_key(uow, token)
        if publishable is None:
            raise InvalidApiKey("Invalid publishable key.")
        return Principal(
            tenant=Tenant(publishable.installation_id, publishable.livemode),
            key_id=publishable.id,
            key_kind="publishable",
            scopes=frozenset(),
        )
    if not token.startswith(("sk_test_", "sk_live_")):
        raise InvalidApiKey("Invalid API key.")
    key = await keys.find_active_secret_key(uow, token)
    if key is None:
        # Never echo the key back: a mistyped live key in an error message is a leaked live key.
        raise InvalidApiKey("Invalid API key.")
    return Principal(
        tenant=Tenant(key.installation_id, key.livemode),
        key_id=key.id,
        key_kind="secret",
        scopes=frozenset(key.scopes),
    )
