"""The sealing of secrets at rest (kit/crypto.py) and the key `moneyrail dev` keeps for itself."""

from __future__ import annotations

import stat

import pytest

from moneyrail.config import Settings
from moneyrail.devserver import dev_secret_keys
from moneyrail.kit import crypto


def test_a_sealed_value_opens_with_any_configured_key_and_reseals_under_the_first():
    old, new = crypto.generate_key(), crypto.generate_key()
    sealed_by_old = crypto.seal(b"whsec_abc", crypto.secret_box(old))
    assert b"whsec_abc" not in sealed_by_old and crypto.is_sealed(sealed_by_old)
    both = crypto.secret_box(f"{new},{old}")
    assert crypto.open_sealed(sealed_by_old, both) == b"whsec_abc"
    resealed = crypto.reseal(sealed_by_old, both)
    assert crypto.open_sealed(resealed, crypto.secret_box(new)) == b"whsec_abc"
    with pytest.raises(crypto.SecretKeysMissing, match="no longer holds"):
        crypto.open_sealed(resealed, crypto.secret_box(old))


def test_a_value_from_before_encryption_reads_as_it_is_and_is_sealed_by_reseal():
    box = crypto.secret_box(crypto.generate_key())
    assert crypto.open_text("whsec_legacy", box) == "whsec_legacy"
    sealed = crypto.reseal_text("whsec_legacy", box)
    assert sealed.startswith("fernet:") and crypto.open_text(sealed, box) == "whsec_legacy"


@pytest.mark.parametrize("keys", ["", " , ", "not-a-fernet-key"])
def test_missing_or_malformed_keys_are_a_clear_error(keys):
    with pytest.raises(crypto.SecretKeysMissing, match="MONEYRAIL_SECRET_KEYS"):
        crypto.require_secret_keys(keys)


def test_dev_makes_its_key_once_keeps_it_private_and_yields_to_the_environment(tmp_path):
    key_file = tmp_path / "data" / "secret-keys"
    first = dev_secret_keys(Settings(secret_keys=None), key_file)
    assert dev_secret_keys(Settings(secret_keys=None), key_file) == first
    crypto.require_secret_keys(first)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    configured = crypto.generate_key()
    assert dev_secret_keys(Settings(secret_keys=configured), key_file) == configured
