from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from moneyrail.kit.schemas import RequestBody


class ClockAdvance(RequestBody):
    seconds: Annotated[int, Field(description="How far to move the sandbox clock forward")]


class ClockOut(BaseModel):
    object: Literal["test_clock"] = "test_clock"
    livemode: Literal[False] = False
    now: int
    offset_seconds: int
    work_done: dict[str, int]


class FaultCreate(RequestBody):
    operation_type: str
    mode: Literal["transient", "permanent"]
    count: Annotated[int, Field(ge=1, le=1000)]


class FaultOut(BaseModel):
    object: Literal["processor_fault"] = "processor_fault"
    operation_type: str
    mode: Literal["transient", "permanent"]
    count: int


class FaultList(BaseModel):
    object: Literal["list"] = "list"
    data: list[FaultOut]
    has_more: Literal[False] = False
    next_cursor: None = None
