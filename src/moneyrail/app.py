"""The web process: intake API and (later) the hosted pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from redis.asyncio import Redis

import moneyrail.domains  # noqa: F401 - every domain's listeners (a console discard reaches each)
from moneyrail import __version__
from moneyrail.api import health, home, metrics
from moneyrail.api.errors import install_error_handlers
from moneyrail.api.middleware import RequestContextMiddleware
from moneyrail.api.openapi import install_openapi
from moneyrail.api.operations import router as operations_router
from moneyrail.billing.endpoints import router as billing_router
from moneyrail.checkout.endpoints import router as checkout_router
from moneyrail.checkout.pages import router as checkout_pages_router
from moneyrail.commerce.endpoints import router as commerce_router
from moneyrail.config import Settings, get_settings
from moneyrail.connect.endpoints import router as connect_router
from moneyrail.connect.pages import router as onboarding_pages_router
from moneyrail.console.errors import ConsoleRefusal
from moneyrail.console.pages import refusal_page
from moneyrail.console.pages import router as console_router
from moneyrail.customers.endpoints import router as customers_router
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.deliveries.endpoints import router as deliveries_router
from moneyrail.disputes.endpoints import router as disputes_router
from moneyrail.disputes.endpoints import test_helpers as dispute_helpers_router
from moneyrail.events.endpoints import router as events_router
from moneyrail.fiscal.endpoints import router as fiscal_router
from moneyrail.installations.endpoints import router as account_router
from moneyrail.invoices.endpoints import router as invoices_router
from moneyrail.kit import crypto
from moneyrail.logging import configure_logging
from moneyrail.merchants.endpoints import router as merchants_router
from moneyrail.merchants.pages import router as merchant_pages_router
from moneyrail.payment_methods.endpoints import router as payment_methods_router
from moneyrail.payments.endpoints import router as payments_router
from moneyrail.payments.pages import router as payment_pages_router
from moneyrail.payouts.endpoints import router as payouts_router
from moneyrail.processor import provider
from moneyrail.processor_events.endpoints import router as processor_events_router
from moneyrail.reconciliation.endpoints import router as reconciliation_router
from moneyrail.risk.endpoints import router as risk_router
from moneyrail.runtime import tuned_garbage_collector
from moneyrail.sandbox.endpoints import router as sandbox_router
from moneyrail.transfers.endpoints import router as transfers_router

API_DESCRIPTION = (
    "The payments API (`/v1`). Authenticate with `Authorization: Bearer sk_test_…` (a secret key; "
    "client-side routes take the publishable key `pk_test_…`). Every error is one envelope, "
    '`{"error": {type, code, message, param, request_id}}`; every response carries `Request-Id` and '
    "`Service-Version`. POST and DELETE accept an `Idempotency-Key`. Each operation lists the statuses it "
    "can answer and the scope its key needs."
)


# The payments API's routers, each included at /v1 directly: FastAPI walks every nested router level
# on each request to match it (and to check the routes did not change), so one level less is cheaper.
PAYMENTS_API_PREFIX = "/v1"
PAYMENTS_API_ROUTERS = (
    account_router,
    customers_router,
    payment_methods_router,
    payments_router,
    checkout_router,
    merchants_router,
    deliveries_router,
    operations_router,
    events_router,
    sandbox_router,
    connect_router,
    transfers_router,
    payouts_router,
    reconciliation_router,
    disputes_router,
    dispute_helpers_router,
    risk_router,
    invoices_router,
    billing_router,
)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_level, json=settings.log_json)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        crypto.require_secret_keys(settings.secret_keys)  # secrets at rest: refuse to start without keys
        engine = create_engine(settings)
        app.state.engine = engine
        app.state.sessionmaker = create_sessionmaker(engine)
        broker_url = settings.redis_url or "redis://127.0.0.1:6379/0"
        app.state.redis = Redis.from_url(broker_url) if broker_url.startswith(("redis", "unix")) else None
        try:
            with tuned_garbage_collector(settings):  # once all above is loaded
                yield
        finally:
            if app.state.redis is not None:
                await app.state.redis.aclose()
            await provider.aclose()  # the Stripe clients' connections
            await engine.dispose()

    app = FastAPI(
        title="moneyrail",
        version=__version__,
        summary="Payments, marketplace distribution and recurring billing",
        description=API_DESCRIPTION,
        lifespan=lifespan,
        # FastAPI's own OpenTelemetry hooks ask the global providers on every request; moneyrail's
        # observability is its Prometheus metrics and log lines (api/metrics.py, api/middleware.py)
        telemetry={"tracing": False, "metrics": False, "logs": False},
        docs_url=None,  # served by install_openapi with local assets, no CDN
        redoc_url=None,
    )
    app.state.settings = settings
    install_error_handlers(app)
    app.include_router(home.router)
    app.include_router(health.router)
    app.include_router(metrics.router)
    for router in PAYMENTS_API_ROUTERS:
        app.include_router(router, prefix=PAYMENTS_API_PREFIX)
    app.include_router(commerce_router)  # /commerce/v1
    app.include_router(fiscal_router)  # /fiscal/v1
    app.include_router(payment_pages_router)
    app.include_router(checkout_pages_router)
    app.include_router(merchant_pages_router)
    app.include_router(onboarding_pages_router)
    app.include_router(processor_events_router)  # Stripe's webhooks
    app.include_router(console_router)  # /console, the operator console (its own sign-in, not API keys)
    app.add_exception_handler(ConsoleRefusal, refusal_page)
    install_openapi(app)
    app.add_middleware(RequestContextMiddleware)  # the one middleware, the input guard within it
    return app
