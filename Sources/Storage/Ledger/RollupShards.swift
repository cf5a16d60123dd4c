// Why shards: nearly every ingest adds to the same few rows of the day (today's actives, new
// subscriptions, MRR, the hour's message count). Written by every commit, those rows made every
// PostgreSQL commit wait for the one before it, through its fsync, however many servers there
// were. Each of those rows is therefore kept as up to ``RollupShards/count`` rows, one per shard
// (the `shard` column, last in each key); a transaction writes all its shared rows into one
// shard that no other open transaction holds, and every reader sums the shards. A stored value is
// still the plain sum of the contributions (each contribution lands in exactly one shard, in the
// transaction that stores it), so nothing changes for a reader but a `GROUP BY`.
//
// Which shard: the first of `0..<count` whose transaction-level advisory lock is free, taken with
// a try lock (which never waits) in the commit's pipeline, so the shards in use stay as few as
// the commits that overlap, and readers sum few rows. When every shard is held (more concurrent
// commits than shards) a transaction writes into a random one and waits for that shard's rows
// like any row update; it cannot deadlock, as it still takes its rows in the tail's one order.
// SQLite has one writer: every row is shard 0.

/// The shards the rows every commit shares (`metric_daily`, `chart_daily`, `chart_segment_daily`,
/// `ingest_hourly`, `ingest_latest`) are split over, and the one a transaction writes into.
enum RollupShards {
    /// How many shards a key may have on PostgreSQL: at least the write connections of every
    /// server on one schema (8 per server by default), so a commit seldom finds them all held.
    static let count = 32

    /// PostgreSQL: picks the transaction's shard (see the top of this file) and keeps it in the
    /// transaction's setting `entitled.rollup_shard`, read by ``value(_:)``. The locks are per
    /// schema: servers of other schemas in the database never meet them.
    static let choose: SQLQuery = SQLQuery(verbatim: """
        SELECT set_config('entitled.rollup_shard', CAST(COALESCE(
            (SELECT s FROM generate_series(0, \(count - 1)) AS s
             WHERE pg_try_advisory_xact_lock(hashtextextended('entitled.rollups.' || current_schema(), s)) LIMIT 1),
            CAST(floor(random() * \(count)) AS INTEGER)) AS TEXT), true)
        """)

    /// The `shard` column's value in the tail's upserts on `dialect`: the chosen shard on
    /// PostgreSQL (``choose`` runs first in the same transaction), 0 on SQLite.
    static func value(_ dialect: SQLDialect) -> SQLQuery {
        dialect == .postgres ? "CAST(current_setting('entitled.rollup_shard') AS INTEGER)" : "0"
    }
}
