extension Schema {
    /// The rollups every commit adds to (`metric_daily`, `chart_daily`, `chart_segment_daily`)
    /// keyed by a `shard` after their key (``RollupShards``): concurrent PostgreSQL commits write
    /// their own shard of the day's rows, readers sum the shards. Each table is made again with
    /// the shard in its primary key (neither database changes a primary key in place alike), its
    /// rows copied into shard 0 — the same sums. `ingest_hourly` and `ingest_latest` have had a
    /// shard from the start; from this version on they are written into the transaction's shard
    /// too, and their rows keep the shards they have.
    static let rollupShards = Migration(
        version: 45, name: "rollup rows split over shards",
        sql: """
            CREATE TABLE metric_daily_sharded (
                environment TEXT NOT NULL,
                day {int} NOT NULL,
                kind TEXT NOT NULL,
                currency TEXT NOT NULL,
                shard {int} NOT NULL DEFAULT 0,
                value {int} NOT NULL,
                PRIMARY KEY (environment, day, kind, currency, shard)
            ){without_rowid};
            INSERT INTO metric_daily_sharded (environment, day, kind, currency, value)
                SELECT environment, day, kind, currency, value FROM metric_daily;
            DROP TABLE metric_daily;
            ALTER TABLE metric_daily_sharded RENAME TO metric_daily;
            CREATE TABLE chart_daily_sharded (
                environment TEXT NOT NULL,
                kind TEXT NOT NULL,
                day {int} NOT NULL,
                currency TEXT NOT NULL,
                store TEXT NOT NULL,
                product TEXT NOT NULL,
                storefront TEXT NOT NULL,
                period_type TEXT NOT NULL,
                month_offset {int} NOT NULL,
                shard {int} NOT NULL DEFAULT 0,
                value {int} NOT NULL,
                PRIMARY KEY (environment, kind, day, currency, month_offset, store, product, storefront, period_type, shard)
            ){without_rowid};
            INSERT INTO chart_daily_sharded (environment, kind, day, currency, store, product, storefront, period_type, month_offset, value)
                SELECT environment, kind, day, currency, store, product, storefront, period_type, month_offset, value FROM chart_daily;
            DROP TABLE chart_daily;
            ALTER TABLE chart_daily_sharded RENAME TO chart_daily;
            CREATE TABLE chart_segment_daily_sharded (
                environment TEXT NOT NULL,
                kind TEXT NOT NULL,
                segmentation TEXT NOT NULL,
                day {int} NOT NULL,
                currency TEXT NOT NULL,
                month_offset {int} NOT NULL,
                segment TEXT NOT NULL,
                shard {int} NOT NULL DEFAULT 0,
                value {int} NOT NULL,
                PRIMARY KEY (environment, kind, segmentation, day, currency, month_offset, segment, shard)
            ){without_rowid};
            INSERT INTO chart_segment_daily_sharded (environment, kind, segmentation, day, currency, month_offset, segment, value)
                SELECT environment, kind, segmentation, day, currency, month_offset, segment, value FROM chart_segment_daily;
            DROP TABLE chart_segment_daily;
            ALTER TABLE chart_segment_daily_sharded RENAME TO chart_segment_daily;
            """)

    /// Commits' rollup changes appended, to be folded into the rollups (``RollupWrites``).
    static let rollupJournal = Migration(
        version: 48, name: "rollup journal", sql: "CREATE TABLE rollup_journal (id {id}, body TEXT NOT NULL);")
}
