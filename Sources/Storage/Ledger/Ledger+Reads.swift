// Reads beyond the hot one: subscriptions and a customer's history.

extension Ledger {
    static let subscriptionColumns: SQLQuery = """
        c.app_user_id, s.original_transaction_id, s.product_id, s.group_id, s.status, s.expires_at, s.grace_until,
        s.auto_renew, s.environment
        """

    /// A subscription's columns and its owner's id (``subscriptionColumns``).
    private struct OwnedColumns: Decodable {
        var appUserId: String
        var originalTransactionId: String
        var productId: String
        var groupId: String?
        var status: String
        var expiresAt: Int64?
        var graceUntil: Int64?
        var autoRenew: Bool
        var environment: String
    }

    static func decodeOwned(_ row: SQLRow) throws -> OwnedSubscription {
        let owned = try row.decode(OwnedColumns.self)
        return OwnedSubscription(
            appUserId: owned.appUserId,
            subscription: SubscriptionRow(
                originalTransactionId: owned.originalTransactionId, productId: owned.productId, group: owned.groupId,
                status: owned.status, expiresAt: owned.expiresAt, graceUntil: owned.graceUntil, autoRenew: owned.autoRenew,
                environment: owned.environment))
    }

    func subscription(otid: String) throws -> OwnedSubscription? {
        try session.query(
            """
            SELECT \(Self.subscriptionColumns) FROM subscription_projections s JOIN customers c ON c.id = s.customer_id
            WHERE s.original_transaction_id = \(otid)
            """).first.map(Self.decodeOwned)
    }

    /// History cursor: `receivedAt.rank.id` of the last entry returned (rank 2 = fact, 1 = notification).
    func history(appUserId: String, cursor: String?, limit: Int) throws -> HistoryPage {
        guard (1...1000).contains(limit) else { throw StorageError(.invalidArgument, "limit must be 1…1000") }
        guard let customer = try customer(appUserId: appUserId) else { return HistoryPage(entries: [], nextCursor: nil) }
        var after: (Int64, Int64, Int64) = (Int64.max, 3, 0)
        if let cursor {
            let parts = cursor.split(separator: ".").compactMap { Int64($0) }
            guard parts.count == 3 else { throw StorageError(.invalidArgument, "malformed history cursor") }
            after = (parts[0], parts[1], parts[2])
        }
        let rows = try session.rows(
            """
            WITH cf AS (
                SELECT f.id, f.notification_id, f.received_at, f.kind, f.transaction_id, f.original_transaction_id, f.signed_date
                FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
                WHERE l.customer_id IN (SELECT id FROM customers WHERE id = \(customer.id) OR merged_into = \(customer.id))
                UNION ALL
                SELECT f.id, f.notification_id, f.received_at, f.kind, f.transaction_id, f.original_transaction_id, f.signed_date
                FROM facts f WHERE f.original_transaction_id IS NULL
                  AND f.app_account_token IN (SELECT app_account_token FROM customers WHERE id = \(customer.id) OR merged_into = \(customer.id))
            ), h AS (
                SELECT 2 AS rank, cf.id AS id, cf.received_at AS received_at, CAST(NULL AS TEXT) AS source,
                       CAST(NULL AS TEXT) AS uuid, CAST(NULL AS TEXT) AS ntype, CAST(NULL AS TEXT) AS subtype,
                       cf.kind AS kind, cf.transaction_id AS transaction_id,
                       cf.original_transaction_id AS original_transaction_id, cf.signed_date AS signed_date
                FROM cf
                UNION ALL
                SELECT 1, n.id, n.received_at, n.source, n.notification_uuid, n.notification_type, n.subtype,
                       NULL, NULL, NULL, NULL
                FROM notifications n WHERE n.id IN (SELECT notification_id FROM cf)
            )
            SELECT rank, id, received_at, source, uuid, ntype, subtype, kind, transaction_id, original_transaction_id, signed_date
            FROM h
            WHERE received_at < \(after.0) OR (received_at = \(after.0) AND (rank < \(after.1) OR (rank = \(after.1) AND id < \(after.2))))
            ORDER BY received_at DESC, rank DESC, id DESC LIMIT \(Int64(limit) + 1)
            """, as: HistoryColumns.self)
        var entries: [HistoryEntry] = []
        var lastKey: (Int64, Int64, Int64)? = nil
        for row in rows.prefix(limit) {
            let (rank, id, receivedAt) = (row.rank, row.id, row.receivedAt)
            lastKey = (receivedAt, rank, id)
            if rank == 1 {
                entries.append(
                    HistoryEntry(
                        kind: .notification, id: id, receivedAt: receivedAt, source: row.source.flatMap(IngestSource.init(rawValue:)),
                        notificationUUID: row.uuid, notificationType: row.ntype, subtype: row.subtype))
            } else {
                entries.append(
                    HistoryEntry(
                        kind: .fact, id: id, receivedAt: receivedAt, factKind: row.kind, transactionId: row.transactionId,
                        originalTransactionId: row.originalTransactionId, signedDate: row.signedDate))
            }
        }
        let next = rows.count > limit ? lastKey.map { "\($0.0).\($0.1).\($0.2)" } : nil
        return HistoryPage(entries: entries, nextCursor: next)
    }
}

/// One entry of a history page: a notification (rank 1) or a fact (rank 2).
private struct HistoryColumns: Decodable {
    var rank: Int64
    var id: Int64
    var receivedAt: Int64
    var source: String?
    var uuid: String?
    var ntype: String?
    var subtype: String?
    var kind: String?
    var transactionId: String?
    var originalTransactionId: String?
    var signedDate: Int64?
}
