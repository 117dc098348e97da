"""The object an operation moves, with its current state, as the API shows it: a console page reads it
through its domain's own service and answer, never its tables.

An operation names its object in `resource` (an allocation group for a transfer commit, a payout, a
refund, a subscription invoice for a renewal, …). Each known type has a reader here; any other shows its
resource id and payload only. A reader also says which object ids the ledger books under (a commit's
transfers, a payout, a refund): the journal transactions whose `reference` is one of them are the money
behind the operation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import service as billing_service
from moneyrail.disputes import service as disputes_service
from moneyrail.engine.schemas import render_operation
from moneyrail.errors import MoneyrailError
from moneyrail.events import service as events_service
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation
from moneyrail.payments import refunds
from moneyrail.payments.schemas import render_refund
from moneyrail.payouts import service as payouts_service
from moneyrail.payouts.schemas import render_payout
from moneyrail.reconciliation import service as reconciliation_service
from moneyrail.reconciliation.schemas import render_run
from moneyrail.transfers import service as transfers_service

# The fields of an API answer that tell an operator where an object stands, in this order.
STATE_FIELDS = (
    "status",
    "amount",
    "currency",
    "destination",
    "method",
    "arrival_date",
    "payment_intent",
    "subscription",
    "billing_kind",
    "settlement_status",
    "failure_code",
    "failure_message",
    "failure_reason",
    "type",
)


@dataclass(frozen=True)
class OperationObject:
    kind: str  # the answer's `object`: allocation_group, transfer, payout, …
    id: str
    answer: dict[str, Any]  # the API's answer for it, as GET would show it now
    parts: list[OperationObject] = field(default_factory=list)  # a commit's transfers
    ledger_references: list[str] = field(default_factory=list)

    @property
    def state(self) -> list[tuple[str, Any]]:
        return [(name, self.answer[name]) for name in STATE_FIELDS if self.answer.get(name) is not None]

    @property
    def status(self) -> str | None:
        status = self.answer.get("status")
        return str(status) if status is not None else None

    @property
    def last_operation_error(self) -> dict[str, Any] | None:
        error = self.answer.get("last_operation_error")
        return error if isinstance(error, dict) else None


def _answer(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json")
    return dumped


def _plain(answer: dict[str, Any], *, books: bool = True) -> OperationObject:
    identifier = str(answer["id"])
    return OperationObject(
        str(answer.get("object", "")), identifier, answer, [], [identifier] if books else []
    )


async def _allocation_group(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    group = await transfers_service.get_group(session, tenant, resource)
    answer = _answer(await transfers_service.show_group(session, group))
    moved = [_plain(transfer) for transfer in answer.get("transfers", [])]
    references = [part.id for part in moved]
    for part in moved:  # a reversal is booked under its own id
        references += [str(reversal["id"]) for reversal in part.answer.get("reversals") or []]
    return OperationObject("allocation_group", group.id, answer, moved, references)


async def _payout(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    return _plain(_answer(render_payout(await payouts_service.get_payout(session, tenant, resource))))


async def _refund(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    return _plain(_answer(render_refund(await refunds.get_refund(session, tenant, resource))))


async def _subscription_invoice(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    invoice = await billing_service.get_subscription_invoice(session, tenant, resource)
    answer = _answer(billing_service.render_invoice(invoice))
    references = [invoice.id] + ([invoice.payment_intent_id] if invoice.payment_intent_id else [])
    return OperationObject("subscription_invoice", invoice.id, answer, [], references)


async def _subscription(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    subscription = await billing_service.get_subscription(session, tenant, resource)
    answer = _answer(await billing_service.subscription_view(session, tenant, subscription))
    return _plain(answer, books=False)


async def _reconciliation_run(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    run = await reconciliation_service.get_run(session, tenant, resource)
    return _plain(_answer(render_run(run, None)), books=False)


async def _dispute(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    dispute = await disputes_service.get_dispute(session, tenant, resource)
    return _plain(await disputes_service.show(session, tenant, dispute))


async def _event(session: AsyncSession, tenant: Tenant, resource: str) -> OperationObject:
    event = await events_service.get_event(session, tenant, resource)
    return _plain(events_service.event_object(event), books=False)


Reader = Callable[[AsyncSession, Tenant, str], Awaitable[OperationObject]]
READERS: dict[str, Reader] = {
    transfers_service.COMMIT_TYPE: _allocation_group,
    transfers_service.TRANSFER_TYPE: _allocation_group,
    payouts_service.PAYOUT_TYPE: _payout,
    refunds.REFUND_TYPE: _refund,
    billing_service.RENEWAL_TYPE: _subscription_invoice,
    billing_service.SYNC_TYPE: _subscription,
    reconciliation_service.RECONCILIATION_TYPE: _reconciliation_run,
    disputes_service.WITHDRAWAL_TYPE: _dispute,
    events_service.DELIVERY_TYPE: _event,
}


async def object_of(session: AsyncSession, operation: Operation) -> OperationObject | None:
    """The operation's object as its domain answers for it now; None when the type has no reader here
    or the operation names no object."""
    reader = READERS.get(operation.type)
    if reader is None or not operation.resource:
        return None
    try:
        return await reader(
            session, Tenant(operation.installation_id, operation.livemode), operation.resource
        )
    except MoneyrailError:  # gone (a test tenant's clean-up) or not of the shape expected: shown as missing
        return None


def operation_answer(operation: Operation) -> dict[str, Any]:
    """The operation as `GET /v1/operations/{id}` answers it."""
    return _answer(render_operation(operation))
