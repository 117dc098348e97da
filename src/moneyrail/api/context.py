"""What a request knows about its caller once the gate has let it in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.tenant import Tenant


@dataclass(frozen=True, slots=True)
class Principal:
    tenant: Tenant
    key_id: str
    key_kind: Literal["secret", "publishable"]
    scopes: frozenset[str]


def request_uow(request: Request) -> UnitOfWork:
    uow: UnitOfWork = request.state.uow
    return uow


def request_session(request: Request) -> AsyncSession:
    """The unit of work's session, made by the first call: for ORM work (see db/uow.py for who takes
    the unit of work instead)."""
    return request_uow(request).session


def request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))
