extension Schema {
    /// PostgreSQL: facts found by their `app_account_token` through a hash index instead of a
    /// B-tree. Every query of the token names one value (`=`, `IN`, a join on it), which is all a
    /// hash index answers; its entry holds the value's 4-byte hash code, not the 36-character UUID,
    /// and a B-tree of random UUIDs keeps its pages about two-thirds full. The other fact keys stay
    /// B-trees: `original_transaction_id` is also read in order (Play purchase tokens after a
    /// cursor), and the B-trees of ids that several facts share (`original_transaction_id`,
    /// `transaction_id`, `notification_id`) keep one entry per value with every row's pointer,
    /// smaller than a hash index's entry per row. SQLite has no hash index and keeps its B-tree.
    static let factTokenHashIndex = Migration(
        version: 46, name: "fact tokens through a hash index", only: .postgres,
        sql: """
            DROP INDEX facts_app_account_token;
            CREATE INDEX facts_app_account_token ON facts USING hash (app_account_token) WHERE app_account_token IS NOT NULL;
            """)
}

extension Schema {
    /// The index on `transaction_id` without the notification facts (``Ledger/transactionFacts(_:)``):
    /// a notification fact carries the transaction id of the transaction fact stored with it, so
    /// every id it holds is found through that fact, and a V2 notification's two entries of one id
    /// become one.
    static let transactionIdsWithoutNotifications = Migration(
        version: 47, name: "fact transaction ids without the notifications'",
        sql: """
            DROP INDEX facts_transaction_id;
            CREATE INDEX facts_transaction_id ON facts (transaction_id) WHERE transaction_id IS NOT NULL AND kind <> 'notification';
            """)
}
