"""Reversing a paid payout (spec 4.G; CONVENTIONS.md §13: reverse only when `paid`).

As Stripe does: only a paid payout can be reversed, and only once; a reversal cannot itself be reversed.
The reversal is a new payout (`po_…`, its `original_payout` the reversed one, whose `reversed_by` names
it) for the same amount in the other direction: its `payout` operation asks the processor to take the
money back from the bank account, it is `in_transit` until its arrival date on the environment's clock,
then `paid` with the money back in the balance the original left. The instant fee is not returned.

The original's row lock makes two reversals requested at once take turns: the second finds
`reversed_by` set, and a partial unique index keeps one live reversal per payout. A reversal that fails or
is canceled before the bank gives the money up releases the
original, which can then be reversed again.
"""

from __future__ import annotations

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.errors import Conflict, ResourceMissing
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Payout
from moneyrail.processor import provider

from . import repository
from .schemas import PayoutReverse
from .service import announce, start_operation

logger = structlog.get_logger("moneyrail.payouts")


async def reverse_payout(
    session: AsyncSession, tenant: Tenant, payout_id: str, command: PayoutReverse
) -> Payout:
    await provider.require_processor(session, tenant)
    original = await repository.get(session, tenant, payout_id, for_update=True)
    if original is None:
        raise ResourceMissing(f"No such payout: {payout_id!r}", param="payout")
    if original.original_payout_id is not None:
        raise Conflict(
            f"{original.id} is itself a reversal (of {original.original_payout_id}): it cannot be reversed."
        )
    if original.reversed_by_id is not None:
        raise Conflict(f"This payout is already reversed, by {original.reversed_by_id}.")
    if original.status != "paid":
        raise Conflict(f"Only a paid payout can be reversed; this one is {original.status}.")
    reversal = Payout(
        id=new_id("po"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        connected_account_id=original.connected_account_id,
        amount=original.amount,
        fee_amount=0,
        currency=original.currency,
        method="standard",
        status="pending",
        original_payout_id=original.id,
        metadata_=command.metadata,
        updated_at=utcnow(),
    )
    await repository.add(session, reversal)
    original.reversed_by_id = reversal.id
    original.updated_at = utcnow()
    await start_operation(session, tenant, reversal)
    await announce(session, tenant, reversal, "created")
    await announce(session, tenant, original, "reversed")
    logger.info("payout_reversal_created", payout=original.id, reversal=reversal.id, amount=reversal.amount)
    return reversal
