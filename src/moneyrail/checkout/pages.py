"""The hosted checkout page (spec 4.N): `/checkout/{token}`, where a payer pays one payment.

The link is the credential: it is never logged (the request log carries the route template only), sent
on as a referrer (`Referrer-Policy: no-referrer`) or shown to anyone but the payer. It holds no API key
or client_secret.

On the sandbox simulator the page loads nothing from third parties and runs no script: the payer types
the card into its own fields. Where a real processor runs (every live environment, a sandbox on Stripe),
it loads Stripe.js from MONEYRAIL_STRIPE_JS_URL with the environment's publishable key and a small
script of its own (web/static/stripe-card.js, no inline script): the card goes from Stripe.js's field to
Stripe, and the form posts only Stripe's token. Its Content-Security-Policy allows that and nothing
more: scripts carrying the response's nonce and from Stripe.js's origin (whose card fields are frames of
that origin), connections to the Stripe API base (where Stripe.js sends the card).
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.api.context import request_session, request_uow
from moneyrail.api.routing import MoneyrailRoute
from moneyrail.errors import ProcessorNotConfigured
from moneyrail.kit.money import format_amount
from moneyrail.payments import phases
from moneyrail.processor.interface import Processor
from moneyrail.processor.provider import processor_for, routed
from moneyrail.web import ProcessorScript, origin_of, public_base_url, render_page

from . import service
from .schemas import CheckoutPaymentForm

router = APIRouter(route_class=MoneyrailRoute, include_in_schema=False)

NOTICES: dict[str, tuple[int, str, str]] = {
    "missing": (
        404,
        "This checkout link is not valid",
        "Check the link, or return to the shop and start the payment again.",
    ),
    "expired": (
        410,
        "This checkout has expired",
        "Nothing was charged. Return to the shop and start the payment again.",
    ),
    "complete": (
        410,
        "This payment is complete",
        "This checkout has already been paid, so its link no longer works. You can close this page.",
    ),
    "canceled": (
        410,
        "This payment is no longer available",
        "The shop cancelled this payment. Nothing was charged. Return to the shop to continue.",
    ),
    "returned": (
        200,
        "Your bank has answered",
        "Return to the shop to see how the payment went, or open your checkout link again.",
    ),
    "processing": (
        200,
        "Your payment is being processed",
        "Your bank has not answered yet. Return to the shop later to check the payment.",
    ),
    "authenticating": (
        200,
        "Your bank asks you to confirm this payment",
        "Your bank wants you to confirm this payment in its own check (3-D Secure), which this page "
        "cannot show. Nothing has been charged. Return to the shop to pay another way.",
    ),
}
FORM_STATUS = {None: 200, "declined": 402, "invalid": 400, "unavailable": 503}
RETURN_COOKIE = "moneyrail_checkout"
STRIPE_CARD_SCRIPT = "/assets/stripe-card.js"
_STRIPE_CARD_SOURCE = (Path(__file__).parents[1] / "web" / "static" / "stripe-card.js").read_bytes()


def _form_targets(request: Request, view: service.CheckoutView) -> str:
    """Chromium applies form-action to every redirect after a form post: the caller's return pages and
    the bank's authentication page (on the public address) must be allowed, and nothing else."""
    origins = [origin_of(public_base_url(request)), origin_of(view.success_url), origin_of(view.cancel_url)]
    return " ".join(dict.fromkeys(origins))


def _card_label(card: service.SavedCard) -> str:
    label = f"{card.brand.title()} ending in {card.last4}, expires {card.exp_month:02d}/{card.exp_year}"
    return f"{label} (preferred)" if card.preferred else label


def _form_page(request: Request, token: str, form: service.PaymentForm) -> Response:
    view = form.view
    offered = {card.id for card in view.saved_cards} | {"new"}
    preferred = next((card.id for card in view.saved_cards if card.preferred), None)
    selected = form.chosen if form.chosen in offered else preferred or "new"
    context: dict[str, Any] = {
        "title": view.title,
        "seller": view.seller,
        "amount": format_amount(view.amount, view.currency),
        "saved_cards": [{"id": card.id, "label": _card_label(card)} for card in view.saved_cards],
        "selected": selected,
        "can_save_card": view.can_save_card and view.frequency is None,
        "frequency": view.frequency,
        "renewal_amount": (
            format_amount(view.renewal_amount, view.currency) if view.renewal_amount is not None else None
        ),
        "sandbox": not view.livemode,
        "error": form.error,
        "action": f"/checkout/{token}",
        "cancel_href": f"/checkout/{token}/cancel",
    }
    processor_script = None
    entry = view.card_entry
    if entry.processor_fields:
        settings = request.app.state.settings
        context["processor_fields"] = {
            "publishable_key": entry.publishable_key,
            "script_url": settings.stripe_js_url,
            "own_script_url": STRIPE_CARD_SCRIPT,
        }
        if entry.publishable_key is not None:
            processor_script = ProcessorScript(
                script=origin_of(settings.stripe_js_url), connect=origin_of(settings.stripe_api_base)
            )
    return render_page(
        request,
        "checkout.html",
        context,
        status_code=FORM_STATUS[form.problem],
        form_targets=_form_targets(request, view),
        processor_script=processor_script,
    )


