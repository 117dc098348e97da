"""One exception tree: every error the API answers is raised as the class of its envelope's `type`.

MoneyrailError
├── APIConnectionError          no answer (connection refused or reset, timeout), after the retries
├── APIStatusError              an answer with an error envelope; `.http_status`, `.code`, ...
│   ├── InvalidRequestError     invalid_request_error (400, 404, 409, 413)
│   │   └── NotFoundError       404 resource_missing
│   ├── AuthenticationError     authentication_error (401)
│   ├── PermissionDeniedError   permission_error (403)
│   ├── CardError               card_error (402)
│   │   └── CardDeclinedError   card_declined, with `decline_code`
│   ├── IdempotencyError        idempotency_error (422)
│   ├── RateLimitError          rate_limit_error (429)
│   └── APIError                api_error (5xx), and any type this client does not know
├── OperationTimeoutError       `operations.wait` ran out of time
└── WebhookVerificationError    `webhooks.verify` refused a delivery
"""

from __future__ import annotations

from typing import Any


class MoneyrailError(Exception):
    """Every error this client raises."""


class APIConnectionError(MoneyrailError):
    """The service could not be reached, or did not answer in time, on every attempt."""


class APIStatusError(MoneyrailError):
    """The service answered an error: `{"error": {type, code, message, param, request_id}}`."""

    def __init__(
        self,
        message: str,
        *,
        http_status: int,
        type: str,
        code: str | None,
        param: str | None,
        request_id: str | None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.http_status = http_status
        self.type = type
        self.code = code
        self.param = param
        self.request_id = request_id
        self.body = body or {}

    def __str__(self) -> str:
        where = f" (param {self.param})" if self.param else ""
        return (
            f"{self.http_status} {self.type} {self.code}{where}: {self.message} [request {self.request_id}]"
        )


class InvalidRequestError(APIStatusError):
    """A parameter missing, unknown or invalid, an object in the wrong state, or an unknown id."""


class NotFoundError(InvalidRequestError):
    """No such object for this key's installation and environment (404 `resource_missing`)."""


class AuthenticationError(APIStatusError):
    """No key, an unknown or revoked key, or the wrong kind of key for the route."""


class PermissionDeniedError(APIStatusError):
    """The key lacks the route's scope, or the feature is not enabled for this environment."""


class CardError(APIStatusError):
    """The card network refused the card or the step."""

    @property
    def decline_code(self) -> str | None:
        value = self.body.get("decline_code")
        return value if isinstance(value, str) else None


class CardDeclinedError(CardError):
    """The card was declined (`card_declined`); `decline_code` says why (`insufficient_funds`, ...)."""


class IdempotencyError(APIStatusError):
    """The `Idempotency-Key` was used before with another request."""


class RateLimitError(APIStatusError):
    """Too many requests for this key, still after the retries."""


class APIError(APIStatusError):
    """The service failed, or a dependency of it did not answer (5xx)."""


class OperationTimeoutError(MoneyrailError, TimeoutError):
    """An operation did not reach a final state within the time `operations.wait` was given."""

    def __init__(self, message: str, *, operation: Any) -> None:
        super().__init__(message)
        self.operation = operation


class WebhookVerificationError(MoneyrailError):
    """A webhook delivery's signature is wrong, its timestamp too old or new, or its body was altered."""


ERRORS_BY_TYPE: dict[str, type[APIStatusError]] = {
    "invalid_request_error": InvalidRequestError,
    "authentication_error": AuthenticationError,
    "permission_error": PermissionDeniedError,
    "card_error": CardError,
    "idempotency_error": IdempotencyError,
    "rate_limit_error": RateLimitError,
    "api_error": APIError,
}


def error_for(http_status: int, body: Any, request_id: str | None) -> APIStatusError:
    """The exception for an error answer: its class from the envelope's `type` (and code)."""
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict):
        return APIError(
            f"the service answered {http_status} without an error envelope",
            http_status=http_status,
            type="api_error",
            code=None,
            param=None,
            request_id=request_id,
        )
    kind = str(detail.get("type") or "api_error")
    code = detail.get("code")
    error_class = ERRORS_BY_TYPE.get(kind, APIError)
    if error_class is CardError and code == "card_declined":
        error_class = CardDeclinedError
    elif error_class is InvalidRequestError and http_status == 404:
        error_class = NotFoundError
    return error_class(
        str(detail.get("message") or kind),
        http_status=http_status,
        type=kind,
        code=code if isinstance(code, str) else None,
        param=detail.get("param") if isinstance(detail.get("param"), str) else None,
        request_id=request_id or detail.get("request_id"),
        body=detail,
    )
