"""One tree of errors. Each leaf carries its HTTP status, type and code (CONVENTIONS.md §3).

Services raise these; `api/errors.py` renders them in the documented envelope. An expected
business outcome is never a 500.
"""

from __future__ import annotations

from typing import Any, ClassVar


class MoneyrailError(Exception):
    status: ClassVar[int] = 500
    type: ClassVar[str] = "api_error"
    code: ClassVar[str] = "internal_error"
    # A refusal that is itself a recorded outcome (a decline noted on the payment, with its event):
    # the request's effect commits with the error response instead of being undone.
    keeps_effect: ClassVar[bool] = False

    def __init__(self, message: str, *, param: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.extra = extra


# 400 ------------------------------------------------------------------------------------------
class InvalidRequest(MoneyrailError):
    status = 400
    type = "invalid_request_error"
    code = "parameter_invalid"


class ParameterMissing(InvalidRequest):
    code = "parameter_missing"


class ParameterInvalid(InvalidRequest):
    code = "parameter_invalid"


class ParameterUnknown(InvalidRequest):
    code = "parameter_unknown"


class SignatureInvalid(InvalidRequest):
    """A processor's webhook whose signature does not verify with the endpoint's signing secret."""

    code = "signature_invalid"


class ParametersExclusive(InvalidRequest):
    code = "parameters_exclusive"


class AmountInvalid(InvalidRequest):
    code = "amount_invalid"


class AmountTooSmall(InvalidRequest):
    """A subscription change's difference payable now does not cover the commission it would carry."""

    code = "amount_too_small"


class TiersInvalid(InvalidRequest):
    code = "tiers_invalid"


class CurrencyInvalid(InvalidRequest):
    code = "currency_invalid"


class DistributionInvalid(InvalidRequest):
    """A distribution that does not add up, or names recipients it may not (CONVENTIONS.md §8, §13)."""

    code = "distribution_invalid"


class ReferencedResourceMissing(InvalidRequest):
    """An id in the body names nothing this tenant can see."""

    code = "resource_missing"


class FeeAmountImmutable(InvalidRequest):
    """The payment has a fee reserve, so its amount is fixed (spec 4.B rule 1)."""

    code = "fee_amount_immutable"


class UnsupportedVersion(InvalidRequest):
    code = "unsupported_version"


class UrlNotRegistered(InvalidRequest):
    """A return URL that is not exactly one the installation registered for the environment."""

    code = "url_not_registered"


class IdempotencyKeyRequired(InvalidRequest):
    code = "idempotency_key_required"


class IdempotencyKeyInvalid(InvalidRequest):
    code = "idempotency_key_invalid"


# 401 / 403 ------------------------------------------------------------------------------------
class AuthenticationRequired(MoneyrailError):
    status = 401
    type = "authentication_error"
    code = "authentication_required"


class InvalidApiKey(AuthenticationRequired):
    code = "invalid_api_key"


class ClientSecretInvalid(AuthenticationRequired):
    """A client-side call whose client_secret does not belong to the object it names."""

    code = "client_secret_invalid"


class DatabaseUnavailable(MoneyrailError):
    """PostgreSQL could not be reached (down, restarting, refusing connections): the request may have
    done nothing or, when the connection broke at its commit, everything; a retry with the same
    Idempotency-Key is safe either way. `Retry-After` says when to try again."""

    status = 503
    type = "api_error"
    code = "service_unavailable"
    RETRY_AFTER_SECONDS = 5

    def __init__(self) -> None:
        super().__init__(
            "The service cannot reach its database right now. Retry after a few seconds with the same "
            "Idempotency-Key."
        )
        self.headers = {"Retry-After": str(self.RETRY_AFTER_SECONDS)}


class ProcessorUnavailableError(MoneyrailError):
    """The card network did not answer: nothing was decided, so the same request may be retried (with
    the same Idempotency-Key) after `Retry-After` seconds."""

    status = 503
    type = "api_error"
    code = "processor_unavailable"
    RETRY_AFTER_SECONDS = 2

    def __init__(self, message: str, *, param: str | None = None, **extra: Any) -> None:
        super().__init__(message, param=param, **extra)
        self.headers = {"Retry-After": str(self.RETRY_AFTER_SECONDS)}


# 402 ------------------------------------------------------------------------------------------
class CardError(MoneyrailError):
    status = 402
    type = "card_error"
    code = "card_declined"


class CardDeclined(CardError):
    """The card was refused; `decline_code` says why (generic_decline, insufficient_funds, ...)."""

    def __init__(self, message: str, *, decline_code: str, param: str | None = None) -> None:
        super().__init__(message, param=param, decline_code=decline_code)
        self.decline_code = decline_code


class PaymentDeclined(CardDeclined):
    """A payment's card was declined: the payment records it (last_payment_error, an event)."""

    keeps_effect = True


class InsufficientScope(MoneyrailError):
    status = 403
    type = "permission_error"
    code = "insufficient_scope"


class CheckoutNotEnabled(MoneyrailError):
    """Hosted checkout is not (yet) active for this environment: the operator enables it."""

    status = 403
    type = "permission_error"
    code = "checkout_not_enabled"


class RecurringNotEnabled(MoneyrailError):
    """Subscriptions are not (yet) active for this environment: the operator enables them."""

    status = 403
    type = "permission_error"
    code = "recurring_not_enabled"


class ProcessorNotConfigured(MoneyrailError):
    """A live environment with no real processor set (CONVENTIONS.md §12): live mode never simulates, so
    a request that needs a processor is refused before it records anything; the operator sets one
    (`moneyrail settings set --env live --processor stripe --processor-key-file ...`)."""

    status = 403
    type = "permission_error"
    code = "processor_not_configured"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "No payment processor is configured for this installation's live environment, so nothing "
            "that moves money can be done there yet; nothing was recorded. The operator sets one with "
            "`moneyrail settings set -i <installation> --env live --processor stripe "
            "--processor-key-file <file>`."
        )


# 404 / 405 ------------------------------------------------------------------------------------
class ResourceMissing(MoneyrailError):
    """An id in the path names nothing this tenant can see (foreign ids look exactly the same)."""

    status = 404
    type = "invalid_request_error"
    code = "resource_missing"


class MethodNotAllowed(MoneyrailError):
    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"


# 409 / 413 / 422 / 429 ------------------------------------------------------------------------------
class Conflict(MoneyrailError):
    status = 409
    type = "invalid_request_error"
    code = "resource_state_invalid"


class IdempotencyKeyInUse(Conflict):
    code = "idempotency_key_in_use"


class SubscriptionVersionConflict(Conflict):
    """`expected_version` is not the subscription's current version (terms or distribution)."""

    code = "subscription_version_conflict"


class SubscriptionChangePending(Conflict):
    """Another change proposal of this subscription is unapplied: finish or withdraw it first."""

    code = "subscription_change_pending"


class ChangeExpired(Conflict):
    """The change proposal expired unaccepted; quote a new one."""

    code = "change_expired"


class RequestTooLarge(MoneyrailError):
    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class IdempotencyKeyReused(MoneyrailError):
    status = 422
    type = "idempotency_error"
    code = "idempotency_key_reused"


class RateLimited(MoneyrailError):
    status = 429
    type = "rate_limit_error"
    code = "rate_limited"
