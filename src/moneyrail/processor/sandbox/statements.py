"""The sandbox processor's SQL: its books are tables of its own (sandbox_*), read and written
straight on the driver."""

STORED_BATCH_OR_FAULT = """
    WITH stored AS (
        SELECT operation_type, request, response, succeeded FROM sandbox_processor_calls
        WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3
    ), fault AS (
        UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
        WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND remaining > 0
          AND NOT EXISTS (SELECT 1 FROM stored)
        RETURNING mode
    )
    SELECT s.operation_type, s.request, s.response, s.succeeded, (SELECT mode FROM fault) AS fault_mode,
           (SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'key', c.idempotency_key, 'operation_type', c.operation_type, 'request', c.request,
                       'response', c.response, 'succeeded', c.succeeded)), '[]'::jsonb)
            FROM sandbox_processor_calls c
            WHERE c.installation_id = $1 AND c.livemode = $2 AND c.idempotency_key = ANY($4::text[])
              AND NOT EXISTS (SELECT 1 FROM stored)) AS answered
    FROM (SELECT 1) AS one LEFT JOIN stored AS s ON true
"""
# the batch's record is written only when every one of its new transfers was: true when it was
RECORD_BATCH = """
    WITH transfers AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, key, 'transfer', request::jsonb, response::jsonb, succeeded
        FROM unnest($6::text[], $7::text[], $8::text[], $9::bool[]) AS t(key, request, response, succeeded)
        ON CONFLICT DO NOTHING
        RETURNING 1
    ), batch AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, $3, 'transfer_batch', $4::jsonb, $5::jsonb, true
        WHERE (SELECT count(*) FROM transfers) = cardinality($6::text[])
        ON CONFLICT DO NOTHING
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM batch)
"""
STORED_CALL_OR_FAULT = """
    WITH stored AS (
        SELECT operation_type, request, response, succeeded FROM sandbox_processor_calls
        WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3
        FOR UPDATE
    ), fault AS (
        UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
        WHERE installation_id = $1 AND livemode = $2 AND operation_type = $4 AND remaining > 0
          AND NOT EXISTS (SELECT 1 FROM stored)
        RETURNING mode
    )
    SELECT s.operation_type, s.request, s.response, s.succeeded, (SELECT mode FROM fault) AS fault_mode
    FROM (SELECT 1) AS one LEFT JOIN stored AS s ON true
"""
# A tokenizing: the fault taken, the tenant's clock, and the card ($3, NULL when its checks refused it)
# saved when no fault was armed and, on the tenant's clock ($11, now, plus the offset), before $10 (when
# the card expires; NULL: never, within dates).
_TOKENIZE_PARTS = """
    fault AS (
        UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
        WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'tokenize' AND remaining > 0
        RETURNING mode
    ), clock AS (
        SELECT offset_seconds, $11::timestamptz + make_interval(secs => offset_seconds) AS tenant_now
        FROM (SELECT COALESCE((SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = $1), 0)
                  AS offset_seconds) AS offset_of_tenant
    ), saved AS (
        INSERT INTO sandbox_cards
            (token, installation_id, livemode, behaviour, brand, last4, exp_month, exp_year, fingerprint)
        SELECT $3, $1, $2, $4, $5, $6, $7, $8, $9 FROM clock
        WHERE $3::varchar IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fault)
          AND ($10::timestamptz IS NULL OR clock.tenant_now < $10)
        RETURNING 1
    )"""
_TOKENIZED = "(SELECT mode FROM fault) AS mode, clock.offset_seconds, EXISTS (SELECT 1 FROM saved) AS saved"
# S608 below: only these fixed parts and parameter numbers are formatted into the SQL
TOKENIZE = f"""
    WITH {_TOKENIZE_PARTS}
    SELECT {_TOKENIZED}
    FROM clock
"""  # noqa: S608


def _usual_authorization(
    outcome: str,
    *,
    key: str,
    authorization: str,
    amount: str,
    currency: str,
    card: str,
    reference: str,
    request: str,
) -> str:
    """The CTEs `usual`, `recorded` and `held` of an authorization answered at once, the parameters'
    numbers given: `outcome`, the SELECT of the card's [status, decline code] (no row: not the usual
    case), to which the key's and the fault's conditions are added. The call is recorded first; the
    authorization is written only with it, so a concurrent call with the key (its record first) leaves
    nothing written."""
    return f"""
    usual AS (
        {outcome}
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_calls
                          WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = {key})
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_faults
                          WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'authorize'
                            AND remaining > 0)
    ), recorded AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, {key}, 'authorize', {request}::jsonb,
               jsonb_build_object('id', {authorization}::text, 'status', outcome -> 0,
                                  'amount', {amount}::bigint, 'currency', {currency}::text,
                                  'decline_code', outcome -> 1),
               true
        FROM usual
        ON CONFLICT DO NOTHING
        RETURNING response
    ), held AS (
        INSERT INTO sandbox_authorizations
            (id, installation_id, livemode, card_token, amount, currency, status, decline_code, reference)
        SELECT {authorization}, $1, $2, {card}, {amount}, {currency},
               response ->> 'status', response ->> 'decline_code', {reference}
        FROM recorded
    )"""  # noqa: S608


