"""The `Processor` on Stripe, with the official `stripe` package (`StripeClient`, its `*_async` calls
on an httpx client), one `StripeProcessor` per Stripe key.

What each part of the Protocol is on Stripe:
- Cards: Stripe.js makes a token in the payer's browser (`CardToken`); `tokenize_card` saves it on a
  Stripe customer of its own (cards.py) and answers brand, last4, expiry, Stripe's fingerprint. Typed
  card numbers are refused (`NotSupported`, code `card_token_required`): they are the simulator's
  only (CONVENTIONS.md §6). `card_risk` answers `normal` and the issuing country: Stripe scores risk
  when it charges (Radar), not before.
- Authorizations (charges.py): a manual-capture payment intent created and confirmed in one call; 0 is
  the card check, a setup intent. Bank authentication: `requires_action` with the intent's
  `client_secret` for Stripe.js (and `action_url` when Stripe gives a redirect); `complete_authentication`
  reads how it went. `authorize_and_capture` (not in the Protocol) uses Stripe's automatic capture.
  Off-session charges are `authorize` then `capture` each, the batch's charges run together.
- Connect (connect.py): Custom accounts (moneyrail onboards on its own page), transfers
  (`source_transaction`: the charge of the captured payment they pass on), reversals, payouts of the
  platform or of a connected account (`Stripe-Account`), the transfers listing for reconciliation.
- Disputes (disputes.py): opened by Stripe and reported by webhook, so `open_dispute` is NotSupported
  (code `dispute_simulation_not_supported`) and `due_disputes` answers nothing; `dispute` reads one,
  `submit_dispute_evidence` uploads the files and submits, `accept_dispute` closes it,
  `dispute_outcome` is Stripe's status (won, lost).
- Cost: Stripe's fee, from the balance transaction of the payment's charge.
- `check_key` (keys.py): a key's mode by its prefix, then `GET /v1/balance`.

Idempotency: every write carries Stripe's `Idempotency-Key`, the operation's key as the simulator takes
it (derived keys for a call's second step: `<key>:confirm`, `<key>:file:<n>`; a token's own
`card:<token>`); the client's retries are off, the engine retries. Errors: errors.py.

Every id in the answers is Stripe's (`pi_`, `ch_`, `acct_`, `tr_`, `po_`, `dp_`, `cus_.../card_...`): the
caller keeps it in its own rows and never answers with it.
"""

from .connect import ConnectedAccount
from .connection import DEFAULT_API_BASE, DEFAULT_FILES_BASE
from .keys import StripeKeyRefused, check_key, key_mode
from .processor import StripeProcessor

__all__ = [
    "DEFAULT_API_BASE",
    "DEFAULT_FILES_BASE",
    "ConnectedAccount",
    "StripeKeyRefused",
    "StripeProcessor",
    "check_key",
    "key_mode",
]
