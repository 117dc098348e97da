from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.tenant import Tenant
from moneyrail.models import SandboxClock, SandboxProcessorFault


async def advance_clock(session: AsyncSession, installation_id: str, seconds: int) -> int:
    statement = insert(SandboxClock).values(installation_id=installation_id, offset_seconds=seconds)
    upsert = statement.on_conflict_do_update(
        index_elements=[SandboxClock.installation_id],
        set_={"offset_seconds": SandboxClock.offset_seconds + seconds, "updated_at": func.now()},
    ).returning(SandboxClock.offset_seconds)
    return int((await session.execute(upsert)).scalar_one())


async def set_fault(
    session: AsyncSession, tenant: Tenant, operation_type: str, mode: str, count: int
) -> None:
    statement = insert(SandboxProcessorFault).values(
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        operation_type=operation_type,
        mode=mode,
        remaining=count,
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["installation_id", "livemode", "operation_type"],
            set_={"mode": mode, "remaining": count, "updated_at": func.now()},
        )
    )


async def list_faults(session: AsyncSession, tenant: Tenant) -> Sequence[SandboxProcessorFault]:
    """Faults still armed (a spent one keeps its row at 0 remaining)."""
    return (
        await session.scalars(
            select(SandboxProcessorFault)
            .where(
                SandboxProcessorFault.installation_id == tenant.installation_id,
                SandboxProcessorFault.livemode == tenant.livemode,
                SandboxProcessorFault.remaining > 0,
            )
            .order_by(SandboxProcessorFault.operation_type)
        )
    ).all()


async def clear_faults(
    session: AsyncSession, tenant: Tenant, operation_type: str | None
) -> Sequence[SandboxProcessorFault]:
    statement = delete(SandboxProcessorFault).where(
        SandboxProcessorFault.installation_id == tenant.installation_id,
        SandboxProcessorFault.livemode == tenant.livemode,
        SandboxProcessorFault.remaining > 0,
    )
    if operation_type is not None:
        statement = statement.where(SandboxProcessorFault.operation_type == operation_type)
    return (await session.scalars(statement.returning(SandboxProcessorFault))).all()
