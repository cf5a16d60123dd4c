extension Schema {
    /// Facts' keys as the digest's 32 bytes instead of 64 hex characters (``FactDigest/stored(_:)``);
    /// the indexes on `transaction_id` and `app_account_token` without the rows that have none (a
    /// renewal has neither, a notification no token; every query of them names a value), and the
    /// one on messages' `received_at` with only the rejected ones (its one query, the purge of
    /// rejected messages, reads no other). Packed texts written from this version on may refer to
    /// a fact of their own message by its kind alone (``StoredPart/sibling(kind:)``), which older
    /// binaries do not read.
    static let smallerLedgerKeys = Migration(
        version: 38, name: "binary fact keys and partial ledger indexes",
        sql: """
            DROP INDEX facts_transaction_id;
            CREATE INDEX facts_transaction_id ON facts (transaction_id) WHERE transaction_id IS NOT NULL;
            DROP INDEX facts_app_account_token;
            CREATE INDEX facts_app_account_token ON facts (app_account_token) WHERE app_account_token IS NOT NULL;
            DROP INDEX notifications_received_at;
            CREATE INDEX notifications_rejected_received_at ON notifications (received_at) WHERE outcome = 'rejected';
            """,
        step: storeFactKeysAsBytes)

    /// Rewrites every fact's key as ``FactDigest/stored(_:)`` does. PostgreSQL changes the column's
    /// type (one rewrite of the table, its indexes rebuilt); SQLite, whose column keeps its declared
    /// type and stores the bytes as they are, updates the rows in id order, 500 per statement
    /// batch, then rebuilds the table's indexes so that the rewritten keys fill their pages.
    static func storeFactKeysAsBytes(_ session: any SQLSession) throws {
        switch session.dialect {
        case .postgres:
            try session.execute(
                """
                ALTER TABLE facts ALTER COLUMN jws_sha256 TYPE BYTEA USING
                    CASE WHEN jws_sha256 ~ '^[0-9a-f]{64}$' THEN decode(jws_sha256, 'hex') ELSE convert_to(jws_sha256, 'UTF8') END
                """)
        case .sqlite:
            var after: Int64 = 0
            while true {
                let rows = try session.rows(
                    "SELECT id, jws_sha256 AS key FROM facts WHERE id > \(after) AND typeof(jws_sha256) = 'text' ORDER BY id LIMIT 500",
                    as: TextKey.self)
                guard let last = rows.last else { break }
                after = last.id
                _ = try session.pipeline(rows.map { "UPDATE facts SET jws_sha256 = \(FactDigest.stored($0.key)) WHERE id = \($0.id)" as SQLQuery })
            }
            try session.execute("REINDEX facts")
        }
    }

    private struct TextKey: Decodable {
        var id: Int64
        var key: String
    }
}
