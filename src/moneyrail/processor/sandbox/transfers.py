"""A batch of transfers: each transfer's answer within the batch's."""

from __future__ import annotations

from typing import Any

from moneyrail.processor.interface import BatchedTransfer, ProcessorRefused

from .books import replay


def batched_answer(key: str, response: dict[str, Any]) -> dict[str, Any]:
    error = response.get("error")
    if error is not None:
        return {
            "idempotency_key": key,
            "status": "refused",
            "code": error["code"],
            "message": error["message"],
        }
    return {"idempotency_key": key, "status": "paid", "id": response["id"]}


def batched_replay(key: str, earlier: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """A transfer of a batch already answered under its own key: that answer again."""
    try:
        return batched_answer(key, replay(earlier, "transfer", request))
    except ProcessorRefused as refused:
        return batched_answer(key, {"error": {"code": refused.code, "message": refused.message}})


def batch_answers(response: dict[str, Any]) -> list[BatchedTransfer]:
    return [
        BatchedTransfer(
            idempotency_key=answer["idempotency_key"],
            status=answer["status"],
            processor_id=answer.get("id"),
            failure_code=answer.get("code"),
            failure_message=answer.get("message"),
        )
        for answer in response["transfers"]
    ]
