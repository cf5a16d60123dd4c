/// Versioned, ordered schema migrations, shared by both backends.
///
/// Each migration is written once with three placeholders that differ between dialects:
/// `{id}` (an auto-assigned 64-bit primary key), `{int}` (64-bit integer), `{blob}` (bytes),
/// `{without_rowid}` (SQLite: the table is its primary-key B-tree, so a lookup is one descent).
/// Applied versions are recorded in `schema_migrations`; a database whose highest recorded version
/// is above ``Schema/latestVersion`` was written by a newer binary and is refused (`SCHEMA_TOO_NEW`),
/// because this binary cannot know what the newer schema means.
enum Schema {
    struct Migration: Sendable {
        let version: Int
        let name: String
        /// Runs on this dialect only; elsewhere the version is recorded with nothing to do, so
        /// both backends count versions alike.
        var only: SQLDialect? = nil
        let sql: String
        /// A step in Swift, run after `sql` in the same transaction, for what SQL alone cannot do
        /// on both dialects (e.g. recomputing a digest from stored text).
        var step: (@Sendable (any SQLSession) throws -> Void)? = nil
    }

    static let migrations: [Migration] = [
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
        // environment. Both are split over `shard` (the message id modulo ``IngestCounters/shards``)
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
        // Customers whose answer-change events are held back until their history settles
        // (`EventHold`): one row per customer, released (and deleted) at `release_at`.
        Migration(
            version: 21, name: "event holds",
            sql: """
                CREATE TABLE event_holds (
                    customer_id {int} NOT NULL PRIMARY KEY,
                    earliest_signed_date {int} NOT NULL,
                    first_held_at {int} NOT NULL,
                    release_at {int} NOT NULL
                ){without_rowid};
                CREATE INDEX event_holds_due ON event_holds (release_at);
                """),
        // Every retention-messaging request the App Store made and the answer chosen
        // (`RetentionLog`), with what became of the subscription once that is decided.
        Migration(
            version: 22, name: "retention requests",
            sql: """
                CREATE TABLE retention_requests (
                    id {id},
                    request_identifier TEXT NOT NULL UNIQUE,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    product_id TEXT,
                    locale TEXT,
                    rule_id TEXT,
                    answer_kind TEXT,
                    message_identifier TEXT,
                    offer_id TEXT,
                    alternate_product_id TEXT,
                    requested_at {int} NOT NULL,
                    outcome TEXT,
                    checked_at {int} NOT NULL
                );
                CREATE INDEX retention_requests_undecided ON retention_requests (outcome, checked_at);
                CREATE INDEX retention_requests_requested ON retention_requests (requested_at);
                """),
        // A customer's released events, read at each release to find those hindsight disproves
        // (a `correction`).
        Migration(
            version: 23, name: "events by customer",
            sql: "CREATE INDEX events_customer ON events (customer_id);"),
        // Subscriptions stored before placeholders existed get theirs once (``PlaceholderBackfillStore``):
        // the position of the pass over the facts, seeded only when there are facts.
        Migration(
            version: 24, name: "placeholders for unlinked facts",
            sql: """
                CREATE TABLE placeholder_backfill (
                    after_id {int} NOT NULL
                );
                INSERT INTO placeholder_backfill (after_id) SELECT 0 WHERE EXISTS (SELECT 1 FROM facts);
                """),
        // Scheduled exports (``ExportStateStore``): per export, the committed watermark, the
        // window of the run in progress (a failed run is redone with the same window), when the
        // next run is due and the lease of the one process running it.
        Migration(
            version: 25, name: "export state",
            sql: """
                CREATE TABLE export_state (
                    export TEXT NOT NULL PRIMARY KEY,
                    watermark {int},
                    pending_through {int},
                    next_run_at {int} NOT NULL,
                    lease_owner TEXT,
                    lease_expires_at {int},
                    failures {int} NOT NULL,
                    last_success_at {int},
                    last_error TEXT,
                    updated_at {int} NOT NULL
                );
                """),
        // `state` holds storage's own encoding of the customer's state (``CustomerDocument``), and
        // `answer` the reader's rendering of it, dropped whenever the state changes. What was
        // stored as the state before was the reader's rendering: it moves to `answer` (reads keep
        // serving it), and the state is written again by the customer's next projection or a rebuild.
        Migration(
            version: 26, name: "customer answers apart from their states",
            sql: """
                ALTER TABLE customer_states ADD COLUMN answer TEXT;
                UPDATE customer_states SET answer = NULLIF(state, ''), state = '';
                """),
        // The charts' rollups (docs/charts.md): the daily rows split by store, product,
        // storefront, period type and (retention) months since the start, keyed so that a
        // chart's read is one range of days per series. Every customer's contribution is computed
        // again by the rollups' backfill (``backfillMetrics``), which also fills `chart_daily`: the
        // old contributions and sums are dropped so that none is counted twice.
        Migration(
            version: 27, name: "chart rollups",
            sql: """
                CREATE TABLE chart_daily (
                    environment TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    day {int} NOT NULL,
                    currency TEXT NOT NULL,
                    store TEXT NOT NULL,
                    product TEXT NOT NULL,
                    storefront TEXT NOT NULL,
                    period_type TEXT NOT NULL,
                    month_offset {int} NOT NULL,
                    value {int} NOT NULL,
                    PRIMARY KEY (environment, kind, day, currency, store, product, storefront, period_type, month_offset)
                ){without_rowid};
                DELETE FROM customer_metrics;
                DELETE FROM metric_daily;
                """),
        // What the app says about its customer (`CustomerAttributeStore`), keyed by the customer's
        // row id: an erasure deletes them with the customer's other rows. Indexed by value for the
        // console's search (an email finds its customer).
        Migration(
            version: 28, name: "customer attributes",
            sql: """
                CREATE TABLE customer_attributes (
                    customer_id {int} NOT NULL,
                    name TEXT NOT NULL,
                    value TEXT NOT NULL,
                    updated_at {int} NOT NULL,
                    PRIMARY KEY (customer_id, name)
                ){without_rowid};
                CREATE INDEX customer_attributes_value ON customer_attributes (value);
                """),
        // Offerings and their targeting (`OfferingStore`): the documents as they stand, and every
        // change numbered in `paywall_changes`. `paywall_settings`' `version` row holds the
        // latest number; each change updates it first, so concurrent changes run one at a time.
        Migration(
            version: 29, name: "offerings",
            sql: """
                CREATE TABLE offerings (
                    offering_id TEXT NOT NULL PRIMARY KEY,
                    document TEXT NOT NULL,
                    version {int} NOT NULL,
                    updated_at {int} NOT NULL
                );
                CREATE TABLE paywall_settings (
                    name TEXT NOT NULL PRIMARY KEY,
                    value TEXT NOT NULL,
                    version {int} NOT NULL,
                    updated_at {int} NOT NULL
                );
                INSERT INTO paywall_settings (name, value, version, updated_at) VALUES ('version', '', 0, 0);
                CREATE TABLE paywall_changes (
                    version {int} NOT NULL PRIMARY KEY,
                    kind TEXT NOT NULL,
                    subject TEXT,
                    document TEXT,
                    actor TEXT,
                    changed_at {int} NOT NULL
                );
                """),
        // Packed signed text may refer to a fact without repeating its signature
        // (``SignedTextFormat`` part 3), which an older binary cannot rebuild: it must refuse the
        // database (`SCHEMA_TOO_NEW`) rather than read such rows as corrupt. Nothing to change.
        Migration(version: 30, name: "references without repeated signatures", sql: ""),
        // Jobs carry the time their subject dates from (a purchase's), so that they are counted
        // by age in SQL (`DurableJobStore.unfinishedJobCount`); the unfinished Play
        // acknowledgement jobs stored before get theirs from their subject.
        Migration(
            version: 31, name: "job subject times",
            sql: """
                ALTER TABLE jobs ADD COLUMN subject_time {int};
                CREATE INDEX jobs_kind_subject_time ON jobs (kind, subject_time);
                """, step: dateAcknowledgementJobs),
        // Experiments are versioned with the offerings (a change of one is a `paywall_changes`
        // row); each customer's enrolment is recorded once per experiment, keyed by the
        // customer's row id so an erasure deletes it with the customer's other rows.
        Migration(
            version: 32, name: "experiments",
            sql: """
                CREATE TABLE experiments (
                    experiment_id TEXT NOT NULL PRIMARY KEY,
                    document TEXT NOT NULL,
                    version {int} NOT NULL,
                    updated_at {int} NOT NULL
                );
                CREATE TABLE experiment_enrolments (
                    experiment_id TEXT NOT NULL,
                    customer_id {int} NOT NULL,
                    variant {int} NOT NULL,
                    offering_id TEXT NOT NULL,
                    enrolled_at {int} NOT NULL,
                    PRIMARY KEY (experiment_id, customer_id)
                ){without_rowid};
                CREATE INDEX experiment_enrolments_customer ON experiment_enrolments (customer_id);
                """),
        // The charts' rollups keyed with the month offset before the segments: an unsegmented
        // read's GROUP BY (environment, series, day, currency, month offset) is then the key's
        // prefix, summed as the range is walked (SQLite needs no sort), and a segmented one sorts
        // only what it groups.
        Migration(
            version: 33, name: "chart rollups keyed by month offset before the segments",
            sql: """
                CREATE TABLE chart_daily_keyed (
                    environment TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    day {int} NOT NULL,
                    currency TEXT NOT NULL,
                    store TEXT NOT NULL,
                    product TEXT NOT NULL,
                    storefront TEXT NOT NULL,
                    period_type TEXT NOT NULL,
                    month_offset {int} NOT NULL,
                    value {int} NOT NULL,
                    PRIMARY KEY (environment, kind, day, currency, month_offset, store, product, storefront, period_type)
                ){without_rowid};
                INSERT INTO chart_daily_keyed (environment, kind, day, currency, store, product, storefront, period_type, month_offset, value)
                    SELECT environment, kind, day, currency, store, product, storefront, period_type, month_offset, value FROM chart_daily;
                DROP TABLE chart_daily;
                ALTER TABLE chart_daily_keyed RENAME TO chart_daily;
                """),
        // When a customer's attributes last changed (set or removed): what places the customer in
        // a scheduled export's window besides its answer's `computed_at`; a removal leaves no row
        // of its own to date it.
        Migration(version: 34, name: "customer attribute change times", sql: "ALTER TABLE customers ADD COLUMN attributes_changed_at {int};"),
    ]

