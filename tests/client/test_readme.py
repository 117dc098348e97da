"""The client's README example runs as written: the marketplace payment (a platform's sandbox key, the
session's web process and a worker) and the webhook handler, fed a delivery signed as the service signs."""

from __future__ import annotations

import base64
import re
import secrets
import subprocess
import sys

from tests.harness import ROOT, create_tenant

README = ROOT / "clients" / "python" / "README.md"
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)

FEED_THE_HANDLER = """
import json
from datetime import datetime, timezone
from standardwebhooks.webhooks import Webhook

event = client.events.list(type="payment_intent.succeeded").first_page().data[0]
body = json.dumps(event.model_dump(mode="json"))
signature = Webhook(SECRET).sign(event.id, datetime.now(timezone.utc), body)
headers = {"webhook-id": event.id, "webhook-timestamp": str(int(datetime.now().timestamp())),
           "webhook-signature": signature}
assert handle_webhook(body.encode(), headers) == 200
assert handle_webhook(body.encode(), {**headers, "webhook-signature": "v1,AAAA"}) == 400
print("handler ok")
"""


def test_the_readme_example_runs_against_the_service(servers, web, bridge, client_stack) -> None:
    marketplace, handler, *_async = PYTHON_BLOCK.findall(README.read_text())
    platform = create_tenant(bridge, kind="platform")
    script = marketplace.replace('base_url="http://127.0.0.1:8000"', f'base_url="{web.base_url}"')
    assert script != marketplace, "the example names dev's address"
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    result = subprocess.run(
        [sys.executable, "-c", script + handler + FEED_THE_HANDLER],
        env={
            **servers.environment(),
            "MONEYRAIL_API_KEY": platform.secret,
            "MONEYRAIL_WEBHOOK_SECRET": secret,
        },
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "succeeded" and lines[1].startswith("re_") and lines[1].endswith(" succeeded")
    assert sorted(line.split()[1] for line in lines[2:4]) == ["2000", "500"]
    assert lines[-2] == "paid: " + lines[-2].split()[1] + " 2500" and lines[-1] == "handler ok"
