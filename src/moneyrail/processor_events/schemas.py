from __future__ import annotations

from pydantic import BaseModel, Field


class EventReceived(BaseModel):
    received: bool = Field(default=True, description="The event was verified and kept (or kept already)")
    duplicate: bool = Field(description="`true` when this event id was received before: nothing more is done")
