extension Schema {
    /// Versions 21 on: event holds, retention, exports, answers, charts, attributes, offerings,
    /// experiments.
    static let featureMigrations: [Migration] = [
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
        // Google Play's order ids of the stored purchases (``PlayOrderStore``): a pending refund
        // review names only the order. A renewal order `GPA.x..N` the ledger never saw is found
        // by its subscription's first order, `base_order_id`.
        Migration(
            version: 35, name: "play orders",
            sql: """
                CREATE TABLE play_orders (
                    package_name TEXT NOT NULL,
                    order_id TEXT NOT NULL,
                    base_order_id TEXT NOT NULL,
                    purchase_token TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    is_subscription {int} NOT NULL,
                    PRIMARY KEY (package_name, order_id)
                ){without_rowid};
                CREATE INDEX play_orders_base ON play_orders (package_name, base_order_id);
                """),
        // The charts' rollups per segmentation (`Ledger+Charts`): `chart_daily` summed over every
        // segment column but one (or none), keyed by series, segmentation and day, so that a
        // chart's read returns every row it reads and the database neither scans the other
        // segments' rows nor sorts to group them. Filled from `chart_daily`; from then on written
        // with it in the same transaction.
        Migration(
            version: 36, name: "chart rollups per segmentation",
            sql: """
                CREATE TABLE chart_segment_daily (
                    environment TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    segmentation TEXT NOT NULL,
                    day {int} NOT NULL,
                    currency TEXT NOT NULL,
                    month_offset {int} NOT NULL,
                    segment TEXT NOT NULL,
                    value {int} NOT NULL,
                    PRIMARY KEY (environment, kind, segmentation, day, currency, month_offset, segment)
                ){without_rowid};
                """ + Ledger.fillChartSegments.map { $0 + ";\n" }.joined()),
        // Play customers' rollups recomputed by the backfill with prices, store and storefront.
        Migration(version: 37, name: "Play customers' rollups recomputed", sql: "", step: forgetPlayRollups),
        smallerLedgerKeys,
        // The order ids of Play purchases stored before `play_orders` was kept, from their snapshots.
        Migration(version: 39, name: "play orders of earlier purchases", sql: "", step: fillPlayOrders),
        // Google Play's pending refund reviews (``PlayRefundReviewStore``) and the one answer each
        // takes: recorded before it is sent, whoever gives it (the server's job or the backend).
        Migration(
            version: 40, name: "play refund reviews",
            sql: """
                CREATE TABLE play_refund_reviews (
                    package_name TEXT NOT NULL,
                    pending_refund_token TEXT NOT NULL,
                    order_id TEXT NOT NULL,
                    refund_reason {int},
                    requested_at {int} NOT NULL,
                    answer TEXT,
                    answered_by TEXT,
                    answered_at {int},
                    forwarded_at {int},
                    PRIMARY KEY (package_name, pending_refund_token)
                ){without_rowid};
                CREATE INDEX play_refund_reviews_order ON play_refund_reviews (order_id);
                CREATE INDEX play_refund_reviews_requested ON play_refund_reviews (requested_at);
                """),
        // SQLite: the customers' states as a rowid table keyed by a narrow index (``rowidCustomerStates``).
        Migration(version: 41, name: "customer states in a rowid table", only: .sqlite, sql: "", step: rowidCustomerStates),
        // Each event's answer (the customer's state document, most of an event's bytes)
        // compressed with the ledger's dictionary (``EventAnswer``); stored rows compressed too.
        Migration(
            version: 42, name: "compressed event answers", sql: "ALTER TABLE events ADD COLUMN answer_packed {blob};",
            step: EventAnswer.compressStored),
        // The ledger's unique keys checked through hashes, not B-trees of whole keys (``shortKeyIndexes``).
        Migration(version: 43, name: "ledger keys through hash indexes", sql: "", step: shortKeyIndexes),
        // A fact's kind and environment as one-byte codes (SQLite's columns, every sibling reference: ``factCodes``).
        Migration(version: 44, name: "fact kinds and environments as codes", sql: "", step: factCodes),
        rollupShards,
        // PostgreSQL: facts by token through a hash index (``factTokenHashIndex``).
        factTokenHashIndex,
        // The index of facts' transaction ids without the notification facts (``transactionIdsWithoutNotifications``).
        transactionIdsWithoutNotifications,
        rollupJournal,
    ]
}
