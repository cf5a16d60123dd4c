extension Schema {
    /// Versions 1–19: the ledger, its projections, jobs, the event outbox, customers and rollups.
    static let ledgerMigrations: [Migration] = [
        Migration(
            version: 1, name: "ledger",
            sql: """
                CREATE TABLE customers (
                    id {id},
                    app_user_id TEXT NOT NULL UNIQUE,
                    app_account_token TEXT NOT NULL UNIQUE,
                    created_at {int} NOT NULL
                );
                CREATE TABLE notifications (
                    id {id},
                    notification_uuid TEXT UNIQUE,
                    claimed_uuid TEXT,
                    source TEXT NOT NULL,
                    received_at {int} NOT NULL,
                    outcome TEXT NOT NULL,
                    reject_code TEXT,
                    notification_type TEXT,
                    subtype TEXT,
                    body {blob} NOT NULL
                );
                CREATE INDEX notifications_received_at ON notifications (received_at);
                CREATE TABLE facts (
                    id {id},
                    notification_id {int} REFERENCES notifications (id),
                    kind TEXT NOT NULL,
                    jws_sha256 TEXT NOT NULL,
                    jws TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    transaction_id TEXT,
                    original_transaction_id TEXT,
                    app_account_token TEXT,
                    environment TEXT,
                    bundle_id TEXT,
                    signed_date {int},
                    received_at {int} NOT NULL,
                    UNIQUE (kind, jws_sha256)
                );
                CREATE INDEX facts_original_transaction_id ON facts (original_transaction_id);
                CREATE INDEX facts_app_account_token ON facts (app_account_token);
                CREATE INDEX facts_notification_id ON facts (notification_id);
                CREATE TABLE links (
                    original_transaction_id TEXT PRIMARY KEY,
                    customer_id {int} NOT NULL REFERENCES customers (id),
                    linked_at {int} NOT NULL,
                    via TEXT NOT NULL
                );
                CREATE INDEX links_customer_id ON links (customer_id);
                CREATE TABLE customer_states (
                    app_user_id TEXT NOT NULL PRIMARY KEY,
                    customer_id {int} NOT NULL UNIQUE REFERENCES customers (id),
                    app_account_token TEXT NOT NULL,
                    created_at {int} NOT NULL,
                    state TEXT NOT NULL,
                    projection_rows TEXT NOT NULL,
                    computed_at {int} NOT NULL
                ){without_rowid};
                CREATE TABLE entitlement_projections (
                    customer_id {int} NOT NULL REFERENCES customers (id),
                    entitlement TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    status TEXT NOT NULL,
                    active {int} NOT NULL,
                    product_id TEXT,
                    original_transaction_id TEXT,
                    expires_at {int},
                    grace_until {int},
                    will_renew {int} NOT NULL,
                    PRIMARY KEY (customer_id, entitlement, environment)
                );
                CREATE TABLE subscription_projections (
                    original_transaction_id TEXT PRIMARY KEY,
                    customer_id {int} NOT NULL REFERENCES customers (id),
                    product_id TEXT NOT NULL,
                    group_id TEXT,
                    status TEXT NOT NULL,
                    expires_at {int},
                    grace_until {int},
                    auto_renew {int} NOT NULL,
                    environment TEXT NOT NULL
                );
                CREATE INDEX subscription_projections_customer_id ON subscription_projections (customer_id);
                CREATE INDEX subscription_projections_expires_at ON subscription_projections (expires_at);
                """),
        // Signed text is base64 and barely compresses, yet PostgreSQL tried (pglz) on every
        // notification body and JWS over 2 KB: a tenth of the server's CPU at ingest. Out of line,
        // uncompressed. (SQLite never compresses.)
        Migration(
            version: 2, name: "signed text stored uncompressed", only: .postgres,
            sql: """
                ALTER TABLE notifications ALTER COLUMN body SET STORAGE EXTERNAL;
                ALTER TABLE facts ALTER COLUMN jws SET STORAGE EXTERNAL;
                """),
        // A customer the projector fails for is marked (its error) instead of failing the
        // transaction: the API answers that customer 500 PROJECTION_FAILED, everyone else as usual.
        Migration(
            version: 3, name: "projection failures",
            sql: "ALTER TABLE customer_states ADD COLUMN projection_error TEXT;"),
        // A signed fact's key was the digest of its whole JWS text, signature included: a high-S
        // twin `(r, n−s)` of a signature verifies too and was stored as a second fact. The key is
        // now the digest of the signing input (see `FactDigest`); stored rows are rekeyed.
        Migration(version: 4, name: "fact keys from the signed content", sql: "", step: rekeyFacts),
        // A rejected message keeps only a bounded prefix of its body, with the whole body's
        // digest and size (forged bodies filled the disk).
        Migration(
            version: 5, name: "bounded rejected bodies",
            sql: """
                ALTER TABLE notifications ADD COLUMN body_sha256 TEXT;
                ALTER TABLE notifications ADD COLUMN body_size {int};
                """),
        // V1 and receipt facts were keyed by the digest of their JSON; they are now keyed by
        // their identity (`Fact.identity`), which no encoder change moves.
        Migration(version: 6, name: "unsigned fact keys from their identity", sql: "", step: rekeyUnsignedFacts),
        // `expiring(from:to:)`, the only query that used it, had no caller but tests; every index
        // costs a random page write per ingest.
        Migration(
            version: 7, name: "no index on subscription expiry",
            sql: "DROP INDEX subscription_projections_expires_at;"),
        // Reconciliation with Apple's notification history: per app and environment, the
        // watermark read up to and the lease of the one process reading it (`ReconcileStateStore`).
        Migration(
            version: 8, name: "reconciliation state",
            sql: """
                CREATE TABLE reconcile_state (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    watermark {int},
                    lease_owner TEXT,
                    lease_expires_at {int},
                    updated_at {int} NOT NULL,
                    PRIMARY KEY (bundle_id, environment)
                );
                """),
        // Durable background jobs (`DurableJobStore`): backfills of a subscription's history and
        // answers to consumption requests, leased so one process runs each, retried with backoff;
        // and the customers' consent to sharing consumption data (`ConsentStore`).
        Migration(
            version: 9, name: "durable jobs and consent",
            sql: """
                CREATE TABLE jobs (
                    id {id},
                    kind TEXT NOT NULL,
                    job_key TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    status TEXT NOT NULL,
                    attempts {int} NOT NULL,
                    run_at {int} NOT NULL,
                    lease_owner TEXT,
                    lease_expires_at {int},
                    last_error TEXT,
                    created_at {int} NOT NULL,
                    updated_at {int} NOT NULL,
                    UNIQUE (kind, job_key)
                );
                CREATE INDEX jobs_due ON jobs (status, run_at);
                CREATE TABLE customer_consents (
                    app_user_id TEXT NOT NULL PRIMARY KEY,
                    consented {int} NOT NULL,
                    recorded_at {int} NOT NULL
                );
                """),
        // Every offer signature the server hands out, for audit (`OfferSignatureLog`).
        Migration(
            version: 10, name: "offer signatures",
            sql: """
                CREATE TABLE offer_signatures (
                    id {id},
                    app_user_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    offer_id TEXT,
                    kind TEXT NOT NULL,
                    format TEXT NOT NULL,
                    nonce TEXT NOT NULL,
                    signed_at {int} NOT NULL
                );
                CREATE INDEX offer_signatures_customer ON offer_signatures (app_user_id, id);
                """),
        // The event outbox: changes of customers' answers, appended in the ingest's transaction
        // (`seq` is the feed's commit order); webhook deliveries of its events, per endpoint, and
        // how far each endpoint's fan-out has read.
        Migration(
            version: 11, name: "event outbox",
            sql: """
                CREATE TABLE events (
                    seq {id},
                    event_id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    customer_id {int},
                    app_user_id TEXT,
                    app_account_token TEXT,
                    environment TEXT,
                    bundle_id TEXT,
                    product_id TEXT,
                    original_transaction_id TEXT,
                    entitlements TEXT NOT NULL,
                    details TEXT NOT NULL,
                    cause TEXT NOT NULL,
                    occurred_at {int} NOT NULL,
                    recorded_at {int} NOT NULL,
                    answer TEXT NOT NULL
                );
                CREATE TABLE webhook_cursors (
                    endpoint TEXT NOT NULL PRIMARY KEY,
                    after_seq {int} NOT NULL
                );
                CREATE TABLE webhook_deliveries (
                    id {id},
                    endpoint TEXT NOT NULL,
                    event_seq {int} NOT NULL,
                    event_id TEXT NOT NULL,
                    event_type TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    status TEXT NOT NULL,
                    attempts {int} NOT NULL,
                    next_attempt_at {int} NOT NULL,
                    first_attempt_at {int},
                    last_attempt_at {int},
                    last_status {int},
                    last_error TEXT,
                    lease_owner TEXT,
                    lease_expires_at {int},
                    created_at {int} NOT NULL,
                    updated_at {int} NOT NULL,
                    UNIQUE (endpoint, event_id)
                );
                CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, status, event_seq);
                CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint, customer_key, status, event_seq);
                CREATE INDEX webhook_deliveries_status ON webhook_deliveries (status, id);
                """),
        // Customers under several ids (aliases: a row per id, `merged_into` the customer it
        // belongs to) and the record of merges and erasures (`customer_events`; an erasure's row
        // names no erased id).
        Migration(
            version: 13, name: "customer aliases and erasures",
            sql: """
                ALTER TABLE customers ADD COLUMN merged_into {int} REFERENCES customers (id);
                CREATE INDEX customers_merged_into ON customers (merged_into);
                CREATE TABLE customer_events (
                    id {id},
                    kind TEXT NOT NULL,
                    customer_id {int},
                    subject TEXT,
                    actor TEXT,
                    detail TEXT,
                    recorded_at {int} NOT NULL
                );
                CREATE INDEX customer_events_customer ON customer_events (customer_id);
                """),
        // A lighter ledger: each distinct JWS header stored once, signed text packed with references
        // (`SignedPart`), bodies as references to their facts. Rows written before are rewritten
        // afterwards in resumable batches (`repack_progress`: each table's cursor), outside this
        // transaction; until then they are read as they are. An empty table has nothing to rewrite.
        Migration(
            version: 14, name: "packed signed text",
            sql: """
                CREATE TABLE jws_headers (
                    id {id},
                    sha256 TEXT NOT NULL UNIQUE,
                    header TEXT NOT NULL
                );
                ALTER TABLE facts ADD COLUMN signed_packed {blob};
                ALTER TABLE notifications ADD COLUMN body_packed {blob};
                CREATE TABLE repack_progress (
                    phase TEXT NOT NULL PRIMARY KEY,
                    after_id {int} NOT NULL,
                    done {int} NOT NULL
                );
                INSERT INTO repack_progress (phase, after_id, done)
                SELECT 'facts', 0, CASE WHEN EXISTS (SELECT 1 FROM facts) THEN 0 ELSE 1 END
                UNION ALL SELECT 'notifications', 0, CASE WHEN EXISTS (SELECT 1 FROM notifications) THEN 0 ELSE 1 END;
                """),
        // Version 15: the console's rollups, so that its overview never scans every customer.
        // `metric_daily` sums every customer's contribution per environment, day (since the epoch,
        // UTC), series and currency (a stock's change, a flow's amount); `customer_metrics` keeps
        // each customer's own, so a new projection adds only the difference. Customers stored before this version have no row
        // until the backfill (`backfillMetrics`) reaches them. Facts get an index on
        // `transaction_id` for the console's search.
        Migration(
            version: 15, name: "metric rollups",
            sql: """
                CREATE TABLE metric_daily (
                    environment TEXT NOT NULL,
                    day {int} NOT NULL,
                    kind TEXT NOT NULL,
                    currency TEXT NOT NULL,
                    value {int} NOT NULL,
                    PRIMARY KEY (environment, day, kind, currency)
                ){without_rowid};
                CREATE TABLE customer_metrics (
                    customer_id {int} PRIMARY KEY,
                    deltas TEXT NOT NULL
                ){without_rowid};
                CREATE INDEX facts_transaction_id ON facts (transaction_id);
                """),
        compressedJSON,
        // Version 17: read-your-writes across servers. Every write of a customer's state
        // row stamps it with the primary's WAL insert position at that moment (a trigger, so no
        // writer can forget it); a server about to read a customer on a replica compares the
        // replica's position and its copy of the row with the primary's stamp
        // (``ReplicaNeed``). The stamp is taken before the commit record, so it is not the commit
        // position itself: see ``ReplicaRoute``.
        Migration(
            version: 17, name: "customer commit positions", only: .postgres,
            sql: """
                ALTER TABLE customer_states ADD COLUMN commit_lsn BIGINT;
                CREATE FUNCTION customer_states_commit_lsn() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    NEW.commit_lsn := (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER customer_states_commit_lsn BEFORE INSERT OR UPDATE ON customer_states
                    FOR EACH ROW EXECUTE FUNCTION customer_states_commit_lsn();
                """),
        // Version 19: the console's health from counters kept by the ingest, in its
        // transaction, instead of a scan of the last day's messages. `ingest_hourly` counts
        // messages per hour (since the epoch) and code ('' = accepted, else the rejection code);
        // `ingest_latest` keeps the newest accepted message per app ('' = none named) and
        // environment. Both are split over `shard` (the writing transaction's, ``RollupShards``)
        // so concurrent PostgreSQL ingests rarely wait on one row; reads sum or take the maximum.
        // Seeded from the last 48 hours of messages before the newest one (an index range).
        Migration(
            version: 19, name: "ingest counters",
            sql: """
                CREATE TABLE ingest_hourly (
                    hour {int} NOT NULL,
                    code TEXT NOT NULL,
                    shard {int} NOT NULL,
                    count {int} NOT NULL,
                    PRIMARY KEY (hour, code, shard)
                ){without_rowid};
                CREATE TABLE ingest_latest (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    shard {int} NOT NULL,
                    received_at {int} NOT NULL,
                    PRIMARY KEY (bundle_id, environment, shard)
                ){without_rowid};
                INSERT INTO ingest_hourly (hour, code, shard, count)
                SELECT received_at / 3600000, CASE WHEN outcome = 'accepted' THEN '' ELSE COALESCE(reject_code, 'UNKNOWN') END, 0, COUNT(*)
                FROM notifications WHERE received_at >= (SELECT COALESCE(MAX(received_at), 0) FROM notifications) - 172800000
                GROUP BY received_at / 3600000, CASE WHEN outcome = 'accepted' THEN '' ELSE COALESCE(reject_code, 'UNKNOWN') END;
                INSERT INTO ingest_latest (bundle_id, environment, shard, received_at)
                SELECT COALESCE(f.bundle_id, ''), COALESCE(f.environment, ''), 0, MAX(n.received_at)
                FROM notifications n JOIN facts f ON f.notification_id = n.id
                WHERE n.received_at >= (SELECT COALESCE(MAX(received_at), 0) FROM notifications) - 172800000
                GROUP BY COALESCE(f.bundle_id, ''), COALESCE(f.environment, '');
                """),
    ]
}
