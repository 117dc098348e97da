"""Connected accounts at the processor (ARCHITECTURE.md, "The processor is an outside system").

On an environment whose processor keeps accounts of its own (Stripe), each connected account is made
there too: a Custom account, by a `connected_account` operation written with the account (by the API or
a merchant's first connection). The operation runs in phases: the account read in a first unit of
work; the processor called with no transaction open, under the operation's key (`op_…:account`), so a
retried or re-driven attempt makes one account; the processor's id recorded on the row in a second unit
of work. That id stays internal (`processor_account`): moneyrail's `acct_` id is the only one shown.

Money moves to an account only once it is linked: a transfer to one that is not yet waits (its commit
is retried, `AccountNotLinked`), and a payout likewise; the account shows `capabilities.transfers`
`pending` meanwhile, and `connected_account.updated` once linked. An account with no operation under
way (made before its environment was put on Stripe) gets one when money is first sent to it
(`ensure_linked`). On the simulator nothing is linked and nothing waits: it knows moneyrail's ids.

What moneyrail learns of an account later (the hosted onboarding page's name, birth date and terms
accepted; a merchant's bank account given after its account was made) goes to the processor by a
`connected_account_details` operation, in the same phases: only what changed (a bank account sent
again would replace the default one), under a key that names what it sends (so a retry sends the same,
and newer details make a new call). Its account not linked yet, it waits for the
link operation under way (which then sends everything the row holds), or has nothing to send when no
link is under way (the account's link, when money first needs it, sends everything).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import date, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.outcomes import TransientFailure
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import Call, Recording, create_operation, statuses_of
from moneyrail.events.service import record_event
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.models import ConnectedAccount, Operation
from moneyrail.processor import provider
from moneyrail.processor.interface import AccountHolder, Processor, operation_key

from . import repository
from .schemas import render_connected_account

logger = structlog.get_logger("moneyrail.connect")

LINK_TYPE = "connected_account"
LINK_ACTOR = "connect.link"
register_policy(
    LINK_TYPE,
    RetryPolicy(
        max_attempts=5,
        base_delay=timedelta(milliseconds=500),
        max_delay=timedelta(minutes=5),
        queue_name="money",
    ),
)
# a link operation in these states may still make the account: no second one is started beside it
UNDER_WAY = frozenset({"pending", "running", "dead_letter", "succeeded"})
# a link operation in these states is about to make the account: details wait for it
LINKING = frozenset({"pending", "running"})

DETAILS_TYPE = "connected_account_details"
DETAILS_ACTOR = "connect.details"
register_policy(
    DETAILS_TYPE,
    RetryPolicy(
        max_attempts=8,  # waits out its account's link (up to its five attempts)
        base_delay=timedelta(seconds=1),
        max_delay=timedelta(minutes=10),
        queue_name="money",
    ),
)


class AccountNotLinked(TransientFailure):
    """Money for an account the processor does not have yet: asked again once its operation made it."""

    code = "connected_account_not_ready"


async def start_link(session: AsyncSession, tenant: Tenant, account: ConnectedAccount) -> None:
    """Beside a new account: the operation that makes it at the processor, where the processor keeps
    accounts of its own; nothing elsewhere."""
    if not await provider.keeps_connected_accounts(session, tenant):
        return
    operation = await create_operation(
        session,
        tenant,
        operation_type=LINK_TYPE,
        actor_name=LINK_ACTOR,
        resource=account.id,
        payload={"connected_account": account.id},
    )
    account.link_operation_id = operation.id
    await session.flush()


async def ensure_linked(session: AsyncSession, tenant: Tenant, account_ids: Sequence[str]) -> None:
    """At the intake of money for these accounts (a commit, a transfer, a payout): one that is not linked
    and has no operation under way to link it (made before the environment was put on Stripe, or whose
    operation ended without an account) gets one now; the money waits for it (`destinations`)."""
    if not account_ids or not await provider.keeps_connected_accounts(session, tenant):
        return
    found = await repository.get_accounts(session, tenant, list(dict.fromkeys(account_ids)))
    if all(account.processor_account is not None for account in found.values()):
        return
    # locked (in id order) so that two intakes at once start one operation per account, not two
    found = await repository.get_accounts(session, tenant, list(found), for_update=True)
    unlinked = [account for account in found.values() if account.processor_account is None]
    statuses = await statuses_of(
        session, [account.link_operation_id for account in unlinked if account.link_operation_id]
    )
    for account in unlinked:
        if statuses.get(account.link_operation_id or "") not in UNDER_WAY:
            await start_link(session, tenant, account)


async def prepare_link(session: AsyncSession, operation: Operation, processor: Processor) -> Call | None:
    """The `connected_account` operation in phases (engine `PhasedHandler`): nothing to ask once the
    account is linked; else one call under the operation's key, and its answer recorded on the row."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    account_id = str(operation.payload["connected_account"])
    account = await repository.get_account(session, tenant, account_id)
    if account is None or account.processor_account is not None:
        return None
    country, email, bank_account = account.country, account.email, account.bank_account_number
    holder = holder_of(account)
    key = operation_key(operation.id, "account")

    async def call() -> Recording:
        made = await processor.create_connected_account(
            tenant,
            idempotency_key=key,
            country=country,
            email=email,
            reference=account_id,
            bank_account=bank_account,
            holder=holder,
        )

        async def record(session: AsyncSession) -> None:
            linked = await repository.get_account(session, tenant, account_id, for_update=True)
            if linked is None or linked.processor_account == made.processor_id:
                return
            if linked.processor_account is not None:  # only this operation links it: cannot happen
                raise TransientFailure(f"{account_id} was linked meanwhile to another processor account")
            linked.processor_account = made.processor_id
            linked.updated_at = utcnow()
            await session.flush()
            await record_event(
                session,
                tenant,
                "connected_account.updated",  # its transfers capability is active now
                render_connected_account(linked).model_dump(mode="json"),
            )
            logger.info("connected_account_linked", connected_account=account_id, operation_id=operation.id)

        return record

    return call


