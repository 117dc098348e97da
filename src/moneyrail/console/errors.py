"""Why a console request is refused, as a page (never the API's JSON envelope): the app renders these
(console/pages.py). Raised, they roll back the request's unit of work: a refusal changes nothing."""

from __future__ import annotations


class ConsoleRefusal(Exception):
    def __init__(self, status: int, heading: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.heading = heading
        self.message = message


class NotSignedIn(ConsoleRefusal):
    """No session, or one that ended: a page is sent to the sign-in form, a form's post is refused."""

    def __init__(self) -> None:
        super().__init__(
            401, "Sign in first", "Your console session has ended or never began: sign in again."
        )


class FormRefused(ConsoleRefusal):
    """A post without the form's CSRF token (or with another session's): 403."""

    def __init__(self) -> None:
        super().__init__(
            403,
            "This form has expired",
            "The form was not sent from a console page of your current session. Open the page again and "
            "send it from there.",
        )


class RoleRefused(ConsoleRefusal):
    def __init__(self, role: str) -> None:
        super().__init__(
            403,
            "Your role cannot do this",
            f"Your role is `{role}`: it reads everything and changes nothing. Retrying and discarding need "
            "the `operator` role.",
        )
