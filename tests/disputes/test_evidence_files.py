"""Evidence files over HTTP with real multipart uploads: recognised by their bytes (not their name or
declared type), whole (truncated files refused), at most 8 MiB, stored on disk outside the rows."""

from __future__ import annotations

import hashlib

from tests.helpers import assert_error, count_rows
from tests.payments.support import paid

from .support import (
    DAY,
    advance,
    disputed,
    files_dir,
    jpeg_bytes,
    pdf_bytes,
    png_bytes,
    png_of_size,
    stored_files,
    upload,
)

MIB = 1024 * 1024


def test_pdf_jpeg_and_png_are_recognised_by_content_and_stored_on_disk(api, db, servers, money_stack):
    dispute = disputed(api, paid(api, 2000)["id"])
    for content, name, declared, kind in [
        (pdf_bytes(), "invoice.pdf", "application/pdf", "pdf"),
        (jpeg_bytes(), "parcel.jpg", "image/jpeg", "jpeg"),
        (png_bytes(), "chat.png", "image/png", "png"),
        # renamed: the bytes decide, not the name or the declared type
        (png_bytes(), "receipt.pdf", "application/pdf", "png"),
        (pdf_bytes(), "photo.jpeg", "image/jpeg", "pdf"),
    ]:
        response = upload(api, dispute["id"], content, name, declared)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["id"].startswith("file_") and body["object"] == "file"
        assert (body["type"], body["size"], body["filename"], body["dispute"]) == (
            kind,
            len(content),
            name,
            dispute["id"],
        )
        assert body["sha256"] == hashlib.sha256(content).hexdigest()
        on_disk = files_dir(servers) / api.keys.installation_id / body["id"]
        assert on_disk.read_bytes() == content  # the bytes live in the files directory
    row = db.execute(
        "SELECT storage_key, size FROM dispute_files WHERE dispute_id = %s ORDER BY created_at LIMIT 1",
        (dispute["id"],),
    ).fetchone()
    assert row[0].startswith(api.keys.installation_id + "/") and row[1] == len(pdf_bytes())
    assert count_rows(db, "dispute_files", api.keys.installation_id) == 5


def test_other_types_and_truncated_files_are_refused_and_nothing_is_kept(api, db, servers, money_stack):
    dispute = disputed(api, paid(api, 2000)["id"])
    for content, name, declared in [
        (b"MZ\x90\x00 an executable in disguise", "evidence.pdf", "application/pdf"),
        (b"GIF89a\x01\x00\x01\x00", "evidence.png", "image/png"),
        (b"%PDF-1.4 and nothing else", "short.pdf", "application/pdf"),
        (pdf_bytes()[:-40], "truncated.pdf", "application/pdf"),
        (png_bytes()[:-6], "truncated.png", "image/png"),
        (jpeg_bytes()[:-2], "truncated.jpg", "image/jpeg"),
        (png_bytes() + b"trailing", "padded.png", "image/png"),
        (b"", "empty.pdf", "application/pdf"),
    ]:
        assert_error(upload(api, dispute["id"], content, name, declared), 400, "file_invalid", "file")
    assert count_rows(db, "dispute_files", api.keys.installation_id) == 0
    assert stored_files(servers, api.keys.installation_id) == []  # no file, and no leftover part


def test_a_file_over_8_mib_is_413_and_exactly_8_mib_is_accepted(api, db, servers, money_stack):
    dispute = disputed(api, paid(api, 2000)["id"])
    over = upload(api, dispute["id"], png_of_size(8 * MIB + 1), "big.png", "image/png")
    assert_error(over, 413, "file_too_large", "file")
    assert count_rows(db, "dispute_files", api.keys.installation_id) == 0
    assert stored_files(servers, api.keys.installation_id) == []
    exact = upload(api, dispute["id"], png_of_size(8 * MIB), "exact.png", "image/png")
    assert exact.status_code == 200, exact.text
    assert exact.json()["size"] == 8 * MIB
    # with an Idempotency-Key the body is fingerprinted, so a body clearly too large is refused unread
    keyed = upload(
        api, dispute["id"], png_of_size(9 * MIB), "big.png", "image/png", **{"Idempotency-Key": "big-1"}
    )
    assert_error(keyed, 413, "file_too_large", "file")


def test_an_upload_with_an_idempotency_key_is_stored_once(api, db, money_stack):
    dispute = disputed(api, paid(api, 2000)["id"])
    first = upload(api, dispute["id"], png_bytes(), "a.png", "image/png", **{"Idempotency-Key": "ev-1"})
    assert first.status_code == 200, first.text
    again = upload(api, dispute["id"], png_bytes(), "a.png", "image/png", **{"Idempotency-Key": "ev-1"})
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["id"] == first.json()["id"]
    assert count_rows(db, "dispute_files", api.keys.installation_id) == 1


def test_uploads_must_be_multipart_with_one_file_field(api, money_stack):
    dispute = disputed(api, paid(api, 2000)["id"])
    as_json = api.post(f"/v1/disputes/{dispute['id']}/files", json={"file": "aGVsbG8="})
    assert_error(as_json, 400, "parameter_invalid", "file")
    no_file = api.post(f"/v1/disputes/{dispute['id']}/files", files={"purpose": (None, "dispute_evidence")})
    assert_error(no_file, 400, "parameter_missing", "file")
    odd_field = api.post(
        f"/v1/disputes/{dispute['id']}/files",
        files={"file": ("a.png", png_bytes(), "image/png"), "colour": (None, "blue")},
    )
    assert_error(odd_field, 400, "parameter_unknown", "colour")
    assert_error(
        upload(api, "dp_000000000000000000000000", png_bytes(), "a.png", "image/png"),
        404,
        "resource_missing",
        "dispute",
    )


def test_files_become_evidence_and_are_refused_after_submission_or_the_deadline(api, db, money_stack):
    dispute = disputed(api, paid(api, 2000)["id"])
    receipt = upload(api, dispute["id"], pdf_bytes(), "receipt.pdf", "application/pdf").json()
    unknown = {"evidence": {"receipt": "file_000000000000000000000000"}}
    refused = api.post(f"/v1/disputes/{dispute['id']}/evidence", json=unknown)
    assert_error(refused, 400, "resource_missing", "evidence[receipt]")
    body = {"evidence": {"receipt": receipt["id"], "uncategorized_text": "delivered"}, "submit": True}
    submitted = api.post(f"/v1/disputes/{dispute['id']}/evidence", json=body)
    assert submitted.status_code == 200, submitted.text
    assert submitted.json()["evidence"]["receipt"] == receipt["id"]
    after = upload(api, dispute["id"], png_bytes(), "late.png", "image/png")
    assert_error(after, 409, "resource_state_invalid")

    other = disputed(api, paid(api, 2000)["id"])
    advance(api, 7 * DAY + 60)
    late = upload(api, other["id"], png_bytes(), "late.png", "image/png")
    assert_error(late, 409, "resource_state_invalid")
    assert count_rows(db, "dispute_files", api.keys.installation_id) == 1
