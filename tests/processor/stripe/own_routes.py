"""The Stripe double's routes: which params type each takes (the `stripe` package's), and the handler
of those it serves itself (None: passed on to localstripe)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import stripe.params as p

from tests.processor.stripe.double_state import Answer, State, charge_fee, fixture, new_id, now, stripe_error


@dataclass(frozen=True)
class Call:
    params: dict[str, Any]
    account: str  # Stripe-Account, "" for the platform
    ids: tuple[str, ...]  # the path's ids, in order
    api_key: str


Handler = Callable[[State, Call], Awaitable[Answer]]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    params_type: type
    handler: Handler | None


@dataclass(frozen=True)
class Matched:
    params_type: type
    handler: Handler | None
    ids: tuple[str, ...]


ROUTES: list[Route] = []


def route(method: str, path: str, params_type: type, handler: Handler | None = None) -> None:
    pattern = re.compile("^" + re.sub(r"\{\w+\}", r"([A-Za-z0-9_]+)", path) + "$")
    ROUTES.append(Route(method, pattern, params_type, handler))


def route_of(method: str, path: str) -> Matched | None:
    for each in ROUTES:
        found = each.pattern.match(path)
        if each.method == method and found is not None:
            return Matched(each.params_type, each.handler, found.groups())
    return None


def answer(body: dict[str, Any], status: int = 200) -> Answer:
    return Answer(status, body)


def missing(kind: str, object_id: str, param: str | None = None) -> Answer:
    return stripe_error(
        404 if param is None else 400, f"No such {kind}: '{object_id}'", code="resource_missing", param=param
    )


def refused(message: str, code: str = "parameter_invalid", param: str | None = None) -> Answer:
    return stripe_error(400, message, code=code, param=param)


def listing(url: str, found: list[dict[str, Any]], params: dict[str, Any]) -> Answer:
    """Newest first, `limit` from after `starting_after`, as Stripe's lists page."""
    found = sorted(found, key=lambda each: (each.get("created", 0), each["id"]), reverse=True)
    after = params.get("starting_after")
    if after is not None:
        ids = [each["id"] for each in found]
        found = found[ids.index(after) + 1 :] if after in ids else []
    limit = int(params.get("limit", 10))
    return answer({"object": "list", "url": url, "data": found[:limit], "has_more": len(found) > limit})


# accounts ------------------------------------------------------------------------------------------
def bank_of(account_id: str, country: str, currency: str, given: Any) -> dict[str, Any]:
    """The bank account an `external_account` parameter makes (only its last four digits are kept)."""
    number = str(given.get("account_number", "")) if isinstance(given, dict) else ""
    return fixture(
        "bank_account",
        id=new_id("ba_"),
        account=account_id,
        country=str(given.get("country", country)) if isinstance(given, dict) else country,
        currency=currency,
        last4=number[-4:] or "6789",
        default_for_currency=True,
    )