def _change_page(request: Request, token: str, step: service.ChangeConfirmation) -> Response:
    """A next_cycle change: a confirmation of the new terms, not of a charge (nothing is charged now)."""
    context: dict[str, Any] = {
        "title": step.title,
        "seller": step.seller,
        "amount": format_amount(step.amount, step.currency),
        "frequency": step.frequency,
        "applies_on": step.applies_at.strftime("%d %B %Y"),
        "error": step.error,
        "action": f"/checkout/{token}",
        "cancel_href": f"/checkout/{token}/cancel",
    }
    origins = [origin_of(public_base_url(request)), origin_of(step.success_url), origin_of(step.cancel_url)]
    return render_page(
        request,
        "checkout_change.html",
        context,
        status_code=400 if step.error else 200,
        form_targets=" ".join(dict.fromkeys(origins)),
    )


def _notice_page(request: Request, reason: str) -> Response:
    status_code, heading, message = NOTICES[reason]
    return render_page(
        request,
        "checkout_notice.html",
        {"heading": heading, "message": message, "is_error": status_code != 200},
        status_code=status_code,
    )


def _answer(request: Request, token: str, step: service.PageStep) -> Response:
    if isinstance(step, service.Redirect):
        return RedirectResponse(step.url, status_code=303)
    if isinstance(step, service.Notice):
        return _notice_page(request, step.reason)
    if isinstance(step, service.ChangeConfirmation):
        return _change_page(request, token, step)
    return _form_page(request, token, step)


@router.get("/checkout/{token}")
async def checkout_page(request: Request, token: str) -> Response:
    return _answer(request, token, await service.show_checkout(request_session(request), token))


@router.post("/checkout/{token}")
async def pay(
    request: Request,
    token: str,
    payment_method: Annotated[str | None, Form()] = None,
    card_number: Annotated[str | None, Form()] = None,
    exp_month: Annotated[str | None, Form()] = None,
    exp_year: Annotated[str | None, Form()] = None,
    cvc: Annotated[str | None, Form()] = None,
    card_token: Annotated[str | None, Form()] = None,
    save_card: Annotated[str | None, Form()] = None,
    renew_consent: Annotated[str | None, Form()] = None,
) -> Response:
    form = CheckoutPaymentForm(
        payment_method=payment_method,
        card_number=card_number,
        exp_month=exp_month,
        exp_year=exp_year,
        cvc=cvc,
        card_token=card_token,
        save_card=save_card is not None,
        renew_consent=renew_consent is not None,
    )
    uow = request_uow(request)
    base_url = public_base_url(request)
    # the payer's address for the risk lists: the socket peer, or, behind a proxy that uvicorn
    # trusts (MONEYRAIL_FORWARDED_ALLOW_IPS names it; unset, none is), the forwarded client
    ip_address = request.client.host if request.client is not None else None

    def paying(session: AsyncSession, processor: Processor) -> Awaitable[service.PageStep]:
        return service.pay_checkout(session, processor, token, form, base_url=base_url, ip_address=ip_address)

    target = await service.payment_of_link(uow.session, token)
    if target is None:
        step = await paying(uow.session, routed())
    else:
        tenant, payment_id = target
        try:
            processor: Processor = await processor_for(uow, tenant)
        except ProcessorNotConfigured:
            processor = routed()  # the attempt meets a processor that cannot be reached: a 503 form
        try:
            step = await phases.run_in_phases(
                uow, processor, tenant, payment_id, phases.request_token(request, tenant), paying
            )
        except phases.ProcessorCallInFlight:
            step = service.Notice("processing")  # a double click while the first attempt is at the bank
    session = uow.session
    answer = _answer(request, token, step)
    checkout_id = await service.checkout_id_for(session, token)
    if checkout_id is not None:
        # The bank's page returns to an address without the token; the browser brings it back itself,
        # to that one address only, and to nothing on another site.
        answer.set_cookie(
            RETURN_COOKIE,
            token,
            max_age=1800,
            path=f"/checkout/return/{checkout_id}",
            secure=public_base_url(request).startswith("https://"),
            httponly=True,
            samesite="lax",
        )
    return answer


@router.get("/checkout/return/{checkout_session}")
async def return_from_bank(request: Request, checkout_session: str) -> Response:
    """The bank's page sends the payer here. Its query string is not believed: the payment's status is."""
    session = request_session(request)
    token = request.cookies.get(RETURN_COOKIE)
    if token is not None and await service.checkout_id_for(session, token) == checkout_session:
        step = await service.return_from_authentication(session, token)
    else:
        token, step = "", await service.return_without_link(session, checkout_session)
    if isinstance(step, service.Redirect) and origin_of(step.url) != origin_of(public_base_url(request)):
        # This answer ends a redirect chain that began with the bank page's form, whose form-action
        # allows only this site: a redirect elsewhere would be blocked, so the page forwards instead.
        return render_page(
            request,
            "checkout_forward.html",
            {"url": step.url, "heading": "Payment complete", "message": "Taking you back to the shop…"},
        )
    return _answer(request, token, step)


@router.get("/checkout/{token}/cancel")
async def cancel(request: Request, token: str) -> Response:
    return _answer(request, token, await service.leave_checkout(request_session(request), token))


@router.get(STRIPE_CARD_SCRIPT)
async def stripe_card_script() -> Response:
    """The checkout page's own script on a real processor (a file, so that no page runs inline script)."""
    return Response(
        _STRIPE_CARD_SOURCE,
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"},
    )