    /// The version from which signed text is stored packed (`SignedPart`).
    static let packedSignedTextVersion = 14

    static var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Version 4: every fact's `jws_sha256` recomputed from its stored `jws` by ``FactDigest``, in
    /// id order. A row whose new key an earlier row already holds (a twin of the same signed
    /// content stored before this version, under another signature) keeps its old key: it stays in
    /// the ledger as it was, and a replay of either text now finds the earlier row's key.
    static func rekeyFacts(_ session: any SQLSession) throws {
        var after: Int64 = 0
        while true {
            let rows = try session.rows(
                "SELECT id, kind, jws AS text, jws_sha256 AS key FROM facts WHERE id > \(after) ORDER BY id LIMIT 500", as: KeyedFact.self)
            guard !rows.isEmpty else { return }
            // One round trip per chunk; the statements run in order, so a twin later in the chunk
            // sees the key an earlier row just took.
            var updates: [SQLQuery] = []
            for row in rows {
                after = row.id
                let key = FactDigest.hex(row.text)
                guard key != row.key else { continue }
                updates.append(
                    (
                        """
                        UPDATE facts SET jws_sha256 = \(key)
                        WHERE id = \(after) AND NOT EXISTS (SELECT 1 FROM facts WHERE kind = \(row.kind) AND jws_sha256 = \(key))
                        """ as SQLQuery))
            }
            if !updates.isEmpty { _ = try session.pipeline(updates) }
        }
    }

