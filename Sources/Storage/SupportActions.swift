// The audit record of support actions: what an operator asked Apple about or changed at Apple
// through the server (an order lookup, a refund lookup, a renewal-date extension). Each is a
// `customer_events` row of kind `support.<action>` per customer it concerned (or one with no
// customer), so it is exported and erased with the customer like the other records of them.

/// One support action, as recorded.
public struct SupportAction: Sendable, Hashable {
    /// The action: `order_lookup`, `refund_lookup` or `extend` (stored as `support.<action>`).
    public var action: String
    /// What it was about: the order id or originalTransactionId (at most ``maxSubject`` bytes kept).
    public var subject: String
    /// The API key's name.
    public var actor: String?
    /// A JSON object: the outcome (`OK` or the problem code) and the request's parameters (at most
    /// ``maxDetail`` bytes kept; a longer one is replaced by its outcome alone).
    public var detail: String
    public var recordedAt: Int64
    /// On reads: the customer it concerned (the id it was recorded under).
    public var appUserId: String?

    public static let maxSubject = 256
    public static let maxDetail = 2_000
    /// Most rows one action writes (one per customer it concerned).
    public static let maxCustomers = 20

    public init(action: String, subject: String, actor: String?, detail: String, recordedAt: Int64, appUserId: String? = nil) {
        self.action = action
        self.subject = subject
        self.actor = actor
        self.detail = detail
        self.recordedAt = recordedAt
        self.appUserId = appUserId
    }
}

extension SessionBackedStore {
    func recordSupportAction(_ action: SupportAction, appUserIds: [String]) async throws {
        let subject = String(decoding: action.subject.utf8.prefix(SupportAction.maxSubject), as: UTF8.self)
        let detail = action.detail.utf8.count <= SupportAction.maxDetail ? action.detail : #"{"truncated":true}"#
        let actor = action.actor.map { String($0.prefix(200)) }
        try await write { session in
            let ids = Array(Set(appUserIds).sorted().prefix(SupportAction.maxCustomers))
            var statements: [SQLQuery] = ids.map { id in
                (
                    """
                    INSERT INTO customer_events (kind, customer_id, subject, actor, detail, recorded_at)
                    SELECT \("support." + action.action), COALESCE(merged_into, id), \(subject), \(actor), \(detail), \(action.recordedAt) FROM customers WHERE app_user_id = \(id)
                    """ as SQLQuery)
            }
            if statements.isEmpty {
                statements.append(
                    (
                        """
                        INSERT INTO customer_events (kind, customer_id, subject, actor, detail, recorded_at)
                        VALUES (\("support." + action.action), NULL, \(subject), \(actor), \(detail), \(action.recordedAt))
                        """ as SQLQuery))
            }
            _ = try session.pipeline(statements)
        }
    }

    func supportActions(appUserId: String, limit: Int) async throws -> [SupportAction] {
        try await read { session in
            try session.rows(
                """
                SELECT e.kind, e.subject, e.actor, e.detail, e.recorded_at FROM customer_events e
                WHERE e.customer_id = (SELECT COALESCE(merged_into, id) FROM customers WHERE app_user_id = \(appUserId))
                  AND e.kind LIKE 'support.%' ORDER BY e.id DESC LIMIT \(Int64(max(1, min(limit, 1000))))
                """, as: SupportActionColumns.self
            ).map { row in
                SupportAction(
                    action: String(row.kind.dropFirst("support.".count)), subject: row.subject ?? "", actor: row.actor,
                    detail: row.detail ?? "{}", recordedAt: row.recordedAt, appUserId: appUserId)
            }
        }
    }
}

/// A recorded support action's columns.
private struct SupportActionColumns: Decodable {
    var kind: String
    var subject: String?
    var actor: String?
    var detail: String?
    var recordedAt: Int64
}
