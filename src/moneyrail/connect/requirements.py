"""What a connected account still has to provide, derived from what it has provided (never stored
separately, so a read always shows the current state).

    currently_due    needed now: payouts stay disabled until the hosted onboarding page collects them
    eventually_due   needed later, at a volume threshold (the sandbox never reaches it); includes
                     everything currently due
    past_due         currently due items whose deadline passed (the sandbox sets none)
"""

from __future__ import annotations

from dataclasses import dataclass

from moneyrail.models import ConnectedAccount

ONBOARDING_FIELDS = ("individual.first_name", "individual.last_name", "individual.dob", "tos_acceptance")
# a merchant's account: the business was verified on its consent; only the bank account can be due
MERCHANT_FIELDS = ("external_account",)
FUTURE_FIELDS = ("individual.verification.document",)


@dataclass(frozen=True)
class Requirements:
    currently_due: tuple[str, ...]
    eventually_due: tuple[str, ...]
    past_due: tuple[str, ...]

    @property
    def payouts_enabled(self) -> bool:
        return not self.currently_due and not self.past_due

    @property
    def disabled_reason(self) -> str | None:
        return None if self.payouts_enabled else "requirements.currently_due"

    @classmethod
    def of(cls, account: ConnectedAccount) -> Requirements:
        if account.merchant_id is not None:
            due = () if account.bank_account_number else MERCHANT_FIELDS
            return cls(due, due, ())
        provided = set()
        for field in ("first_name", "last_name", "dob"):
            if account.individual.get(field):
                provided.add(f"individual.{field}")
        if account.tos_accepted_at is not None:
            provided.add("tos_acceptance")
        currently_due = tuple(item for item in ONBOARDING_FIELDS if item not in provided)
        return cls(currently_due, (*currently_due, *FUTURE_FIELDS), ())
