"""`moneyrail listen` and `moneyrail trigger`: a developer's view of webhooks, through the API with a key."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from moneyrail.devkit.api import ApiConnection, ApiFailure
from moneyrail.devkit.listen import listen
from moneyrail.devkit.trigger import SCENARIOS, TriggerRefused, trigger

ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key", help="A secret key (sk_test_…); default $MONEYRAIL_API_KEY, else the running dev's."
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url", help="The API's address; default $MONEYRAIL_BASE_URL, else the running dev's."
    ),
]


def say(line: str) -> None:
    typer.echo(line)  # flushed: a line per event, as it happens


def listen_command(
    forward_to: Annotated[
        str, typer.Option("--forward-to", help="The local URL each delivery is posted to.")
    ],
    events: Annotated[
        list[str] | None, typer.Option("--events", "-e", help="Repeatable; default every event (`*`).")
    ] = None,
    host: Annotated[
        str, typer.Option(help="Where the receiver listens (the service must reach it).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The receiver's port; 0: a free one.")] = 0,
    public_url: Annotated[
        str | None, typer.Option(help="The receiver's address as the service reaches it, if not host:port.")
    ] = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Forward the service's webhooks to a local URL, with their original signed headers, until Ctrl-C.

    Registers a temporary webhook endpoint (removed on exit) whose signing secret it prints; prints one
    line per event: its type, its id and the local application's answer.
    """
    try:
        connection = ApiConnection.resolve(api_key, base_url)
        listen(
            connection,
            forward_to,
            events=events or ["*"],
            host=host,
            port=port,
            public_url=public_url,
            say=say,
        )
    except ApiFailure as failure:
        typer.echo(f"error: {failure}", err=True)
        raise typer.Exit(1) from failure


def trigger_command(
    event_type: Annotated[str, typer.Argument(help="The event to make happen; see the list above.")],
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="The objects made, as JSON.")] = False,
) -> None:
    """Make an event happen in a sandbox, creating what it needs through the API; prints what it made."""
    try:
        connection = ApiConnection.resolve(api_key, base_url)
        with connection.client(timeout=60) as client:
            walk = trigger(client, event_type, sandbox=connection.sandbox)
    except (ApiFailure, TriggerRefused) as failure:
        typer.echo(f"error: {failure}", err=True)
        raise typer.Exit(1) from failure
    if as_json:
        typer.echo(
            json.dumps({"event_type": event_type, "objects": walk.made, "notes": walk.notes}, indent=2)
        )
        return
    for note in walk.notes:
        typer.echo(f"  ({note})")
    for made in walk.made:
        status = f"  {made['status']}" if "status" in made else ""
        typer.echo(f"{made.get('object', '?'):<18} {made.get('id', '?')}{status}")
    typer.echo(f"triggered {event_type}")


TRIGGER_HELP = (
    "Make an event happen in a sandbox (creating what it needs) and print the objects it made.\n\n"
    "Supported events: " + ", ".join(SCENARIOS) + "."
)


def register(app: typer.Typer) -> None:
    app.command("listen")(listen_command)
    app.command("trigger", help=TRIGGER_HELP)(trigger_command)
