"""Every module that registers something with the engine when imported: retry policies, outcome
listeners, periodic sweeps and sandbox due work.

A process that runs, schedules or decides operations (web, worker, scheduler, the operator CLI)
imports this once, so none of them misses a registration: an operator discarding a dead-lettered
refund must cancel that refund whichever process does it.
"""

from __future__ import annotations

import moneyrail.api.idempotency
import moneyrail.billing.service
import moneyrail.billing.service.changes
import moneyrail.checkout.service
import moneyrail.commerce.service
import moneyrail.console.accounts
import moneyrail.deliveries.service
import moneyrail.disputes.service
import moneyrail.events.service
import moneyrail.invoices.service
import moneyrail.ledger.service
import moneyrail.payment_methods.service
import moneyrail.payments.orphans
import moneyrail.payments.refunds
import moneyrail.payments.reports
import moneyrail.payouts.service
import moneyrail.processor_events.service
import moneyrail.reconciliation.service
import moneyrail.risk.service
import moneyrail.transfers.commit
import moneyrail.transfers.reversals
import moneyrail.transfers.service  # noqa: F401 - cost reports (sweep and due work); commits, settlement, refunds
