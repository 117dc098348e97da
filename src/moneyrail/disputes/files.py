"""Evidence files: a multipart upload streamed to disk in chunks and recognised by its content.

The request body is never read whole: each chunk the server receives is parsed and the file part's
bytes go straight to a temporary file under the files directory (in a worker thread, so the event
loop never waits on the disk). What the uploader calls the file, and the Content-Type it declares, are
ignored: the bytes decide. A PDF, JPEG or PNG passes only if its structure is whole (a PNG's chunks and
their CRCs up to IEND, a JPEG's segments up to its end marker, a PDF's trailer pointing at its
cross-reference), so a truncated file is refused like a file of another kind.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import anyio.to_thread
from python_multipart.multipart import MultipartParser, parse_options_header

from moneyrail.errors import InvalidRequest, MoneyrailError, ParameterMissing, ParameterUnknown
from moneyrail.models import DisputeFile
from moneyrail.processor.interface import EvidenceFile

from .schemas import EVIDENCE_FILE_FIELDS

MAX_FILE_BYTES = 8 * 1024 * 1024  # spec part 8: up to 8 MiB
MULTIPART_OVERHEAD = 64 * 1024  # boundaries, part headers and the purpose field, generously
DRAIN_LIMIT = 4 * MAX_FILE_BYTES  # past this, an oversized upload is cut off rather than read to its end
READ_CHUNK = 64 * 1024
FIELD_LIMIT = 1024
FILE_FIELD = "file"
PURPOSE = "dispute_evidence"


class FileInvalid(InvalidRequest):
    """Not a whole PDF, JPEG or PNG, whatever its name or declared type."""

    code = "file_invalid"


class FileTooLarge(MoneyrailError):
    status = 413
    type = "invalid_request_error"
    code = "file_too_large"


def too_large() -> FileTooLarge:
    return FileTooLarge(f"An evidence file is at most {MAX_FILE_BYTES} bytes (8 MiB).", param="file")


@dataclass(frozen=True)
class StoredUpload:
    storage_key: str  # relative to the files directory
    type: str
    size: int
    sha256: str
    filename: str | None


@dataclass
class _Part:
    headers: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    filename: str | None = None
    value: bytearray = field(default_factory=bytearray)


class _Receiver:
    """python-multipart's callbacks: the file part to disk, small fields to memory, nothing else kept."""

    def __init__(self, boundary: bytes, temporary: Path) -> None:
        self.temporary = temporary
        self.sink: BinaryIO | None = None
        self.digest = hashlib.sha256()
        self.size = 0
        self.received = 0
        self.too_large = False
        self.file_seen = False
        self.filename: str | None = None
        self.fields: dict[str, str] = {}
        self.error: MoneyrailError | None = None
        self._part = _Part()
        self._header_field = bytearray()
        self._header_value = bytearray()
        self.parser = MultipartParser(
            boundary,
            callbacks={
                "on_part_begin": self._on_part_begin,
                "on_header_field": self._on_header_field,
                "on_header_value": self._on_header_value,
                "on_header_end": self._on_header_end,
                "on_headers_finished": self._on_headers_finished,
                "on_part_data": self._on_part_data,
                "on_part_end": self._on_part_end,
            },
        )

    # callbacks ------------------------------------------------------------------------------------
    def _on_part_begin(self) -> None:
        self._part = _Part()

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        name = self._header_field.decode("latin-1").lower()
        self._part.headers[name] = self._header_value.decode("latin-1")
        self._header_field.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        _, options = parse_options_header(self._part.headers.get("content-disposition", ""))
        raw_name = options.get(b"name")
        raw_filename = options.get(b"filename")
        self._part.name = raw_name.decode("utf-8", "replace") if raw_name is not None else None
        self._part.filename = raw_filename.decode("utf-8", "replace") if raw_filename is not None else None
        if self._part.name == FILE_FIELD:
            if self.file_seen:
                self.error = self.error or InvalidRequest("Send one file per upload.", param="file")
                return
            self.file_seen = True
            self.filename = (self._part.filename or "")[:255] or None
            self.sink = self.temporary.open("wb")
        elif self._part.name != "purpose":
            self.error = self.error or ParameterUnknown(
                f"Unknown form field: {self._part.name!r}. Send `file` (and optionally `purpose`).",
                param=self._part.name,
            )

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._part.name == FILE_FIELD and self.sink is not None:
            self.size += len(chunk)
            if self.size > MAX_FILE_BYTES:
                self.too_large = True
                self._discard_sink()
                return
            self.sink.write(chunk)
            self.digest.update(chunk)
        elif self._part.name == "purpose" and len(self._part.value) + len(chunk) <= FIELD_LIMIT:
            self._part.value += chunk

    def _on_part_end(self) -> None:
        if self._part.name == FILE_FIELD and self.sink is not None:
            self.sink.close()
            self.sink = None
        elif self._part.name == "purpose":
            self.fields["purpose"] = self._part.value.decode("utf-8", "replace")

    # -----------------------------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        """Runs in a worker thread: parsing and writing to disk."""
        self.received += len(chunk)
        if self.too_large:
            return  # draining what is left of an oversized upload: nothing kept
        self.parser.write(chunk)

    def finish(self) -> None:
        self.parser.finalize()
        if self.sink is not None:  # the body ended inside the file part
            self._discard_sink()
            self.error = self.error or FileInvalid("The upload ended before the file did.", param="file")

    def _discard_sink(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None
        self.temporary.unlink(missing_ok=True)


def boundary_of(content_type: str | None) -> bytes:
    kind, options = parse_options_header(content_type or "")
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise InvalidRequest(
            "Upload evidence as multipart/form-data with the file in the `file` field.", param="file"
        )
    return boundary


async def receive(
    stream: AsyncIterator[bytes], content_type: str | None, directory: Path, storage_key: str
) -> StoredUpload:
    """Stream the upload to `directory / storage_key`; the file is there only if it was accepted."""
    boundary = boundary_of(content_type)
    target = directory / storage_key
    await anyio.to_thread.run_sync(lambda: target.parent.mkdir(parents=True, exist_ok=True))
    temporary = target.with_name(f".{target.name}.part")
    receiver = _Receiver(boundary, temporary)
    try:
        async for chunk in stream:
            if chunk:
                await anyio.to_thread.run_sync(receiver.feed, chunk)
            if receiver.received > DRAIN_LIMIT:
                break
        if receiver.too_large:
            raise too_large()
        await anyio.to_thread.run_sync(receiver.finish)
        if receiver.error is not None:
            raise receiver.error
        if not receiver.file_seen:
            raise ParameterMissing("The upload has no `file` field.", param="file")
        purpose = receiver.fields.get("purpose", PURPOSE)
        if purpose != PURPOSE:
            raise InvalidRequest(f"purpose must be {PURPOSE!r}.", param="purpose")
        if receiver.size == 0:
            raise FileInvalid("The file is empty.", param="file")
        kind = await anyio.to_thread.run_sync(recognise, temporary)
        await anyio.to_thread.run_sync(os.replace, temporary, target)
    except BaseException:
        await anyio.to_thread.run_sync(receiver._discard_sink)
        raise
    return StoredUpload(storage_key, kind, receiver.size, receiver.digest.hexdigest(), receiver.filename)


# --- recognition by content ---------------------------------------------------------------------------
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SOI = b"\xff\xd8\xff"
PDF_HEADER = re.compile(rb"^%PDF-[12]\.\d")
STARTXREF = re.compile(rb"startxref\s+(\d+)\s+%%EOF\s*$")
PDF_XREF_TARGET = re.compile(rb"^(xref|\d+\s+\d+\s+obj)")


def recognise(path: Path) -> str:
    """`pdf`, `jpeg` or `png` when the file is whole; FileInvalid otherwise. Reads in chunks."""
    with path.open("rb") as handle:
        head = handle.read(16)
        size = os.fstat(handle.fileno()).st_size
        if head.startswith(PNG_SIGNATURE):
            _check_png(handle, size)
            return "png"
        if head.startswith(JPEG_SOI):
            _check_jpeg(handle, size)
            return "jpeg"
        if PDF_HEADER.match(head):
            _check_pdf(handle, size)
            return "pdf"
    raise FileInvalid("Evidence must be a PDF, JPEG or PNG file (recognised by its content).", param="file")


def _invalid(kind: str, why: str) -> FileInvalid:
    return FileInvalid(f"This {kind} is damaged or incomplete: {why}.", param="file")


def _read_exact(handle: Any, count: int, kind: str) -> bytes:
    data: bytes = handle.read(count)
    if len(data) != count:
        raise _invalid(kind, "it ends too early")
    return data


def _check_png(handle: Any, size: int) -> None:
    handle.seek(len(PNG_SIGNATURE))
    first = True
    while True:
        length, chunk_type = struct.unpack(">I4s", _read_exact(handle, 8, "PNG"))
        if first and (chunk_type != b"IHDR" or length != 13):
            raise _invalid("PNG", "its first chunk is not a header")
        first = False
        crc = zlib.crc32(chunk_type)
        remaining = length
        while remaining:
            piece = _read_exact(handle, min(remaining, READ_CHUNK), "PNG")
            crc = zlib.crc32(piece, crc)
            remaining -= len(piece)
        (stored_crc,) = struct.unpack(">I", _read_exact(handle, 4, "PNG"))
        if stored_crc != crc & 0xFFFFFFFF:
            raise _invalid("PNG", f"chunk {chunk_type!r} fails its checksum")
        if chunk_type == b"IEND":
            if handle.tell() != size:
                raise _invalid("PNG", "it has data after its end")
            return


SOF_MARKERS = frozenset({*range(0xC0, 0xD0)} - {0xC4, 0xC8, 0xCC})
STANDALONE_MARKERS = frozenset({0x01, *range(0xD0, 0xD8)})


def _check_jpeg(handle: Any, size: int) -> None:
    handle.seek(2)
    frame_seen = False
    while True:
        marker = _read_exact(handle, 2, "JPEG")
        if marker[0] != 0xFF:
            raise _invalid("JPEG", "a segment does not start with a marker")
        code = marker[1]
        if code == 0xFF:  # fill byte
            handle.seek(-1, os.SEEK_CUR)
            continue
        if code in STANDALONE_MARKERS:
            continue
        if code == 0xD9:
            raise _invalid("JPEG", "it ends before its image data")
        (length,) = struct.unpack(">H", _read_exact(handle, 2, "JPEG"))
        if length < 2 or handle.tell() + length - 2 > size:
            raise _invalid("JPEG", "a segment runs past the end of the file")
        handle.seek(length - 2, os.SEEK_CUR)
        frame_seen = frame_seen or code in SOF_MARKERS
        if code == 0xDA:  # start of scan: the entropy-coded data runs to the end-of-image marker
            break
    if not frame_seen:
        raise _invalid("JPEG", "it has no frame header")
    if size - handle.tell() < 2:
        raise _invalid("JPEG", "it has no image data")
    handle.seek(size - 2)
    if handle.read(2) != b"\xff\xd9":
        raise _invalid("JPEG", "it does not end with the end-of-image marker")


def _check_pdf(handle: Any, size: int) -> None:
    tail_length = min(size, 2048)
    handle.seek(size - tail_length)
    tail = handle.read(tail_length)
    found = STARTXREF.search(tail)
    if found is None:
        raise _invalid("PDF", "it has no trailer (startxref and %%EOF)")
    offset = int(found.group(1))
    if not 0 < offset < size - tail_length + found.start():
        raise _invalid("PDF", "its cross-reference offset points outside the file")
    handle.seek(offset)
    if PDF_XREF_TARGET.match(handle.read(32)) is None:
        raise _invalid("PDF", "its cross-reference offset points at no cross-reference")


FILE_CONTENT_TYPES = {"pdf": "application/pdf", "jpeg": "image/jpeg", "png": "image/png"}


async def for_processor(
    directory: Path, evidence: dict[str, str], uploaded: dict[str, DisputeFile]
) -> list[EvidenceFile]:
    """The files the evidence names, read back from the files directory (in a worker thread), as the
    processor takes them: Stripe uploads each to its evidence field; the simulator decides on the text
    alone."""
    found = []
    for field_name in EVIDENCE_FILE_FIELDS:
        stored = uploaded.get(evidence.get(field_name) or "")
        if stored is None:
            continue
        content = await anyio.to_thread.run_sync((directory / stored.storage_key).read_bytes)
        found.append(
            EvidenceFile(
                field_name,
                stored.filename or f"{stored.id}.{stored.type}",
                content,
                FILE_CONTENT_TYPES.get(stored.type, "application/octet-stream"),
            )
        )
    return found
