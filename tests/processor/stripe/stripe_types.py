"""What the `stripe` package's own types allow a request to carry, for the Stripe double.

A request's form (or query) is read back into nested values (`metadata[reference]=x`, `expand[0]=y`)
and checked against the package's params TypedDict of its route: an unknown parameter, a missing
required one or a value of the wrong shape is refused as Stripe refuses it (400 invalid_request_error),
so an adapter call the package's types would not allow cannot pass in a test.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, ForwardRef, Literal, get_args, get_origin

import stripe
import typing_extensions

WRAPPERS = {typing.NotRequired, typing.Required, typing_extensions.NotRequired, typing_extensions.Required}
UNIONS = {typing.Union, types.UnionType}
# what every params type inherits from RequestOptions: options the client takes, never sent
OPTION_KEYS = frozenset(stripe.RequestOptions.__annotations__)
KEY = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")
PART = re.compile(r"\[([^\[\]]*)\]")
INTEGER = re.compile(r"-?\d+")


class RefusedParameter(Exception):
    """`code` and `param` as Stripe names them in its 400 answer."""

    def __init__(self, code: str, param: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.param = param
        self.message = message


def unflatten(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Form or query pairs as the nested values the client encoded (`a[b][0]=c`)."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        match = KEY.match(key)
        if match is None:
            raise RefusedParameter("parameter_invalid", key, f"Invalid parameter name: {key}")
        parts = [match.group(1), *PART.findall(match.group(2))]
        node = root
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise RefusedParameter("parameter_invalid", key, f"Invalid hash: {key}")
            node = child
        node[parts[-1]] = value
    return listed(root)


def listed(node: Any) -> Any:
    """Hashes whose keys are all indexes (`expand[0]`, `expand[1]`) as the lists they encode."""
    if not isinstance(node, dict):
        return node
    values = {key: listed(value) for key, value in node.items()}
    if values and all(key.isdigit() for key in values):
        return [values[key] for key in sorted(values, key=int)]
    return values


def check_params(params: Mapping[str, Any], params_type: type) -> None:
    """Raise RefusedParameter for what `params_type` (a params TypedDict of `stripe.params`) refuses."""
    check_fields(params, params_type, "", top=True)


def check_fields(value: Mapping[str, Any], typed: type, path: str, *, top: bool = False) -> None:
    hints = typed.__annotations__
    required: frozenset[str] = getattr(typed, "__required_keys__", frozenset())
    allowed = {name for name in hints if not (top and name in OPTION_KEYS)}
    for name in value:
        if name not in allowed:
            full = f"{path}[{name}]" if path else name
            raise RefusedParameter("parameter_unknown", full, f"Received unknown parameter: {full}")
    for name in required:
        if name in allowed and name not in value:
            full = f"{path}[{name}]" if path else name
            raise RefusedParameter("parameter_missing", full, f"Missing required param: {full}.")
    module = vars(sys.modules[typed.__module__])
    for name, given in value.items():
        full = f"{path}[{name}]" if path else name
        if not fits(given, hints[name], module, full):
            raise RefusedParameter("parameter_invalid", full, f"Invalid value for {full}: {given!r}")


def fits(value: Any, annotation: Any, module: Mapping[str, Any], path: str) -> bool:
    """Whether a form value (strings, and lists and hashes of them) is one the annotation allows."""
    if isinstance(annotation, str):
        annotation = eval(annotation, dict(module))  # the package's own annotation text, in its module
    if isinstance(annotation, ForwardRef):
        annotation = eval(annotation.__forward_arg__, dict(module))
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin in WRAPPERS:
        return fits(value, arguments[0], module, path)
    if origin in UNIONS:
        return any(fits(value, arm, module, path) for arm in arguments)
    if origin is Literal:
        return any(
            value == (str(choice).lower() if isinstance(choice, bool) else str(choice))
            for choice in arguments
        )
    if annotation is Any or annotation is object:
        return True
    if annotation is str:
        return isinstance(value, str)
    if annotation is bool:
        return value in ("true", "false")
    if annotation is int:
        return isinstance(value, str) and INTEGER.fullmatch(value) is not None
    if annotation is float:
        try:
            float(value)
        except (TypeError, ValueError):
            return False
        return True
    if origin in (list, typing.List):  # noqa: UP006 - the package's annotations name typing.List
        return isinstance(value, list) and all(fits(each, arguments[0], module, path) for each in value)
    if origin in (dict, typing.Dict, Mapping):  # noqa: UP006
        return isinstance(value, dict) and all(
            fits(each, arguments[1], module, path) for each in value.values()
        )
    if typing_extensions.is_typeddict(annotation):
        if not isinstance(value, dict):
            return False
        check_fields(value, annotation, path)
        return True
    if isinstance(origin, type) and issubclass(origin, stripe.StripeObject):  # UntypedStripeObject[value]
        return isinstance(value, dict) and all(
            fits(each, arguments[0], module, path) for each in value.values()
        )
    raise TypeError(f"the double does not know how to check {annotation!r}")
