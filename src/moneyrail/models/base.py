"""Declarative base and the columns every tenant-owned table shares."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, DateTime, ForeignKey, MetaData, String, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        int: BigInteger,
        str: String,
        bool: Boolean,
        datetime: DateTime(timezone=True),
        dict[str, Any]: JSONB,
    }


class TenantOwned:
    """A row belongs to one installation and one environment (livemode)."""

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"), index=False)
    livemode: Mapped[bool]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
