"""The developer commands' view of the API: a key, an address, and calls that answer JSON or fail with
the service's own error message. They call the API as any client does, never the database."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from moneyrail.clihelpers import DevInstance
from moneyrail.config import API_VERSIONS, Settings

API_KEY_VARIABLE = "MONEYRAIL_API_KEY"
BASE_URL_VARIABLE = "MONEYRAIL_BASE_URL"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEV_KEY_FILE = "dev-key"  # where `moneyrail dev` keeps its sandbox key, in its data folder


class ApiFailure(Exception):
    """A call the service refused or did not answer: the message says which and why."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class ApiConnection:
    base_url: str
    api_key: str

    @classmethod
    def resolve(cls, api_key: str | None, base_url: str | None) -> ApiConnection:
        """`--api-key`/`--base-url`, else $MONEYRAIL_API_KEY/$MONEYRAIL_BASE_URL, else the running
        `moneyrail dev` of this folder (its address and the sandbox key it printed)."""
        dev = DevInstance.read(Settings().data_dir)
        key = api_key or os.environ.get(API_KEY_VARIABLE) or _dev_key(Settings().data_dir)
        if not key:
            raise ApiFailure(f"no API key: pass --api-key or set {API_KEY_VARIABLE}")
        url = base_url or os.environ.get(BASE_URL_VARIABLE) or (dev.base_url if dev else DEFAULT_BASE_URL)
        return cls(base_url=url.rstrip("/"), api_key=key)

    @property
    def sandbox(self) -> bool:
        return self.api_key.startswith("sk_test_")

    def client(self, timeout: float = 30) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            headers={
                "Authorization": f"Bearer {self.api_key}",
                "Service-Version": API_VERSIONS["payments"][0],
            },
            timeout=timeout,
        )


def _dev_key(data_dir: Path) -> str | None:
    try:
        return (data_dir / DEV_KEY_FILE).read_text().strip() or None
    except OSError:
        return None


def call(
    client: httpx.Client,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    key: str | None = None,
) -> Any:
    """The JSON answer of one call (a POST or DELETE under a new Idempotency-Key); ApiFailure else."""
    headers = {"Idempotency-Key": f"devkit-{uuid.uuid4()}"} if method in {"POST", "DELETE"} else {}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    try:
        response = client.request(method, path, json=body, headers=headers)
    except httpx.HTTPError as error:
        raise ApiFailure(
            f"{method} {client.base_url}{path}: no answer ({type(error).__name__}: {error})"
        ) from error
    if response.is_success:
        return response.json() if response.content else None
    try:
        detail = response.json()["error"]
        message, code = f"{detail['code']}: {detail['message']}", detail.get("code")
    except (ValueError, KeyError, TypeError):
        message, code = response.text[:200], None
    raise ApiFailure(
        f"{method} {path} answered {response.status_code} {message}", status=response.status_code, code=code
    )
