"""A typed client for the moneyrail payments API.

    from moneyrail_client import Moneyrail

    client = Moneyrail(api_key="sk_test_…", base_url="http://127.0.0.1:8000")
    customer = client.customers.create(email="ada@example.com", external_reference="user-42")
    for payment in client.payment_intents.list(limit=100):
        ...

`AsyncMoneyrail` is the same with `await`. Errors: errors.py; webhooks: `moneyrail_client.webhooks.verify`.
"""

from moneyrail_client import errors, events, models, params, webhooks
from moneyrail_client.async_client import AsyncMoneyrail, AsyncPager
from moneyrail_client.core import API_VERSION, RetryPolicy, __version__
from moneyrail_client.errors import (
    APIConnectionError,
    APIError,
    APIStatusError,
    AuthenticationError,
    CardDeclinedError,
    CardError,
    IdempotencyError,
    InvalidRequestError,
    MoneyrailError,
    NotFoundError,
    OperationTimeoutError,
    PermissionDeniedError,
    RateLimitError,
    WebhookVerificationError,
)
from moneyrail_client.sync_client import ListPage, Moneyrail, Pager

__all__ = [
    "API_VERSION",
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "AsyncMoneyrail",
    "AsyncPager",
    "AuthenticationError",
    "CardDeclinedError",
    "CardError",
    "IdempotencyError",
    "InvalidRequestError",
    "ListPage",
    "Moneyrail",
    "MoneyrailError",
    "NotFoundError",
    "OperationTimeoutError",
    "Pager",
    "PermissionDeniedError",
    "RateLimitError",
    "RetryPolicy",
    "WebhookVerificationError",
    "__version__",
    "errors",
    "events",
    "models",
    "params",
    "webhooks",
]