    /// A fact as the rekeying migrations read it: its kind, the text its key is computed from
    /// (`jws`, or `payload` for version 6) and its stored key.
    struct KeyedFact: Decodable {
        var id: Int64
        var kind: String
        var text: String
        var key: String
    }

    static func render(_ sql: String, for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite:
            return sql.replacing("{id}", with: "INTEGER PRIMARY KEY")
                .replacing("{int}", with: "INTEGER")
                .replacing("{blob}", with: "BLOB")
                .replacing("{without_rowid}", with: " WITHOUT ROWID")
        case .postgres:
            return sql.replacing("{id}", with: "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
                .replacing("{int}", with: "BIGINT")
                .replacing("{blob}", with: "BYTEA")
                .replacing("{without_rowid}", with: "")
        }
    }

    static let createMigrationsTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )
        """

    /// The highest applied version (0 for an empty database). Assumes the table exists.
    static func currentVersion(_ session: any SQLSession) throws -> Int {
        Int(try session.value("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", as: Int64.self) ?? 0)
    }

    /// Applies every pending migration. The caller holds a write transaction (and, on PostgreSQL,
    /// a lock that serializes concurrent migrators).
    static func migrate(_ session: any SQLSession, appliedAt: String) throws -> MigrationReport {
        try session.execute(createMigrationsTable)
        let current = try currentVersion(session)
        guard current <= latestVersion else {
            throw StorageError(
                .schemaTooNew, "the database schema (version \(current)) is newer than this binary (version \(latestVersion))")
        }
        // Every version not recorded yet, not only those above the highest: versions are numbered
        // as the work that needs them is planned, so one may land after a higher one (17 after 19),
        // and a database the higher one already migrated still needs it.
        let recorded = Set(try session.values("SELECT version FROM schema_migrations", as: Int.self))
        var applied: [Int] = []
        for migration in migrations where !recorded.contains(migration.version) {
            if migration.only == nil || migration.only == session.dialect {
                if !migration.sql.isEmpty { try session.execute(render(migration.sql, for: session.dialect)) }
                try migration.step?(session)
            }
            try session.query(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (\(Int64(migration.version)), \(migration.name), \(appliedAt))")
            applied.append(migration.version)
        }
        return MigrationReport(applied: applied, currentVersion: max(current, applied.max() ?? current))
    }

    /// The tables whose rows of the older layout are still to be repacked (version 14 on).
    static func pendingRepack(_ session: any SQLSession, version: Int) throws -> [String] {
        guard version >= packedSignedTextVersion else { return [] }
        return try session.values("SELECT phase FROM repack_progress WHERE done = 0", as: String.self)
    }

    /// Verifies without migrating: throws `SCHEMA_TOO_NEW` for a newer schema.
    static func check(_ session: any SQLSession) throws -> Int {
        try session.execute(createMigrationsTable)
        let current = try currentVersion(session)
        guard current <= latestVersion else {
            throw StorageError(
                .schemaTooNew, "the database schema (version \(current)) is newer than this binary (version \(latestVersion))")
        }
        return current
    }
}

