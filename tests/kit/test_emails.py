"""The remembered-domain e-mail check gives `EmailStr`'s verdicts (kit/emails.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import EmailStr, TypeAdapter, ValidationError

from moneyrail.kit import emails
from moneyrail.kit.emails import Email

LIBRARY = TypeAdapter(EmailStr)
OURS = TypeAdapter(Email)

# Domains the library accepts, lowercases, decodes from Punycode, or refuses (special-use names,
# bad labels, a bare TLD, characters outside a hostname, lengths near the limits)
DOMAINS = [
    "example.com",
    "Example.COM",
    "mail.example.org",
    "a-b.co",
    "xn--bcher-kva.example",
    "XN--BCHER-KVA.example",
    "xn--zz.com",
    "bücher.example",
    "localhost",
    "a.test",
    "x.arpa",
    "a.invalid",
    "com",
    "-a.com",
    "a-.com",
    "a..com",
    ".a.com",
    "a.com.",
    "1.2.3.4",
    "a.123",
    "a_b.com",
    "a.b",
    "EXAMPLE.net",
    ("l" * 63 + ".") * 3 + "com",
    ("l" * 63 + ".") * 3 + "l" * 57 + ".io",
    "l" * 64 + ".com",
]
LOCAL_ALPHABET = "abcXYZ019_!#$%&'*+-/=?^`{|}~.\"@ <>()[]\\,;:é\u0301\x00"
LOCALS = st.one_of(
    st.text(alphabet=LOCAL_ALPHABET, max_size=12),
    st.sampled_from(["postmaster", "PostMaster", "abuse", "ada", "a.b", "a..b", ".a", "a.", '"a b"', "ß"]),
    st.integers(min_value=1, max_value=260).map(lambda n: "x" * n),
)
ADDRESSES = st.one_of(
    st.builds(lambda local, domain: f"{local}@{domain}", LOCALS, st.sampled_from(DOMAINS)),
    st.builds(
        lambda name, local, domain: f"{name} <{local}@{domain}>",
        st.sampled_from(["Ada", '"A B"']),
        LOCALS,
        st.sampled_from(DOMAINS),
    ),
    st.text(max_size=20),
)


def verdict(adapter: TypeAdapter[str], address: str) -> tuple[str, str]:
    try:
        return "valid", adapter.validate_python(address)
    except ValidationError as refusal:
        (error,) = refusal.errors()
        return error["type"], error["msg"]


@pytest.fixture(autouse=True)
def no_remembered_domains() -> Iterator[None]:
    emails.forget_domains()
    yield
    emails.forget_domains()


@settings(max_examples=1500, deadline=None)
@given(st.lists(ADDRESSES, min_size=1, max_size=8))
def test_every_address_gets_the_verdict_and_normalized_form_of_email_str(addresses: list[str]) -> None:
    # each address twice: the second time its domain may be remembered from any earlier address
    for address in [*addresses, *addresses]:
        assert verdict(OURS, address) == verdict(LIBRARY, address), address


@pytest.mark.parametrize(
    "address",
    [
        "ada@example.com",
        "Ada.Lovelace+tag@Example.COM",
        "postmaster@example.com",
        "PostMaster@Example.com",
        "a@xn--bcher-kva.example",
        "a@localhost",
        "a@a.test",
        "a..b@example.com",
        "Ada <ada@example.com>",
        '"a b"@example.com',
        "ada@example.com ",
        "x" * 240 + "@example.com",
        "x" * 250 + "@a.io",
        "",
        "@example.com",
        "ada@",
    ],
)
def test_known_cases_cold_and_warm(address: str) -> None:
    warm_up = ["someone@example.com", "someone@Example.COM", "someone@a.io", "someone@xn--bcher-kva.example"]
    assert verdict(OURS, address) == verdict(LIBRARY, address)
    for other in warm_up:
        verdict(OURS, other)
    assert verdict(OURS, address) == verdict(LIBRARY, address)


def test_a_plain_address_at_a_remembered_domain_skips_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    library = emails.validate_email

    def counted(address: str) -> tuple[str, str]:
        calls.append(address)
        return library(address)

    monkeypatch.setattr(emails, "validate_email", counted)
    assert OURS.validate_python("ada@Example.COM") == "ada@example.com"
    assert OURS.validate_python("bob.b+1@Example.COM") == "bob.b+1@example.com"
    assert OURS.validate_python("postmaster@Example.COM") == "postmaster@example.com"  # RFC 2142: library
    assert OURS.validate_python("a@xn--bcher-kva.example") == "a@bücher.example"
    assert OURS.validate_python("b@xn--bcher-kva.example") == "b@bücher.example"  # Punycode: never remembered
    assert calls == [
        "ada@Example.COM",
        "postmaster@Example.COM",
        "a@xn--bcher-kva.example",
        "b@xn--bcher-kva.example",
    ]


def test_a_refused_domain_is_never_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    library = emails.validate_email

    def counted(address: str) -> tuple[str, str]:
        calls.append(address)
        return library(address)

    monkeypatch.setattr(emails, "validate_email", counted)
    for _ in range(2):
        with pytest.raises(ValidationError):
            OURS.validate_python("a@localhost")
    assert calls == ["a@localhost", "a@localhost"]


def test_remembered_domains_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emails, "MAX_REMEMBERED_DOMAINS", 3)
    for number in range(5):
        OURS.validate_python(f"a@d{number}.example.com")
    assert list(emails._normalized_domains) == ["d2.example.com", "d3.example.com", "d4.example.com"]


def test_the_json_schema_is_email_str_s() -> None:
    assert OURS.json_schema() == LIBRARY.json_schema()
    assert TypeAdapter(Email | None).json_schema() == TypeAdapter(EmailStr | None).json_schema()
