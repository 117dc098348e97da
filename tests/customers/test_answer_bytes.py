"""The create's answer, built without the model, is `CustomerOut`'s JSON byte for byte."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from moneyrail.customers.endpoints import _answer
from moneyrail.customers.repository import NewCustomer
from moneyrail.customers.schemas import CustomerOut

# any text a body can hold (hypothesis leaves out lone surrogates, which JSON input cannot carry either)
TEXT = st.text(max_size=40)


@settings(max_examples=1500, deadline=None)
@given(
    livemode=st.booleans(),
    created=st.integers(min_value=0, max_value=2**40),
    external_reference=st.none() | TEXT,
    email=st.none() | TEXT,
    name=st.none() | TEXT,
    metadata=st.dictionaries(TEXT, TEXT, max_size=5),
)
def test_the_answer_is_customer_outs_json(livemode, created, external_reference, email, name, metadata):
    customer = NewCustomer("cus_" + "a" * 24, "inst_x", livemode, external_reference, email, name, metadata)
    model = CustomerOut(
        id=customer.id,
        livemode=livemode,
        created=created,
        external_reference=external_reference,
        email=email,
        name=name,
        metadata=metadata,
    )
    assert _answer(customer, created) == model.__pydantic_serializer__.to_json(model)


def test_every_character_is_written_as_customer_out_writes_it():
    # control characters, quotes, backslashes, non-ASCII up to the last plane: escaped (or not) alike
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(characters), 4096):
        text = "".join(characters[start : start + 4096])
        customer = NewCustomer("cus_x", "inst_x", False, text, None, text[:7], {text[:3]: text})
        model = CustomerOut(
            id="cus_x",
            livemode=False,
            created=1,
            external_reference=text,
            email=None,
            name=text[:7],
            metadata={text[:3]: text},
        )
        assert _answer(customer, 1) == model.__pydantic_serializer__.to_json(model)
