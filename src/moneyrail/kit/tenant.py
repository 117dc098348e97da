"""Who a row belongs to: one installation in one environment."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Tenant:
    installation_id: str
    livemode: bool

    @property
    def environment(self) -> str:
        return "live" if self.livemode else "sandbox"
