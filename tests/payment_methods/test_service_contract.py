"""The service functions the payments domain calls: one-off cards, attaching after consent, charging.

No route exposes these yet, so they run here on the real database and the sandbox processor.
"""

from __future__ import annotations

from typing import Any

import pytest

from moneyrail.errors import CardDeclined, Conflict, ReferencedResourceMissing
from moneyrail.payment_methods import service
from moneyrail.payment_methods.schemas import CardIn, render_payment_method
from moneyrail.processor.sandbox import SandboxProcessor
from tests.payment_methods.support import CHARGES_DECLINED, LIVE_CARD, SUCCEEDS, new_customer, save_card


def _card(number: str = SUCCEEDS) -> Any:
    return CardIn(number=number, exp_month=12, exp_year=2099, cvc="123").to_details()


def _run(bridge, work) -> Any:
    async def go(session):
        return await work(session, SandboxProcessor(bridge._sessionmaker))

    return bridge.in_unit_of_work(go)


def test_a_one_off_card_belongs_to_nobody_and_is_usable_only_without_customer(api, bridge):
    tenant = api.keys.tenant
    customer = new_customer(api)

    async def work(session, processor):
        method = await service.save_card(session, tenant, processor, _card(), customer_id=None)
        usable = await service.usable_method(session, tenant, method.id, customer_id=None)
        with pytest.raises(ReferencedResourceMissing) as refused:
            await service.usable_method(session, tenant, method.id, customer_id=customer, param="pm")
        return method, usable, refused.value

    method, usable, refused = _run(bridge, work)
    assert usable.id == method.id and method.customer_id is None and method.preferred is False
    assert refused.param == "pm" and refused.status == 400
    assert render_payment_method(method).customer is None
    assert "processor_token" not in render_payment_method(method).model_dump()


def test_attaching_a_one_off_card_after_consent_saves_it_or_answers_the_saved_twin(api, bridge):
    tenant = api.keys.tenant
    customer = new_customer(api)

    async def work(session, processor):
        first = await service.save_card(session, tenant, processor, _card(), customer_id=None)
        attached = await service.attach_to_customer(session, tenant, first, customer)
        twin = await service.save_card(session, tenant, processor, _card(), customer_id=None)
        deduped = await service.attach_to_customer(session, tenant, twin, customer)
        return first, attached, twin, deduped

    first, attached, twin, deduped = _run(bridge, work)
    assert attached.id == first.id and attached.customer_id == customer and attached.preferred is True
    assert deduped.id == first.id and twin.customer_id is None  # the twin stays a one-off
    listed = api.get(f"/v1/customers/{customer}/payment-methods").json()
    assert [item["id"] for item in listed["data"]] == [first.id]


def test_a_card_of_another_customer_cannot_be_attached_or_charged_for_this_one(api, bridge):
    tenant = api.keys.tenant
    owner, other = new_customer(api), new_customer(api)
    method_id = save_card(api, owner)["id"]

    async def work(session, processor):
        method = await service.get_method(session, tenant, method_id)
        with pytest.raises(Conflict):
            await service.attach_to_customer(session, tenant, method, other)
        for customer_id in (other, None):
            with pytest.raises(ReferencedResourceMissing):
                await service.usable_method(session, tenant, method_id, customer_id=customer_id)
        return await service.usable_method(session, tenant, method_id, customer_id=owner)

    assert _run(bridge, work).id == method_id


def test_a_detached_card_is_still_rendered_but_no_longer_usable(api, bridge):
    tenant = api.keys.tenant
    customer = new_customer(api)
    method_id = save_card(api, customer)["id"]
    api.delete(f"/v1/customers/{customer}/payment-methods/{method_id}")

    async def work(session, processor):
        method = await service.get_method(session, tenant, method_id)
        with pytest.raises(ReferencedResourceMissing):
            await service.usable_method(session, tenant, method_id, customer_id=customer)
        return method

    method = _run(bridge, work)
    assert method is not None and render_payment_method(method).customer is None


def test_saved_methods_lists_the_preferred_card_first_then_newest(api, bridge):
    tenant = api.keys.tenant
    customer = new_customer(api)
    preferred = save_card(api, customer, SUCCEEDS)["id"]
    older = save_card(api, customer, CHARGES_DECLINED)["id"]
    newest = save_card(api, customer, "4000000000000259")["id"]

    async def work(session, processor):
        return [method.id for method in await service.saved_methods(session, tenant, customer)]

    assert _run(bridge, work) == [preferred, newest, older]


def test_methods_of_another_tenant_are_invisible_to_the_service(api, make_api, bridge):
    method_id = save_card(api, new_customer(api))["id"]
    stranger = make_api().keys.tenant

    async def work(session, processor):
        with pytest.raises(ReferencedResourceMissing):
            await service.usable_method(session, stranger, method_id, customer_id=None)
        with pytest.raises(ReferencedResourceMissing) as missing_customer:
            await service.save_card(session, stranger, processor, _card(), customer_id="cus_x")
        return await service.get_method(session, stranger, method_id), missing_customer.value.param

    assert _run(bridge, work) == (None, "customer")


def test_a_refused_card_raises_card_declined_on_the_number(api, bridge):
    tenant = api.keys.tenant

    async def work(session, processor):
        with pytest.raises(CardDeclined) as declined:
            await service.save_card(session, tenant, processor, _card(LIVE_CARD), customer_id=None)
        return declined.value

    declined = _run(bridge, work)
    assert (declined.status, declined.code, declined.decline_code, declined.param) == (
        402,
        "card_declined",
        "test_mode_live_card",
        "card[number]",
    )
