"""What dispute tests share: opening disputes, waiting for their money, and evidence files built byte
by byte (real PNG chunks with their CRCs, JPEG segments, a PDF whose trailer points at its xref)."""

from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path
from typing import Any

import httpx

from tests.harness import Servers

DAY = 24 * 3600
HOUR = 3600
FEE = 1500  # the sandbox network's dispute fee


def open_dispute(api: httpx.Client, payment_id: str, **fields: Any) -> httpx.Response:
    return api.post("/v1/test-helpers/disputes", json={"payment_intent": payment_id, **fields})


def advance(api: httpx.Client, seconds: int) -> dict[str, Any]:
    response = api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def withdrawn(api: httpx.Client, dispute_id: str, timeout: float = 30) -> dict[str, Any]:
    """The dispute once its withdrawal operation has run in the worker."""
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = api.get(f"/v1/disputes/{dispute_id}").json()
        if body["amount_withdrawn"]:
            return body
        time.sleep(0.1)
    raise AssertionError(f"the dispute's money was never withdrawn: {body}")


def disputed(api: httpx.Client, payment_id: str, **fields: Any) -> dict[str, Any]:
    response = open_dispute(api, payment_id, **fields)
    assert response.status_code == 200, response.text
    return withdrawn(api, response.json()["id"])


def upload(
    api: httpx.Client, dispute_id: str, content: bytes, filename: str, content_type: str, **headers: str
) -> httpx.Response:
    """A real multipart/form-data upload, as a browser or curl -F sends it."""
    return api.post(
        f"/v1/disputes/{dispute_id}/files",
        files={"file": (filename, content, content_type)},
        data={"purpose": "dispute_evidence"},
        headers=headers,
    )


def png_bytes(padding: int = 0) -> bytes:
    """A 1x1 PNG; `padding` bytes of a private ancillary chunk make it as large as a test needs."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    extra = chunk(b"prVt", b"\x00" * padding) if padding else b""
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + extra + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def png_of_size(size: int) -> bytes:
    base = len(png_bytes())
    return png_bytes(size - base - 12)  # a chunk's length, type and CRC take 12 bytes


def jpeg_bytes() -> bytes:
    def segment(marker: int, data: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(data) + 2) + data

    return (
        b"\xff\xd8"
        + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + segment(0xDB, b"\x00" + bytes(range(1, 65)))
        + segment(0xC0, b"\x08\x00\x01\x00\x01\x01\x01\x11\x00")
        + segment(0xC4, b"\x00" + b"\x01" + b"\x00" * 15 + b"\x00")
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + b"\x7f\x80\x12\x34"
        + b"\xff\xd9"
    )


def pdf_bytes() -> bytes:
    objects = [
        b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n",
        b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n",
        b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>\nendobj\n",
    ]
    body = b"%PDF-1.4\n"
    offsets = []
    for item in objects:
        offsets.append(len(body))
        body += item
    xref_at = len(body)
    body += b"xref\n0 4\n0000000000 65535 f \n"
    body += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    body += b"trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref_at
    return body


def files_dir(servers: Servers) -> Path:
    """The web process's default files directory: its data folder's, a temporary one of the session."""
    return servers.data_dir / "files"


def stored_files(servers: Servers, installation_id: str) -> list[Path]:
    folder = files_dir(servers) / installation_id
    return sorted(folder.iterdir()) if folder.exists() else []
