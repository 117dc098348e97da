"""Customers: created or reused by external_reference, read, listed newest first (spec 4.A)."""

from __future__ import annotations

import concurrent.futures

from tests.helpers import assert_error, count_rows


def test_a_customer_is_created_with_the_fields_sent(api):
    response = api.post(
        "/v1/customers",
        json={
            "external_reference": "user-42",
            "email": "ada@example.com",
            "name": "Ada",
            "metadata": {"tier": "gold"},
        },
    )
    assert response.status_code == 200, response.text
    customer = response.json()
    assert customer["id"].startswith("cus_") and len(customer["id"]) == 28
    assert customer["object"] == "customer"
    assert customer["livemode"] is False
    assert isinstance(customer["created"], int)
    assert (customer["external_reference"], customer["email"], customer["name"]) == (
        "user-42",
        "ada@example.com",
        "Ada",
    )
    assert customer["metadata"] == {"tier": "gold"}
    assert api.get(f"/v1/customers/{customer['id']}").json() == customer


def test_the_same_external_reference_reuses_the_customer(api, db):
    first = api.post("/v1/customers", json={"external_reference": "user-7", "email": "a@example.com"}).json()
    second = api.post("/v1/customers", json={"external_reference": "user-7", "email": "b@example.com"}).json()
    assert second == first  # reused as it is: a reference names one customer
    assert count_rows(db, "customers", api.keys.installation_id) == 1


def test_customers_without_reference_are_distinct(api, db):
    api.post("/v1/customers", json={"email": "a@example.com"})
    api.post("/v1/customers", json={"email": "a@example.com"})
    assert count_rows(db, "customers", api.keys.installation_id) == 2


def test_concurrent_creates_with_one_reference_make_one_customer(api, db):
    def create(_: int):
        return api.post("/v1/customers", json={"external_reference": "same", "name": "Race"})

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        responses = list(pool.map(create, range(32)))
    assert {response.status_code for response in responses} == {200}
    assert len({response.json()["id"] for response in responses}) == 1
    assert count_rows(db, "customers", api.keys.installation_id) == 1


def test_an_empty_body_creates_an_anonymous_customer(api):
    response = api.post("/v1/customers")
    assert response.status_code == 200, response.text
    assert response.json()["email"] is None


def test_metadata_limits_are_enforced(api, db):
    too_many = {f"k{i}": "v" for i in range(51)}
    assert_error(api.post("/v1/customers", json={"metadata": too_many}), 400, "parameter_invalid", "metadata")
    long_key = {"k" * 41: "v"}
    assert_error(api.post("/v1/customers", json={"metadata": long_key}), 400, "parameter_invalid", "metadata")
    assert count_rows(db, "customers", api.keys.installation_id) == 0


def test_an_unknown_customer_is_a_404(api):
    assert_error(api.get("/v1/customers/cus_000000000000000000000000"), 404, "resource_missing", "customer")


def test_the_list_pages_newest_first_through_every_customer(api):
    created = [api.post("/v1/customers", json={"name": f"c{i}"}).json()["id"] for i in range(7)]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/customers", params=params).json()
        assert page["object"] == "list"
        seen.extend(item["id"] for item in page["data"])
        pages += 1
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = page["next_cursor"]
    assert pages == 3
    assert seen == list(reversed(created))


def test_the_default_page_holds_ten(api):
    for i in range(11):
        api.post("/v1/customers", json={"name": f"c{i}"})
    page = api.get("/v1/customers").json()
    assert len(page["data"]) == 10 and page["has_more"] is True


def test_bad_list_parameters_are_refused(api):
    for limit in ("0", "101", "ten", "-1"):
        assert_error(api.get("/v1/customers", params={"limit": limit}), 400, "parameter_invalid", "limit")
    assert_error(api.get("/v1/customers", params={"cursor": "garbage!"}), 400, "parameter_invalid", "cursor")
    assert api.get("/v1/customers", params={"limit": "100"}).status_code == 200


def test_a_keyed_create_reusing_a_reference_answers_and_replays_the_first_customer(api, db):
    """The one-statement intake inserts nothing for a used reference: the transactional path answers."""
    first = api.post("/v1/customers", json={"external_reference": "user-7", "email": "a@example.com"})
    body = {"external_reference": "user-7", "email": "b@example.com"}
    reused = api.post("/v1/customers", json=body, headers={"Idempotency-Key": "reuse-7"})
    assert reused.status_code == 200, reused.text
    assert reused.json() == first.json()
    again = api.post("/v1/customers", json=body, headers={"Idempotency-Key": "reuse-7"})
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == reused.content
    assert count_rows(db, "customers", api.keys.installation_id) == 1


def test_a_keyed_create_on_an_advanced_sandbox_clock_replays_the_stamped_created(api, db):
    """The answer is sealed before the database stamps `created` (the tenant's clock): the record keeps
    the stamped moment and the replay fills it in, so first answer, replay and read all agree."""
    clock_now = api.post("/v1/test-helpers/clock/advance", json={"seconds": 10 * 86_400}).json()["now"]
    headers = {"Idempotency-Key": "on-the-clock"}
    first = api.post("/v1/customers", json={"name": "Ada"}, headers=headers)
    assert first.status_code == 200, first.text
    assert abs(first.json()["created"] - clock_now) < 120
    again = api.post("/v1/customers", json={"name": "Ada"}, headers=headers)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    read = api.get(f"/v1/customers/{first.json()['id']}").json()
    assert read == first.json()
    (stamped,) = db.execute(
        "SELECT floor(extract(epoch FROM answer_created_at))::bigint FROM idempotency_records "
        "WHERE installation_id = %s AND key = 'on-the-clock'",
        (api.keys.installation_id,),
    ).fetchone()
    assert stamped == first.json()["created"]
