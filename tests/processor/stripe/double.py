"""A small stateful Stripe double, put in front of localstripe: the adapter is pointed at this one base.

It serves itself what localstripe 1.15.10 lacks - connected accounts, transfers (with
`source_transaction`), transfer reversals, payouts (the platform's, and a connected account's under
`Stripe-Account`), disputes (evidence, close), file uploads, and balance transactions of its own - and
passes every other route on to localstripe (cards, customers, payment and setup intents, refunds,
charges, the balance, tokens and the fake Stripe.js, with localstripe's CORS headers for a page's
Stripe.js), with two amends: `automatic_payment_methods`,
which localstripe predates, is dropped before passing on (localstripe has cards only), and the list of
payment intents is filtered by `created` here (localstripe refuses the filter).

For every API call, its own or passed on, it does what a Stripe front does:
- refuses a request whose parameters the `stripe` package's types do not allow (stripe_types.py), a
  route it does not know, and a missing or non-secret key;
- honours `Idempotency-Key` per account: the same key and parameters answer the stored answer again
  (no second object), other parameters are an `idempotency_error`, a concurrent one a 409;
- answers with the shapes of Stripe's published fixtures (stripe_fixtures.json), and a `Request-Id`;
- books a charge's fee as Stripe's standard card pricing (2.9% + 30) on the charge's balance
  transaction, which localstripe leaves at 0;
- can be told to fail (`POST /_double/faults`): the next N matching calls answer a status (500 by
  default; 402 a card decline) either before doing anything or after doing it - the object made and
  its answer stored under the key, then lost on the way back, as a double that "fails after
  charging" - or are slow (`delay_seconds`), so that the caller's timeout runs out.

Control routes (no key): `/_double/faults` (POST arms, DELETE clears), `/_double/disputes` (POST: the
network opens a dispute on a charge), `/_double/disputes/{id}/decide`, `/_double/objects?object=`,
`/_double/requests`, `/_double/health`.

Run: `python -m tests.processor.stripe.double --port N --upstream http://127.0.0.1:M`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.processor.stripe import own_routes
from tests.processor.stripe.double_state import (
    Answer,
    Fault,
    State,
    Stored,
    fixture,
    new_id,
    now,
    stripe_error,
)
from tests.processor.stripe.own_routes import Call
from tests.processor.stripe.stripe_types import RefusedParameter, check_params, unflatten

# what the browser side (Stripe.js) calls: passed on as it is, authenticated by a publishable key
BROWSER_PATHS = ("/v1/tokens", "/js.stripe.com/")
PASSED_ON_HEADERS = ("authorization", "content-type", "stripe-account", "origin")


def secret_key(request: Request) -> str | None:
    """The request's secret or restricted key (Bearer, or Basic as the key's user name)."""
    kind, _, value = request.headers.get("authorization", "").partition(" ")
    if kind.lower() == "basic":
        value = base64.b64decode(value).decode(errors="replace").partition(":")[0]
    elif kind.lower() != "bearer":
        return None
    return value if value.startswith(("sk_", "rk_")) and len(value) > 8 else None


async def read_params(request: Request) -> tuple[dict[str, Any], list[tuple[str, Any]], str]:
    """The request's parameters (nested), its pairs, and what fingerprints them."""
    if request.method in ("GET", "DELETE"):
        pairs: list[tuple[str, Any]] = list(request.query_params.multi_items())
        return unflatten(pairs), pairs, urlencode(sorted(pairs))
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        form = await request.form()
        pairs, digest = [], hashlib.sha256()
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                content = await value.read()
                digest.update(key.encode() + b"=" + hashlib.sha256(content).digest())
                pairs.append((key, {"filename": value.filename, "content": content}))
            else:
                digest.update(f"{key}={value}".encode())
                pairs.append((key, value))
        return unflatten(pairs), pairs, digest.hexdigest()
    pairs = parse_qsl((await request.body()).decode(), keep_blank_values=True)
    return unflatten(pairs), pairs, urlencode(sorted(pairs))


def respond(answer: Answer, request_id: str, *, replayed: bool = False) -> Response:
    headers = {**answer.headers, "Request-Id": request_id}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return Response(
        answer.encoded(), status_code=answer.status, media_type=answer.content_type, headers=headers
    )


