"""The idempotency fingerprint's path is `request.url.path`, with or without building the URL; never an
error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from moneyrail.api.idempotency import url_path

PATH_CHARACTERS = st.sampled_from(list("/aZ09_.~-%:@!$&'()*+,;=?#\\ \t\n\x00é\u2028[]{}\"<>^`|"))


def request_for(path: str, host: bytes | None) -> Request:
    headers = [(b"host", host)] if host is not None else []
    return Request({"type": "http", "method": "POST", "path": path, "headers": headers, "query_string": b""})


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.builds(lambda rest: "/" + rest, st.text(PATH_CHARACTERS, max_size=12)),
        st.text(PATH_CHARACTERS, max_size=12),
        st.sampled_from(["/v1/customers", "/v1/payment-intents/pi_1/confirm", "//v1/customers", "/", ""]),
    ),
    st.sampled_from([b"bench", b"example.com:8080", None, b"[::1]:80"]),
)
def test_the_path_is_request_url_path(path: str, host: bytes | None) -> None:
    try:
        expected = request_for(path, host).url.path
    except ValueError:  # no URL holds it (`/\n/[` with no Host: `//[` once the newline is dropped, an IPv6
        # host never closed): the path as it came
        expected = path
    assert url_path(request_for(path, host)) == expected


def test_a_path_no_url_holds_is_taken_as_it_came() -> None:
    assert url_path(request_for("/\n/[", None)) == "/\n/["