def holder_of(account: ConnectedAccount) -> AccountHolder | None:
    """The onboarded person, once the hosted page collected them (None before)."""
    individual = account.individual
    if account.tos_accepted_at is None or not {"first_name", "last_name", "dob"} <= individual.keys():
        return None
    return AccountHolder(
        first_name=str(individual["first_name"]),
        last_name=str(individual["last_name"]),
        born=date.fromisoformat(str(individual["dob"])),
        terms_accepted_at=account.tos_accepted_at,
        terms_accepted_from=account.tos_accepted_ip,
    )


HOLDER, BANK_ACCOUNT = "holder", "bank_account"


async def start_details(
    session: AsyncSession, tenant: Tenant, account: ConnectedAccount, changed: str
) -> None:
    """Beside a change of what the processor must know of an account (`changed`: HOLDER, onboarded, or
    BANK_ACCOUNT, given): the operation that tells it, where the processor keeps accounts; nothing
    elsewhere. Only what changed is sent: a bank account sent again would replace the default one."""
    if not await provider.keeps_connected_accounts(session, tenant):
        return
    await create_operation(
        session,
        tenant,
        operation_type=DETAILS_TYPE,
        actor_name=DETAILS_ACTOR,
        resource=account.id,
        payload={"connected_account": account.id, "changed": changed},
    )


async def prepare_details(session: AsyncSession, operation: Operation, processor: Processor) -> Call | None:
    """The `connected_account_details` operation's first phase: the account's details as they are now,
    sent once it is linked (see the module's docstring)."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    account_id = str(operation.payload["connected_account"])
    account = await repository.get_account(session, tenant, account_id)
    if account is None:
        return None
    if account.processor_account is None:
        link = account.link_operation_id
        statuses = await statuses_of(session, [link] if link else [])
        if statuses.get(link or "") in LINKING:
            raise AccountNotLinked(f"{account_id} is being made at the processor: its details wait for it")
        return None  # its link, whenever it runs, sends what the row holds then
    processor_account, country = account.processor_account, account.country
    changed = operation.payload.get("changed")
    bank_account = account.bank_account_number if changed == BANK_ACCOUNT else None
    holder = holder_of(account) if changed == HOLDER else None
    if bank_account is None and holder is None:
        return None
    sent = repr((processor_account, country, bank_account, holder)).encode()
    key = operation_key(operation.id, "details:" + hashlib.sha256(sent).hexdigest()[:16])

    async def call() -> Recording:
        await processor.update_connected_account(
            tenant,
            idempotency_key=key,
            processor_account=processor_account,
            country=country,
            bank_account=bank_account,
            holder=holder,
        )

        async def record(session: AsyncSession) -> None:
            logger.info(
                "connected_account_details_sent", connected_account=account_id, operation_id=operation.id
            )

        return record

    return call


async def destinations(session: AsyncSession, tenant: Tenant, account_ids: Sequence[str]) -> dict[str, str]:
    """What the processor knows each account as (its own account's id, or on the simulator moneyrail's
    id); AccountNotLinked while one is not made there yet."""
    wanted = list(dict.fromkeys(account_ids))
    if not await provider.keeps_connected_accounts(session, tenant):
        return {account_id: account_id for account_id in wanted}
    linked = await repository.processor_accounts(session, tenant, wanted)
    waiting = [account_id for account_id in wanted if not linked.get(account_id)]
    if waiting:
        raise AccountNotLinked(
            f"{', '.join(waiting)} not made at the processor yet (its connected_account operation has not "
            "finished): asked again later"
        )
    return {account_id: str(linked[account_id]) for account_id in wanted}