async def api(request: Request) -> Response:
    state: State = request.app.state.double
    method, path = request.method, request.url.path
    request_id = new_id("req_")
    entry = {
        "method": method,
        "path": path,
        "idempotency_key": request.headers.get("idempotency-key"),
        "stripe_account": request.headers.get("stripe-account"),
        "user_agent": request.headers.get("user-agent", ""),
        "status": None,
    }
    state.log.append(entry)
    if path.startswith(BROWSER_PATHS) or path.endswith("/_authenticate"):
        answer = await pass_on(state, request, (await request.body()))
        entry["status"] = answer.status
        return respond(answer, request_id)
    answer, replayed = await answered(state, request)
    entry["status"] = answer.status
    return respond(answer, request_id, replayed=replayed)


async def answered(state: State, request: Request) -> tuple[Answer, bool]:
    method, path = request.method, request.url.path
    route = own_routes.route_of(method, path)
    if route is None:
        return stripe_error(404, f"Unrecognized request URL ({method}: {path})."), False
    if secret_key(request) is None:
        return stripe_error(401, "Invalid API Key provided.", kind="authentication_error"), False
    try:
        params, pairs, fingerprinted = await read_params(request)
        check_params(params, route.params_type)
    except RefusedParameter as refused:
        return stripe_error(400, refused.message, code=refused.code, param=refused.param), False
    account = request.headers.get("stripe-account", "")
    key = request.headers.get("idempotency-key") if method == "POST" else None
    fingerprint = hashlib.sha256(f"{method} {path} {fingerprinted}".encode()).hexdigest()
    scope = (account, key or "")
    if key is not None:
        stored = state.replies.get(scope)
        if stored is not None:
            if stored.fingerprint != fingerprint:
                return stripe_error(
                    400,
                    "Keys for idempotent requests can only be used with the same parameters they were "
                    f"first used with. Try using a key other than '{key}'.",
                    kind="idempotency_error",
                ), False
            return stored.answer, True
        if scope in state.in_flight:
            return stripe_error(
                409,
                "There is currently another in-progress request using this Idempotent Key.",
                kind="idempotency_error",
                code="idempotency_key_in_use",
            ), False
        state.in_flight.add(scope)
    try:
        fault = state.take_fault(method, path)
        if fault is not None and fault.delay_seconds:
            await asyncio.sleep(fault.delay_seconds)  # a slow Stripe: the caller may have given up
        if fault is not None and fault.status is None:
            fault = None
        if fault is not None and fault.when == "before":
            return fault.failure("An unexpected error occurred (the double's fault)."), False
        if route.handler is None:
            answer = await pass_on(state, request, encoded_for_localstripe(path, pairs))
            await name_the_declined_intent(state, request, answer)
        else:
            answer = await route.handler(state, Call(params, account, route.ids, secret_key(request) or ""))
        if key is not None and answer.status < 500:
            state.replies[scope] = Stored(fingerprint, answer)
        if fault is not None:
            return fault.failure("An unexpected error occurred after the call was made."), False
        return answer, False
    finally:
        state.in_flight.discard(scope)


def encoded_for_localstripe(path: str, pairs: list[tuple[str, Any]]) -> bytes:
    """The form passed on, without what localstripe predates (it has cards only)."""
    kept = [(key, value) for key, value in pairs if not key.startswith("automatic_payment_methods")]
    return urlencode(kept).encode()


async def name_the_declined_intent(state: State, request: Request, answer: Answer) -> None:
    """Stripe's 402 for a declined payment intent carries the intent (`error.payment_intent`);
    localstripe's names only the charge, which names the intent."""
    error = answer.body.get("error") if answer.status == 402 and isinstance(answer.body, dict) else None
    if not isinstance(error, dict) or "payment_intent" in error or "charge" not in error:
        return
    headers = {"authorization": request.headers.get("authorization", "")}
    charge = (await state.upstream.get(f"/v1/charges/{error['charge']}", headers=headers)).json()
    if charge.get("payment_intent"):
        error["payment_intent"] = (
            await state.upstream.get(f"/v1/payment_intents/{charge['payment_intent']}", headers=headers)
        ).json()