# `TOKENIZE`, and where the card is saved `AUTHORIZE_AT_ONCE`'s usual authorization of it ($12 the key,
# $13 the authorization's id, $14 the amount, $15 the currency, $16 the reference, $17 behaviour ->
# [status, decline code], $18 the request): the card's behaviour is $4 (its row, written by `saved`, is
# not visible to the other parts of the statement; the authorization's reference to it is checked at its
# end). `response` NULL with the card saved: not the usual authorization, nothing of it written.
_AUTHORIZE_SAVED = _usual_authorization(
    "SELECT $17::jsonb -> $4::text AS outcome WHERE EXISTS (SELECT 1 FROM saved)",
    key="$12",
    authorization="$13",
    amount="$14",
    currency="$15",
    card="$3",
    reference="$16",
    request="$18",
)
TOKENIZE_AND_AUTHORIZE = f"""
    WITH {_TOKENIZE_PARTS}, {_AUTHORIZE_SAVED}
    SELECT {_TOKENIZED}, (SELECT response FROM recorded) AS response
    FROM clock
"""  # noqa: S608
TAKE_FAULT = """
    UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = $3 AND remaining > 0
    RETURNING mode
"""
# A batch of charges: keys already asked, faults waiting, the cards' behaviours, the tenant's clock.
BATCH_STATE = """
    SELECT
        EXISTS (SELECT 1 FROM sandbox_processor_calls
                WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = ANY($3::text[])) AS stored,
        EXISTS (SELECT 1 FROM sandbox_processor_faults
                WHERE installation_id = $1 AND livemode = $2 AND remaining > 0
                  AND operation_type IN ('authorize', 'capture')) AS faulted,
        (SELECT jsonb_object_agg(token, behaviour) FROM sandbox_cards
         WHERE token = ANY($4::text[]) AND installation_id = $1 AND livemode = $2) AS behaviours,
        COALESCE((SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = $1), 0) AS offset_seconds
"""
# as `INSERT_AUTHORIZATION` then, for a captured one, `CAPTURE`
INSERT_AUTHORIZATIONS = """
    INSERT INTO sandbox_authorizations
        (id, installation_id, livemode, card_token, amount, currency, status, decline_code, reference,
         amount_captured, captured_at)
    SELECT id, $1, $2, card_token, amount, currency, status, decline_code, reference, amount_captured,
           captured_at
    FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[],
                $10::bigint[], $11::timestamptz[])
         AS a(id, card_token, amount, currency, status, decline_code, reference, amount_captured, captured_at)
"""
# as `RECORD_CALL` for each (all succeeded: a refusal takes the one-by-one path); how many were new
RECORD_CALLS = """
    WITH recorded AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, idempotency_key, operation_type, request::jsonb, response::jsonb, true
        FROM unnest($3::text[], $4::text[], $5::text[], $6::text[])
             AS c(idempotency_key, operation_type, request, response)
        ON CONFLICT DO NOTHING
        RETURNING 1
    )
    SELECT count(*) FROM recorded
"""
RECORD_CALL = """
    INSERT INTO sandbox_processor_calls
        (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT DO NOTHING
    RETURNING idempotency_key
"""
LOCK_TRANSFER = """
    SELECT (request->>'amount')::bigint FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND succeeded
      AND response->>'id' = $3
    FOR UPDATE
"""
REVERSED = """
    SELECT coalesce(sum((request->>'amount')::bigint), 0) FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer_reversal' AND succeeded
      AND request->>'transfer_id' = $3
"""
TRANSFER_RECORDS = """
    SELECT t.response->>'id' AS id, (t.response->>'amount')::bigint AS amount,
           t.response->>'currency' AS currency, t.response->>'destination' AS destination,
           t.response->>'status' AS status,
           coalesce((SELECT sum((r.request->>'amount')::bigint) FROM sandbox_processor_calls r
                     WHERE r.installation_id = t.installation_id AND r.livemode = t.livemode
                       AND r.operation_type = 'transfer_reversal' AND r.succeeded
                       AND r.request->>'transfer_id' = t.response->>'id'), 0) AS amount_reversed
    FROM sandbox_processor_calls t
    WHERE t.installation_id = $1 AND t.livemode = $2 AND t.operation_type = 'transfer' AND t.succeeded
    ORDER BY t.created_at
"""
LOSE_TRANSFER = """
    DELETE FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND response->>'id' = $3
    RETURNING idempotency_key
"""
ALTER_TRANSFER = """
    UPDATE sandbox_processor_calls SET response = response || $4::jsonb
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'transfer' AND response->>'id' = $3
    RETURNING idempotency_key
"""
# `authorize`'s usual case: no answer stored under the key ($3), no authorization fault armed, the card
# ($4) this tenant's. $9: behaviour -> [status, decline code]; the response is `authorization_answer`'s.
_AUTHORIZE_KNOWN = _usual_authorization(
    "SELECT $9::jsonb -> c.behaviour AS outcome FROM sandbox_cards c "
    "WHERE c.token = $4 AND c.installation_id = $1 AND c.livemode = $2",
    key="$3",
    authorization="$5",
    amount="$6",
    currency="$7",
    card="$4",
    reference="$8",
    request="$10",
)
AUTHORIZE_AT_ONCE = f"""
    WITH {_AUTHORIZE_KNOWN}
    SELECT response FROM recorded
"""  # noqa: S608
# `capture`'s usual case: no answer stored under the key ($3), no capture fault armed, the authorization
# ($4) this tenant's, authorized, holding at least the amount ($5, at least 1). Locked, so a concurrent
# capture waits and then finds it captured (no row: `_call` refuses it). Captured at $7 (now) on the
# tenant's clock, as `capture_answer`; the response is `capture_answer`'s.
CAPTURE_AT_ONCE = """
    WITH usual AS (
        SELECT a.id, $7::timestamptz + make_interval(
                         secs => CASE WHEN $2 THEN 0 ELSE COALESCE(k.offset_seconds, 0) END) AS captured_at
        FROM sandbox_authorizations a LEFT JOIN sandbox_clocks k ON k.installation_id = a.installation_id
        WHERE a.id = $4 AND a.installation_id = $1 AND a.livemode = $2 AND a.status = 'authorized'
          AND a.amount >= $5
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_calls
                          WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3)
          AND NOT EXISTS (SELECT 1 FROM sandbox_processor_faults
                          WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'capture'
                            AND remaining > 0)
        FOR UPDATE OF a
    ), recorded AS (
        INSERT INTO sandbox_processor_calls
            (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
        SELECT $1, $2, $3, 'capture', $6::jsonb,
               jsonb_build_object('authorization_id', usual.id, 'amount_captured', $5::bigint,
                                  'captured_at', usual.captured_at),
               true
        FROM usual
        ON CONFLICT DO NOTHING
        RETURNING response
    )
    UPDATE sandbox_authorizations a
    SET status = 'captured', amount_captured = $5, captured_at = usual.captured_at, updated_at = now()
    FROM usual, recorded
    WHERE a.id = usual.id
    RETURNING recorded.response
"""
CARD_BEHAVIOUR = """
    SELECT behaviour FROM sandbox_cards WHERE token = $1 AND installation_id = $2 AND livemode = $3
"""
INSERT_AUTHORIZATION = """
    INSERT INTO sandbox_authorizations
        (id, installation_id, livemode, card_token, amount, currency, status, decline_code, reference)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
"""
# created_at is its transaction's start: the sweep's grace (minutes) outlasts any such transaction, so
# the sweep's watermark never passes a row still uncommitted
OPEN_AUTHORIZATIONS = """
    SELECT id, installation_id, livemode, reference, status, amount, amount_captured, amount_refunded,
           currency, created_at
    FROM sandbox_authorizations
    WHERE created_at > $1 AND created_at <= $2
      AND (status IN ('authorized', 'requires_action')
           OR (status = 'captured' AND amount_refunded < amount_captured))
    ORDER BY created_at, id
    LIMIT $3
"""
LOCK_AUTHORIZATION = """
    SELECT a.status, a.amount, a.currency, a.amount_captured, a.amount_refunded, a.captured_at,
           c.behaviour, COALESCE(k.offset_seconds, 0) AS clock_offset_seconds
    FROM sandbox_authorizations a JOIN sandbox_cards c ON c.token = a.card_token
    LEFT JOIN sandbox_clocks k ON k.installation_id = a.installation_id
    WHERE a.id = $1 AND a.installation_id = $2 AND a.livemode = $3
    FOR UPDATE OF a
"""
SET_STATUS = """
    UPDATE sandbox_authorizations SET status = $2, decline_code = $3, updated_at = now() WHERE id = $1
"""
SET_AMOUNT = "UPDATE sandbox_authorizations SET amount = $2, updated_at = now() WHERE id = $1"
CAPTURE = """
    UPDATE sandbox_authorizations
    SET status = 'captured', amount_captured = $2, captured_at = $3, updated_at = now()
    WHERE id = $1
"""
ADD_REFUND = """
    UPDATE sandbox_authorizations SET amount_refunded = amount_refunded + $2, updated_at = now()
    WHERE id = $1
"""
SET_COST = """
    UPDATE sandbox_authorizations SET cost_amount = COALESCE(cost_amount, $2), updated_at = now()
    WHERE id = $1
    RETURNING cost_amount
"""


DISPUTE_CARD_CAPTURES = """
    SELECT a.id, a.captured_at FROM sandbox_authorizations a JOIN sandbox_cards c ON c.token = a.card_token
    WHERE a.installation_id = $1 AND a.livemode = $2 AND c.behaviour = 'dispute' AND a.status = 'captured'
      AND a.captured_at <= $3 AND a.captured_at > $4
    ORDER BY a.captured_at
"""
DISPUTE_RECORD = """
    SELECT response FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = 'dispute' AND succeeded
      AND response->>'id' = $3
"""
DISPUTE_STEPS = """
    SELECT operation_type, request, response FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND succeeded
      AND operation_type IN ('dispute_evidence', 'dispute_acceptance') AND request->>'dispute_id' = $3
"""
