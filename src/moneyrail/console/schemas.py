"""What the console's forms and filters carry, checked: a value the page does not offer is refused with a
page that says which, never passed on to a query."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from moneyrail.console.errors import ConsoleRefusal
from moneyrail.engine.overview import OperationFilter
from moneyrail.kit.pagination import CursorInvalid, Position, decode_cursor
from moneyrail.models.operation import OPERATION_STATUSES

ENVIRONMENTS = {"": "any environment", "sandbox": "sandbox", "live": "live"}
# the age filter: its label, and the bound it sets on the acceptance moment (None: newer than, else older)
AGES: dict[str, tuple[str, timedelta | None, bool]] = {
    "": ("any age", None, False),
    "lt1h": ("less than an hour old", timedelta(hours=1), False),
    "lt1d": ("less than a day old", timedelta(days=1), False),
    "lt7d": ("less than a week old", timedelta(days=7), False),
    "gt1h": ("more than an hour old", timedelta(hours=1), True),
    "gt1d": ("more than a day old", timedelta(days=1), True),
    "gt7d": ("more than a week old", timedelta(days=7), True),
}
ACTIONS = {"retry": "Retry", "discard": "Discard"}
MAX_TEXT = 200
MAX_REASON = 1000


def _refuse(message: str) -> ConsoleRefusal:
    return ConsoleRefusal(400, "This filter cannot be used", message)


def _text(value: str | None, name: str) -> str:
    cleaned = (value or "").strip()
    if len(cleaned) > MAX_TEXT:
        raise _refuse(f"The {name} is at most {MAX_TEXT} characters.")
    return cleaned


@dataclass(frozen=True)
class OperationsQuery:
    """The operations page's filter, as its form sends it (every field optional)."""

    status: str = ""
    type: str = ""
    installation: str = ""
    environment: str = ""
    error: str = ""
    age: str = ""

    @classmethod
    def parse(
        cls,
        *,
        status: str | None,
        type: str | None,
        installation: str | None,
        environment: str | None,
        error: str | None,
        age: str | None,
    ) -> OperationsQuery:
        query = cls(
            status=_text(status, "status"),
            type=_text(type, "type"),
            installation=_text(installation, "installation"),
            environment=_text(environment, "environment"),
            error=_text(error, "error text"),
            age=_text(age, "age"),
        )
        if query.status and query.status not in OPERATION_STATUSES:
            raise _refuse(f"Unknown status {query.status!r}: one of {', '.join(OPERATION_STATUSES)}.")
        if query.environment not in ENVIRONMENTS:
            raise _refuse("The environment is sandbox or live.")
        if query.age not in AGES:
            raise _refuse(f"Unknown age {query.age!r}.")
        return query

    def to_filter(self, now: datetime) -> OperationFilter:
        _, span, older = AGES[self.age]
        bound = now - span if span is not None else None
        return OperationFilter(
            status=self.status or None,
            operation_type=self.type or None,
            installation_id=self.installation or None,
            livemode={"": None, "sandbox": False, "live": True}[self.environment],
            error_text=self.error or None,
            accepted_after=bound if not older else None,
            accepted_before=bound if older else None,
        )

    def fields(self) -> dict[str, str]:
        """The filter's non-empty fields (a link's query, hidden fields of a form)."""
        return {name: value for name, value in asdict(self).items() if value}

    def query_string(self, **extra: str) -> str:
        return urlencode({**self.fields(), **extra})

    @property
    def dead_letters(self) -> OperationsQuery:
        return OperationsQuery(**{**asdict(self), "status": "dead_letter"})


def page_position(cursor: str | None) -> Position | None:
    if not cursor:
        return None
    try:
        return decode_cursor(cursor)
    except CursorInvalid:
        raise _refuse("This page's cursor is not one the console made: start from the first page.") from None


def action_of(action: str | None) -> str:
    if action not in ACTIONS:
        raise ConsoleRefusal(400, "Unknown action", "The action is retry or discard.")
    return action


def reason_of(reason: str | None) -> str:
    cleaned = (reason or "").strip()
    if not cleaned:
        raise ConsoleRefusal(
            400, "A reason is required", "Say why (it is kept in the audit log), then send the form again."
        )
    if len(cleaned) > MAX_REASON:
        raise ConsoleRefusal(400, "The reason is too long", f"A reason is at most {MAX_REASON} characters.")
    return cleaned