async def pass_on(state: State, request: Request, body: bytes) -> Answer:
    headers = {name: value for name, value in request.headers.items() if name in PASSED_ON_HEADERS}
    if body and request.method == "POST" and not request.url.path.startswith(BROWSER_PATHS):
        headers["content-type"] = "application/x-www-form-urlencoded"
    try:
        answer = await state.upstream.request(
            request.method,
            request.url.path,
            params=list(request.query_params.multi_items()),
            content=body,
            headers=headers,
        )
    except httpx.HTTPError as error:
        return stripe_error(502, f"localstripe did not answer: {error}", kind="api_error")
    content_type = answer.headers.get("content-type", "application/json").split(";")[0]
    # a page's Stripe.js reads the answer across origins: localstripe's CORS headers go with it
    cors = {name: value for name, value in answer.headers.items() if name.startswith("access-control-")}
    if content_type != "application/json":
        return Answer(answer.status_code, answer.content, content_type, cors)
    return Answer(answer.status_code, answer.json(), headers=cors)


# control routes --------------------------------------------------------------------------------------
async def arm_fault(request: Request) -> Response:
    state: State = request.app.state.double
    asked = await request.json()
    state.faults.append(
        Fault(
            count=int(asked.get("count", 1)),
            status=asked.get("status", 500),
            when=asked.get("when", "before"),
            method=asked.get("method"),
            path=asked.get("path"),
            delay_seconds=float(asked.get("delay_seconds", 0)),
            decline_code=asked.get("decline_code"),
        )
    )
    return JSONResponse({"armed": len(state.faults)})


async def clear_faults(request: Request) -> Response:
    request.app.state.double.faults.clear()
    return JSONResponse({"armed": 0})


async def open_dispute(request: Request) -> Response:
    """The network opens a dispute on a charge of localstripe's (`charge`, optional `amount`, `reason`)."""
    state: State = request.app.state.double
    asked = await request.json()
    charge = await state.upstream.get(
        f"/v1/charges/{asked['charge']}",
        headers={"authorization": f"Bearer {asked.get('api_key', 'sk_test_double')}"},
    )
    if charge.status_code != 200:
        return JSONResponse(charge.json(), status_code=charge.status_code)
    charged = charge.json()
    amount = int(asked.get("amount", charged["amount"]))
    dispute_id = new_id("dp_")
    withdrawn = state.book(dispute_id, -amount, "adjustment", fee=1500, currency=charged["currency"])
    dispute = fixture(
        "dispute",
        id=dispute_id,
        amount=amount,
        currency=charged["currency"],
        charge=charged["id"],
        payment_intent=charged.get("payment_intent"),
        reason=asked.get("reason", "fraudulent"),
        status="needs_response",
        created=now(),
        balance_transactions=[state.objects[withdrawn]],
        evidence_details={
            "due_by": now() + 7 * 86400,
            "has_evidence": False,
            "past_due": False,
            "submission_count": 0,
            "enhanced_eligibility": {},
        },
    )
    return JSONResponse(state.keep(dispute))


async def decide_dispute(request: Request) -> Response:
    state: State = request.app.state.double
    dispute = state.of(request.path_params["dispute"], "dispute")
    if dispute is None:
        return JSONResponse({"error": "no such dispute"}, status_code=404)
    dispute["status"] = (await request.json())["status"]
    return JSONResponse(dispute)


async def list_objects(request: Request) -> Response:
    state: State = request.app.state.double
    kind = request.query_params.get("object")
    return JSONResponse(
        {"data": [each for each in state.objects.values() if kind is None or each.get("object") == kind]}
    )


async def list_requests(request: Request) -> Response:
    return JSONResponse({"data": request.app.state.double.log})


async def health(request: Request) -> Response:
    return JSONResponse({"ok": True})


def create_app(upstream: str) -> Starlette:
    app = Starlette(
        routes=[
            Route("/_double/health", health),
            Route("/_double/faults", arm_fault, methods=["POST"]),
            Route("/_double/faults", clear_faults, methods=["DELETE"]),
            Route("/_double/disputes", open_dispute, methods=["POST"]),
            Route("/_double/disputes/{dispute}/decide", decide_dispute, methods=["POST"]),
            Route("/_double/objects", list_objects),
            Route("/_double/requests", list_requests),
            Route("/{path:path}", api, methods=["GET", "POST", "DELETE", "OPTIONS"]),
        ]
    )
    app.state.double = State(httpx.AsyncClient(base_url=upstream, timeout=30))
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="localstripe's base URL")
    arguments = parser.parse_args()
    uvicorn.run(create_app(arguments.upstream), host="127.0.0.1", port=arguments.port, log_level="warning")


if __name__ == "__main__":
    main()
