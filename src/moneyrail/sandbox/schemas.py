from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from moneyrail.kit.schemas import RequestBody


class ClockAdvance(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"seconds": 86400}]})

    seconds: Annotated[int, Field(description="How far to move the sandbox clock forward")]


class ClockOut(BaseModel):
    object: Literal["test_clock"] = "test_clock"
    livemode: Literal[False] = False
    now: int = Field(description="The sandbox clock's time, in Unix seconds")
    offset_seconds: int = Field(description="How far the sandbox clock is ahead of real time")
    work_done: dict[str, int] = Field(description="Work that fell due while advancing, counted by kind")


class FaultCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"operation_type": "capture", "mode": "transient", "count": 2}]}
    )

    operation_type: str = Field(description="The processor call to fail, such as `capture` or `refund`")
    mode: Literal["transient", "permanent"] = Field(
        description="`transient` faults are retried; `permanent` ones refuse"
    )
    count: Annotated[int, Field(ge=1, le=1000, description="How many of the next calls fail")]


class FaultOut(BaseModel):
    object: Literal["processor_fault"] = "processor_fault"
    operation_type: str = Field(description="The processor call that fails")
    mode: Literal["transient", "permanent"] = Field(description="How it fails")
    count: int = Field(description="How many calls are still to fail")


class FaultList(BaseModel):
    object: Literal["list"] = "list"
    data: list[FaultOut] = Field(description="The faults still armed")
    has_more: Literal[False] = Field(default=False, description="Always `false`: every armed fault is listed")
    next_cursor: None = Field(default=None, description="Always null")
