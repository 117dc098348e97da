"""The one place where text that cannot be stored is refused, before any route sees it.

PostgreSQL cannot keep U+0000 in `text` or `jsonb`, and a lone surrogate (U+D800 to U+DFFF) has no
UTF-8 form, so either one reaching the database used to fail the request with a 500. This pure ASGI
guard reads every request's path, query string, headers and body (JSON at any depth, keys and values;
form posts of the hosted pages) and answers 400 `parameter_invalid` naming the field instead. It also
caps the body size (413), since it has to hold the body to look at it. It runs inside the one request
middleware (api/middleware.py), so its refusals carry the request's ids.
"""

from __future__ import annotations

import email.message
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl

from fastapi.routing import iter_route_contexts
from starlette.requests import Request
from starlette.types import Message, Receive, Scope

from moneyrail.errors import MoneyrailError, ParameterInvalid, RequestTooLarge

# U+0000 (PostgreSQL refuses it in text) and the surrogate block (no UTF-8 encoding exists)
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MAX_BODY_BYTES = 1024 * 1024
JSON_MAX_DEPTH = 64


class BodyUnreadable(Exception):
    """The body is not what its content type says (bad UTF-8, nested beyond reason)."""


def printable(text: str) -> str:
    """A field name safe to put in an error body and a log line: bad characters spelt `\\uXXXX`."""
    return UNSTORABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _is_unstorable(text: str) -> bool:
    return UNSTORABLE.search(text) is not None


def _field(path: list[str]) -> str:
    """["metadata", "k"] -> "metadata[k]", as api/errors.py names nested fields."""
    return path[0] + "".join(f"[{part}]" for part in path[1:])


def _json_strings(value: Any, path: list[str], depth: int = 0) -> Iterator[tuple[list[str], str]]:
    """Every (field path, string) in a JSON value: keys and values, at any depth."""
    if depth > JSON_MAX_DEPTH:
        raise BodyUnreadable(f"The request body is nested more than {JSON_MAX_DEPTH} levels deep.")
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield [*path, key], key
            yield from _json_strings(item, [*path, key], depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_strings(item, [*path, str(index)], depth + 1)


@lru_cache(maxsize=64)  # a handful of distinct content types, parsed on every request otherwise
def _content_kind(content_type: str | None) -> str | None:
    """'json' or 'form' as FastAPI would parse the body, else None."""
    if not content_type:
        return None
    message = email.message.Message()
    message["content-type"] = content_type
    if message.get_content_maintype() == "application":
        subtype = message.get_content_subtype()
        if subtype == "json" or subtype.endswith("+json"):
            return "json"
        if subtype == "x-www-form-urlencoded":
            return "form"
    if message.get_content_type() == "multipart/form-data":
        return "form"
    return None


@lru_cache(maxsize=64)
def _is_multipart(content_type: str | None) -> bool:
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    return message.get_content_type() == "multipart/form-data"


def _path_parameter(scope: Scope) -> str | None:
    """The name of the path parameter holding the bad text, found the way the router would."""
    app = scope.get("app")
    for context in iter_route_contexts(getattr(app, "routes", [])):
        regex = getattr(context, "path_regex", None)
        match = regex.match(scope["path"]) if regex is not None else None
        if match is not None:
            for name, value in match.groupdict().items():
                if _is_unstorable(value):
                    return str(name)
    return None


def refusal_in_address(scope: Scope) -> MoneyrailError | None:
    if _is_unstorable(scope["path"]):
        name = _path_parameter(scope)
        return ParameterInvalid(
            f"Invalid {name or 'path'}: it contains a NUL character or a lone surrogate.", param=name
        )
    query = scope.get("query_string", b"").decode("latin-1")
    for key, value in parse_qsl(query, keep_blank_values=True, errors="replace") if query else ():
        if _is_unstorable(key) or _is_unstorable(value):
            name = printable(key)
            return ParameterInvalid(
                f"Invalid {name}: it contains a NUL character or a lone surrogate.", param=name
            )
    for raw_name, raw_value in scope["headers"]:
        if b"\x00" in raw_value:
            name = raw_name.decode("latin-1")
            return ParameterInvalid(f"Invalid {name} header: it contains a NUL character.", param=name)
    return None


def _may_hold_unstorable_json(body: bytes) -> bool:
    """False when no JSON string in the body can hold a NUL or a surrogate, nor nest too deep.

    In ASCII JSON both can only be spelt as a `\\u` escape (a raw NUL is no valid JSON either), and the
    nesting is at most the number of brackets: most bodies are settled here without parsing them twice.
    """
    if not body.isascii() or b"\\u" in body or b"\x00" in body:
        return True
    return body.count(b"{") + body.count(b"[") > JSON_MAX_DEPTH


def _json_refusal(body: bytes) -> MoneyrailError | None:
    if not _may_hold_unstorable_json(body):
        return None
    try:
        document = json.loads(body)
        found = next(
            ((path, text) for path, text in _json_strings(document, []) if _is_unstorable(text)), None
        )
    except json.JSONDecodeError:
        return None  # FastAPI answers it: 400 parameter_invalid, "not valid JSON"
    except BodyUnreadable as exc:
        return ParameterInvalid(str(exc))
    except (ValueError, RecursionError):  # not UTF-8, or deeper than the parser can go
        return ParameterInvalid("The request body is not valid JSON.")
    if found is None:
        return None
    name = printable(_field(found[0])) if found[0] else None
    return ParameterInvalid(
        f"Invalid {name or 'request body'}: text may not contain NUL characters or lone surrogates.",
        param=name,
    )


async def _form_refusal(scope: Scope, body: bytes) -> MoneyrailError | None:
    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        async with Request(scope, replay).form() as form:
            for key, value in form.multi_items():
                text = value if isinstance(value, str) else (value.filename or "")
                if _is_unstorable(key) or _is_unstorable(text):
                    name = printable(key)
                    return ParameterInvalid(
                        f"Invalid {name}: it contains a NUL character or a lone surrogate.", param=name
                    )
    except Exception:  # a malformed form: the route's own parsing answers it
        return None
    return None


async def guard(
    scope: Scope, receive: Receive, max_body_bytes: int = MAX_BODY_BYTES
) -> tuple[MoneyrailError | None, Receive]:
    """The request's refusal (or None), and the `receive` the app reads the body from afterwards."""
    refusal = refusal_in_address(scope)
    if refusal is not None:
        return refusal, receive
    content_type: str | None = None
    declared = b""
    for name, value in scope["headers"]:
        if name == b"content-type":
            content_type = value.decode("latin-1") or None
        elif name == b"content-length":
            declared = value
    if _is_multipart(content_type):
        # file uploads stream through untouched: the route that takes them reads them in chunks,
        # checks their content and enforces its own size limit (never held whole in memory here)
        return None, receive
    if declared.isdigit() and int(declared) > max_body_bytes:
        return _too_large(max_body_bytes), receive
    body, complete = await _read_body(receive, max_body_bytes)
    if not complete:
        return _too_large(max_body_bytes), receive
    kind = _content_kind(content_type) if body else None
    if kind == "json":
        refusal = _json_refusal(body)
    elif kind == "form":
        refusal = await _form_refusal(scope, body)
    if refusal is not None:
        return refusal, receive

    replayed = False

    async def receive_again() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect, as the server would

    return None, receive_again


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The whole body, or (partial, False) once it passes the size cap."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), True  # the client went away; the app sees an empty body
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", False
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True


def _too_large(limit: int) -> MoneyrailError:
    return RequestTooLarge(f"The request body is larger than {limit} bytes.")
