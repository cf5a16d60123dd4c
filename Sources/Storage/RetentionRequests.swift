/// One retention-messaging request of the App Store and the answer chosen (table `retention_requests`).
public struct RetentionRequestRecord: Sendable, Hashable {
    /// The row id; nil before it is stored.
    public var id: Int64?
    /// Apple's `requestIdentifier` (a retried request is stored once).
    public var requestIdentifier: String
    public var bundleId: String
    public var environment: String
    public var originalTransactionId: String
    public var productId: String?
    public var locale: String?
    /// The rule that chose (`default` for the rule set's default); nil: nothing was answered.
    public var ruleId: String?
    /// `message`, `alternateProduct` or `promotionalOffer`; nil: nothing was answered.
    public var answerKind: String?
    public var messageIdentifier: String?
    public var offerId: String?
    public var alternateProductId: String?
    /// Epoch milliseconds.
    public var requestedAt: Int64
    /// `renewed` or `expired` once decided; nil while undecided.
    public var outcome: String?

    public init(
        id: Int64? = nil, requestIdentifier: String, bundleId: String, environment: String, originalTransactionId: String,
        productId: String?, locale: String?, ruleId: String?, answerKind: String?, messageIdentifier: String?, offerId: String?,
        alternateProductId: String?, requestedAt: Int64, outcome: String? = nil
    ) {
        self.id = id
        self.requestIdentifier = requestIdentifier
        self.bundleId = bundleId
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.locale = locale
        self.ruleId = ruleId
        self.answerKind = answerKind
        self.messageIdentifier = messageIdentifier
        self.offerId = offerId
        self.alternateProductId = alternateProductId
        self.requestedAt = requestedAt
        self.outcome = outcome
    }
}

/// The requests one rule answered since a time, and how many of them renewed or expired since.
public struct RetentionRuleCounts: Sendable, Hashable {
    public var bundleId: String
    /// `default` for the default; `none` for requests nothing answered.
    public var ruleId: String
    public var requests: Int
    public var renewed: Int
    public var expired: Int

    public init(bundleId: String, ruleId: String, requests: Int, renewed: Int, expired: Int) {
        self.bundleId = bundleId
        self.ruleId = ruleId
        self.requests = requests
        self.renewed = renewed
        self.expired = expired
    }
}

/// The log of retention requests, beside the ledger: appended in batches off the answer's path,
/// decided later by attribution, deleted by age.
public protocol RetentionLog: Sendable {
    /// Appends `records` in one transaction; one whose `requestIdentifier` is stored already is skipped.
    func recordRetentionRequests(_ records: [RetentionRequestRecord]) async throws

    /// Undecided requests made before `requestedBefore`, the least recently checked first, at most `limit`.
    func undecidedRetentionRequests(requestedBefore: Int64, limit: Int) async throws -> [RetentionRequestRecord]

    /// Sets each request's outcome (nil: still undecided) and when it was checked.
    func decideRetentionRequests(_ decisions: [(id: Int64, outcome: String?)], checkedAt: Int64) async throws

    /// Per app and rule, the requests made at or after `since`.
    func retentionRuleCounts(since: Int64) async throws -> [RetentionRuleCounts]

    /// Deletes the requests made before `requestedBefore`; returns how many.
    func purgeRetentionRequests(requestedBefore: Int64) async throws -> Int
}

extension SQLiteStore: RetentionLog {}
extension PostgresStore: RetentionLog {}

extension SessionBackedStore {
    private static var retentionColumns: String {
        """
        id, request_identifier, bundle_id, environment, original_transaction_id, product_id, locale, rule_id, answer_kind,
        message_identifier, offer_id, alternate_product_id, requested_at, outcome
        """
    }

    func recordRetentionRequests(_ records: [RetentionRequestRecord]) async throws {
        guard !records.isEmpty else { return }
        _ = try await write { session in
            let statements = records.map { record in
                SQLStatement(
                    """
                    INSERT INTO retention_requests (request_identifier, bundle_id, environment, original_transaction_id, product_id,
                        locale, rule_id, answer_kind, message_identifier, offer_id, alternate_product_id, requested_at, checked_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
                    ON CONFLICT (request_identifier) DO NOTHING
                    """, .text(record.requestIdentifier), .text(record.bundleId), .text(record.environment),
                    .text(record.originalTransactionId), Self.optional(record.productId), Self.optional(record.locale),
                    Self.optional(record.ruleId), Self.optional(record.answerKind), Self.optional(record.messageIdentifier),
                    Self.optional(record.offerId), Self.optional(record.alternateProductId), .int(record.requestedAt))
            }
            _ = try session.pipeline(statements)
        }
    }

    func undecidedRetentionRequests(requestedBefore: Int64, limit: Int) async throws -> [RetentionRequestRecord] {
        try await read { session in
            try session.query(
                """
                SELECT \(Self.retentionColumns) FROM retention_requests
                WHERE outcome IS NULL AND requested_at < $1 ORDER BY checked_at, id LIMIT $2
                """, .int(requestedBefore), .int(Int64(max(0, limit)))
            ).map { row in
                RetentionRequestRecord(
                    id: try row.int(0), requestIdentifier: try row.text(1), bundleId: try row.text(2), environment: try row.text(3),
                    originalTransactionId: try row.text(4), productId: try row.optionalText(5), locale: try row.optionalText(6),
                    ruleId: try row.optionalText(7), answerKind: try row.optionalText(8), messageIdentifier: try row.optionalText(9),
                    offerId: try row.optionalText(10), alternateProductId: try row.optionalText(11), requestedAt: try row.int(12),
                    outcome: try row.optionalText(13))
            }
        }
    }

    func decideRetentionRequests(_ decisions: [(id: Int64, outcome: String?)], checkedAt: Int64) async throws {
        guard !decisions.isEmpty else { return }
        let statements = decisions.map { decision in
            SQLStatement(
                "UPDATE retention_requests SET outcome = $1, checked_at = $2 WHERE id = $3",
                Self.optional(decision.outcome), .int(checkedAt), .int(decision.id))
        }
        _ = try await write { session in _ = try session.pipeline(statements) }
    }

    func retentionRuleCounts(since: Int64) async throws -> [RetentionRuleCounts] {
        try await read { session in
            try session.query(
                """
                SELECT bundle_id, COALESCE(rule_id, 'none'), COUNT(*),
                    SUM(CASE WHEN outcome = 'renewed' THEN 1 ELSE 0 END), SUM(CASE WHEN outcome = 'expired' THEN 1 ELSE 0 END)
                FROM retention_requests WHERE requested_at >= $1
                GROUP BY bundle_id, COALESCE(rule_id, 'none') ORDER BY bundle_id, COALESCE(rule_id, 'none')
                """, .int(since)
            ).map { row in
                RetentionRuleCounts(
                    bundleId: try row.text(0), ruleId: try row.text(1), requests: Int(try row.int(2)), renewed: Int(try row.int(3)),
                    expired: Int(try row.int(4)))
            }
        }
    }

    func purgeRetentionRequests(requestedBefore: Int64) async throws -> Int {
        try await write { session in
            let count = try session.query(
                "SELECT COUNT(*) FROM retention_requests WHERE requested_at < $1", .int(requestedBefore)
            ).first?.int(0) ?? 0
            if count > 0 { try session.query("DELETE FROM retention_requests WHERE requested_at < $1", .int(requestedBefore)) }
            return Int(count)
        }
    }

    private static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
}