def with_details(account: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The account with what a create or update call says of its holder, terms and bank account."""
    account_id = account["id"]
    if "business_type" in params:
        account["business_type"] = params["business_type"]
    if "individual" in params:
        account["individual"] = {"object": "person", "account": account_id} | dict(params["individual"])
    if "tos_acceptance" in params:
        account["tos_acceptance"] = {"date": None, "ip": None, "user_agent": None} | {
            key: int(value) if key == "date" else value for key, value in params["tos_acceptance"].items()
        }
    if "external_account" in params:  # the new default for its currency; the old default is deleted
        given = params["external_account"]
        account["external_accounts"]["data"] = [
            bank_of(account_id, account["country"], account["default_currency"], given)
        ]
    return account


async def create_account(state: State, call: Call) -> Answer:
    account_id = new_id("acct_")
    country = call.params.get("country", "US")
    currency = "eur" if country != "US" else "usd"
    requested = call.params.get("capabilities", {})
    made = fixture(
        "account",
        id=account_id,
        created=now(),
        country=country,
        default_currency=currency,
        email=call.params.get("email"),
        type=call.params.get("type", "custom"),
        metadata=call.params.get("metadata", {}),
        capabilities={name: "active" for name in requested} or {"transfers": "active"},
        charges_enabled=True,
        payouts_enabled=True,
        details_submitted=True,
        external_accounts={
            "object": "list",
            "data": [],
            "has_more": False,
            "url": f"/v1/accounts/{account_id}/external_accounts",
        },
    )
    return answer(state.keep(with_details(made, call.params)))


async def update_account(state: State, call: Call) -> Answer:
    found = state.of(call.ids[0], "account")
    if found is None:
        return missing("account", call.ids[0])
    return answer(state.keep(with_details(found, call.params)))


async def retrieve_account(state: State, call: Call) -> Answer:
    found = state.of(call.ids[0], "account")
    return answer(found) if found is not None else missing("account", call.ids[0])


# transfers -----------------------------------------------------------------------------------------
async def create_transfer(state: State, call: Call) -> Answer:
    params = call.params
    amount, currency, destination = int(params.get("amount", 0)), params["currency"], params["destination"]
    if amount < 1:
        return refused("This value must be greater than or equal to 1.", param="amount")
    if state.of(destination, "account") is None:
        return missing("destination", destination, param="destination")
    source = params.get("source_transaction")
    if source is not None:
        charge = await state.upstream.get(
            f"/v1/charges/{source}", headers={"authorization": f"Bearer {call.api_key}"}
        )
        if charge.status_code != 200:
            return missing("charge", source, param="source_transaction")
        charged = charge.json()
        if charged["currency"] != currency:
            return refused(
                "The currency of source_transaction's balance transaction must match the transfer.",
                param="currency",
            )
        drawn = sum(
            each["amount"] for each in state.objects.values() if each.get("source_transaction") == source
        )
        if charged["amount"] - charged.get("amount_refunded", 0) - drawn < amount:
            return refused(
                "Insufficient funds in the source transaction for this transfer.", code="balance_insufficient"
            )
    transfer_id = new_id("tr_")
    made = fixture(
        "transfer",
        id=transfer_id,
        created=now(),
        amount=amount,
        currency=currency,
        destination=destination,
        destination_payment=new_id("py_"),
        source_transaction=source,
        metadata=params.get("metadata", {}),
        description=params.get("description"),
        transfer_group=params.get("transfer_group"),
        balance_transaction=state.book(transfer_id, -amount, "transfer", currency=currency),
        reversals={
            "object": "list",
            "data": [],
            "has_more": False,
            "url": f"/v1/transfers/{transfer_id}/reversals",
        },
    )
    return answer(state.keep(made))


async def list_transfers(state: State, call: Call) -> Answer:
    destination = call.params.get("destination")
    found = [
        each
        for each in state.objects.values()
        if each.get("object") == "transfer" and (destination is None or each["destination"] == destination)
    ]
    return listing("/v1/transfers", found, call.params)


async def retrieve_transfer(state: State, call: Call) -> Answer:
    found = state.of(call.ids[0], "transfer")
    return answer(found) if found is not None else missing("transfer", call.ids[0])


async def reverse_transfer(state: State, call: Call) -> Answer:
    transfer = state.of(call.ids[0], "transfer")
    if transfer is None:
        return missing("transfer", call.ids[0])
    left = transfer["amount"] - transfer["amount_reversed"]
    amount = int(call.params.get("amount", left))
    if not 1 <= amount <= left:
        return refused(f"You can reverse at most {left} of this transfer.", param="amount")
    reversal_id = new_id("trr_")
    made = fixture(
        "transfer_reversal",
        id=reversal_id,
        created=now(),
        amount=amount,
        currency=transfer["currency"],
        transfer=transfer["id"],
        metadata=call.params.get("metadata", {}),
        balance_transaction=state.book(reversal_id, amount, "transfer_refund", currency=transfer["currency"]),
    )
    transfer["amount_reversed"] += amount
    transfer["reversed"] = transfer["amount_reversed"] == transfer["amount"]
    transfer["reversals"]["data"].append(made)
    return answer(state.keep(made))


# payouts -------------------------------------------------------------------------------------------
async def create_payout(state: State, call: Call) -> Answer:
    params = call.params
    amount = int(params["amount"])
    if amount < 1:
        return refused("This value must be greater than or equal to 1.", param="amount")
    banks: list[dict[str, Any]] = []
    if call.account:
        holder = state.of(call.account, "account")
        if holder is None:
            return no_access(call.account)
        banks = holder["external_accounts"]["data"]
        if not banks:
            currency = params["currency"]
            return stripe_error(
                400, f"Sorry, you don't have any external accounts in that currency ({currency})."
            )
    destination = params.get("destination") or (banks[0]["id"] if banks else new_id("ba_"))
    if banks and destination not in {bank["id"] for bank in banks}:
        return missing("external account", destination, param="destination")
    payout_id = new_id("po_")
    made = fixture(
        "payout",
        id=payout_id,
        created=now(),
        amount=amount,
        currency=params["currency"],
        destination=destination,
        automatic=False,
        arrival_date=now() + 2 * 86400,
        metadata=params.get("metadata", {}),
        status="pending",
        balance_transaction=state.book(payout_id, -amount, "payout", currency=params["currency"]),
    )
    state.owners[payout_id] = call.account
    return answer(state.keep(made))


def no_access(account: str) -> Answer:
    return stripe_error(
        403, f"The provided key does not have access to account '{account}'.", kind="invalid_request_error"
    )


def owned_payout(state: State, call: Call) -> dict[str, Any] | None:
    """A payout of the account the call is made as (another account's looks missing)."""
    found = state.of(call.ids[0], "payout")
    return found if found is not None and state.owners.get(found["id"]) == call.account else None


async def retrieve_payout(state: State, call: Call) -> Answer:
    found = owned_payout(state, call)
    return answer(found) if found is not None else missing("payout", call.ids[0])


async def reverse_payout(state: State, call: Call) -> Answer:
    original = owned_payout(state, call)
    if original is None:
        return missing("payout", call.ids[0])
    if original.get("reversed_by") is not None:
        return refused("This payout has already been reversed.", code="payout_reversal_not_allowed")
    reversal_id = new_id("po_")
    made = fixture(
        "payout",
        id=reversal_id,
        created=now(),
        amount=original["amount"],
        currency=original["currency"],
        destination=original["destination"],
        automatic=False,
        original_payout=original["id"],
        metadata=call.params.get("metadata", {}),
        status="pending",
        balance_transaction=state.book(
            reversal_id, original["amount"], "payout", currency=original["currency"]
        ),
    )
    original["reversed_by"] = reversal_id
    state.owners[reversal_id] = call.account
    return answer(state.keep(made))


# disputes and files --------------------------------------------------------------------------------
OPEN_DISPUTE = ("needs_response", "warning_needs_response")


async def retrieve_dispute(state: State, call: Call) -> Answer:
    found = state.of(call.ids[0], "dispute")
    return answer(found) if found is not None else missing("dispute", call.ids[0])


async def update_dispute(state: State, call: Call) -> Answer:
    dispute = state.of(call.ids[0], "dispute")
    if dispute is None:
        return missing("dispute", call.ids[0])
    if dispute["status"] not in OPEN_DISPUTE:
        return refused(
            "This dispute is no longer open: its evidence cannot be changed.", code="dispute_already_closed"
        )
    for name, value in call.params.get("evidence", {}).items():
        if (
            name
            in (
                "receipt",
                "customer_communication",
                "shipping_documentation",
                "refund_policy",
                "uncategorized_file",
            )
            and state.of(value, "file") is None
        ):
            return missing("file", value, param=f"evidence[{name}]")
        dispute["evidence"][name] = value
    dispute["metadata"].update(call.params.get("metadata", {}))
    details = dispute["evidence_details"]
    details["has_evidence"] = any(value for value in dispute["evidence"].values() if isinstance(value, str))
    if call.params.get("submit") == "true":
        details["submission_count"] += 1
        dispute["status"] = "under_review"
    return answer(dispute)


async def close_dispute(state: State, call: Call) -> Answer:
    dispute = state.of(call.ids[0], "dispute")
    if dispute is None:
        return missing("dispute", call.ids[0])
    if dispute["status"] not in OPEN_DISPUTE:
        return refused("This dispute is already closed or under review.", code="dispute_already_closed")
    dispute["status"] = "lost" if dispute["status"] == "needs_response" else "warning_closed"
    dispute["is_charge_refundable"] = False
    return answer(dispute)


async def upload_file(state: State, call: Call) -> Answer:
    uploaded = call.params["file"]
    if not isinstance(uploaded, dict):
        return refused("The file must be sent as a multipart file.", param="file")
    name = uploaded["filename"] or "file"
    made = fixture(
        "file",
        id=new_id("file_"),
        created=now(),
        expires_at=now() + 365 * 86400,
        filename=name,
        purpose=call.params["purpose"],
        size=len(uploaded["content"]),
        type=name.rpartition(".")[2] if "." in name else None,
        title=None,
        url=None,
        links={"object": "list", "data": [], "has_more": False, "url": "/v1/file_links"},
    )
    return answer(state.keep(made))


# what localstripe keeps, as the double reads it ----------------------------------------------------
async def list_payment_intents(state: State, call: Call) -> Answer:
    """localstripe's intents (every page), filtered by `created` here and paged as Stripe pages."""
    found: list[dict[str, Any]] = []
    after: str | None = None
    expand = [("expand[]", each) for each in call.params.get("expand", [])]
    while True:
        query = [("limit", "100"), *expand, *([("starting_after", after)] if after else [])]
        page = await state.upstream.get(
            "/v1/payment_intents", params=query, headers={"authorization": f"Bearer {call.api_key}"}
        )
        listed = page.json()
        found.extend(listed["data"])
        if not listed["has_more"] or not listed["data"]:
            break
        after = listed["data"][-1]["id"]
    window = call.params.get("created", {})
    bounds = {"gt": int.__gt__, "gte": int.__ge__, "lt": int.__lt__, "lte": int.__le__}
    if isinstance(window, str):
        window = {"gte": window, "lte": window}
    for name, compare in bounds.items():
        if name in window:
            found = [each for each in found if compare(each["created"], int(window[name]))]
    return listing("/v1/payment_intents", found, call.params)


async def retrieve_balance_transaction(state: State, call: Call) -> Answer:
    """The double's own, or localstripe's with the fee Stripe would have booked on a charge."""
    own = state.of(call.ids[0], "balance_transaction")
    if own is not None:
        return answer(own)
    booked = await state.upstream.get(
        f"/v1/balance_transactions/{call.ids[0]}", headers={"authorization": f"Bearer {call.api_key}"}
    )
    body = booked.json()
    if booked.status_code == 200 and body.get("type") == "charge":
        fee = charge_fee(body["amount"])
        body.update(
            fee=fee,
            net=body["amount"] - fee,
            fee_details=[{"amount": fee, "currency": body["currency"], "type": "stripe_fee"}],
        )
    return answer(body, booked.status_code)


# passed on to localstripe
route("POST", "/v1/customers", p.CustomerCreateParams)
route("GET", "/v1/customers/{customer}", p.CustomerRetrieveParams)
route("POST", "/v1/customers/{customer}/sources", p.CustomerPaymentSourceCreateParams)
route("GET", "/v1/customers/{customer}/sources/{source}", p.CustomerPaymentSourceRetrieveParams)
route("GET", "/v1/payment_methods/{method}", p.PaymentMethodRetrieveParams)
route("POST", "/v1/payment_methods/{method}/attach", p.PaymentMethodAttachParams)
route("POST", "/v1/payment_intents", p.PaymentIntentCreateParams)
route("GET", "/v1/payment_intents/{intent}", p.PaymentIntentRetrieveParams)
route("POST", "/v1/payment_intents/{intent}/confirm", p.PaymentIntentConfirmParams)
route("POST", "/v1/payment_intents/{intent}/capture", p.PaymentIntentCaptureParams)
route("POST", "/v1/payment_intents/{intent}/cancel", p.PaymentIntentCancelParams)
route(
    "POST",
    "/v1/payment_intents/{intent}/increment_authorization",
    p.PaymentIntentIncrementAuthorizationParams,
)
route("POST", "/v1/setup_intents", p.SetupIntentCreateParams)
route("GET", "/v1/setup_intents/{intent}", p.SetupIntentRetrieveParams)
route("POST", "/v1/setup_intents/{intent}/confirm", p.SetupIntentConfirmParams)
route("POST", "/v1/setup_intents/{intent}/cancel", p.SetupIntentCancelParams)
route("POST", "/v1/refunds", p.RefundCreateParams)
route("GET", "/v1/charges/{charge}", p.ChargeRetrieveParams)
route("GET", "/v1/balance", p.BalanceRetrieveParams)
# served here
route("GET", "/v1/payment_intents", p.PaymentIntentListParams, list_payment_intents)
route(
    "GET",
    "/v1/balance_transactions/{transaction}",
    p.BalanceTransactionRetrieveParams,
    retrieve_balance_transaction,
)
route("POST", "/v1/accounts", p.AccountCreateParams, create_account)
route("GET", "/v1/accounts/{account}", p.AccountRetrieveParams, retrieve_account)
route("POST", "/v1/accounts/{account}", p.AccountUpdateParams, update_account)
route("POST", "/v1/transfers", p.TransferCreateParams, create_transfer)
route("GET", "/v1/transfers", p.TransferListParams, list_transfers)
route("GET", "/v1/transfers/{transfer}", p.TransferRetrieveParams, retrieve_transfer)
route("POST", "/v1/transfers/{transfer}/reversals", p.TransferReversalCreateParams, reverse_transfer)
route("POST", "/v1/payouts", p.PayoutCreateParams, create_payout)
route("GET", "/v1/payouts/{payout}", p.PayoutRetrieveParams, retrieve_payout)
route("POST", "/v1/payouts/{payout}/reverse", p.PayoutReverseParams, reverse_payout)
route("GET", "/v1/disputes/{dispute}", p.DisputeRetrieveParams, retrieve_dispute)
route("POST", "/v1/disputes/{dispute}", p.DisputeUpdateParams, update_dispute)
route("POST", "/v1/disputes/{dispute}/close", p.DisputeCloseParams, close_dispute)
route("POST", "/v1/files", p.FileCreateParams, upload_file)
