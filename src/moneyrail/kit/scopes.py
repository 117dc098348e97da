"""Scope names and how a key's scopes grant a route's scope (CONVENTIONS.md §2)."""

from __future__ import annotations

from collections.abc import Iterable

ALL_SCOPES = "*"

AREAS = frozenset(
    {
        "account",
        "accounts",
        "billing",
        "commerce",
        "customers",
        "disputes",
        "merchants",
        "operations",
        "payments",
        "payouts",
        "reconciliation",
        "risk",
        "transfers",
        "webhooks",
    }
)


def is_known_scope(scope: str) -> bool:
    if scope == ALL_SCOPES:
        return True
    area, _, access = scope.partition(":")
    return area in AREAS and access in {"read", "write"}


def unknown_scopes(scopes: Iterable[str]) -> list[str]:
    return [scope for scope in scopes if not is_known_scope(scope)]


def grants(held: Iterable[str], required: str) -> bool:
    """`*` grants everything; `area:write` implies `area:read`."""
    held_set = set(held)
    if ALL_SCOPES in held_set or required in held_set:
        return True
    area, _, access = required.partition(":")
    return access == "read" and f"{area}:write" in held_set
