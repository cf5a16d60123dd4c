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

extension SessionBackedStore {
    private static var retentionColumns: SQLQuery {
        """
        id, request_identifier, bundle_id, environment, original_transaction_id, product_id, locale, rule_id, answer_kind,
        message_identifier, offer_id, alternate_product_id, requested_at, outcome
        """
    }

    func recordRetentionRequests(_ records: [RetentionRequestRecord]) async throws {
        guard !records.isEmpty else { return }
        _ = try await write { session in
            let statements = records.map { record -> SQLQuery in
                """
                INSERT INTO retention_requests (request_identifier, bundle_id, environment, original_transaction_id, product_id,
                    locale, rule_id, answer_kind, message_identifier, offer_id, alternate_product_id, requested_at, checked_at)
                VALUES (\(record.requestIdentifier), \(record.bundleId), \(record.environment), \(record.originalTransactionId),
                    \(record.productId), \(record.locale), \(record.ruleId), \(record.answerKind), \(record.messageIdentifier),
                    \(record.offerId), \(record.alternateProductId), \(record.requestedAt), \(record.requestedAt))
                ON CONFLICT (request_identifier) DO NOTHING
                """
            }
            _ = try session.pipeline(statements)
        }
    }

    func undecidedRetentionRequests(requestedBefore: Int64, limit: Int) async throws -> [RetentionRequestRecord] {
        try await read { session in
            try session.rows(
                """
                SELECT \(Self.retentionColumns) FROM retention_requests
                WHERE outcome IS NULL AND requested_at < \(requestedBefore) ORDER BY checked_at, id LIMIT \(Int64(max(0, limit)))
                """, as: RetentionRequestColumns.self
            ).map { row in
                RetentionRequestRecord(
                    id: row.id, requestIdentifier: row.requestIdentifier, bundleId: row.bundleId, environment: row.environment,
                    originalTransactionId: row.originalTransactionId, productId: row.productId, locale: row.locale,
                    ruleId: row.ruleId, answerKind: row.answerKind, messageIdentifier: row.messageIdentifier,
                    offerId: row.offerId, alternateProductId: row.alternateProductId, requestedAt: row.requestedAt,
                    outcome: row.outcome)
            }
        }
    }

    func decideRetentionRequests(_ decisions: [(id: Int64, outcome: String?)], checkedAt: Int64) async throws {
        guard !decisions.isEmpty else { return }
        let statements = decisions.map { decision -> SQLQuery in
            "UPDATE retention_requests SET outcome = \(decision.outcome), checked_at = \(checkedAt) WHERE id = \(decision.id)"
        }
        _ = try await write { session in _ = try session.pipeline(statements) }
    }

    func retentionRuleCounts(since: Int64) async throws -> [RetentionRuleCounts] {
        try await read { session in
            try session.rows(
                """
                SELECT bundle_id, COALESCE(rule_id, 'none') AS rule_id, COUNT(*) AS requests,
                    SUM(CASE WHEN outcome = 'renewed' THEN 1 ELSE 0 END) AS renewed,
                    SUM(CASE WHEN outcome = 'expired' THEN 1 ELSE 0 END) AS expired
                FROM retention_requests WHERE requested_at >= \(since)
                GROUP BY bundle_id, COALESCE(rule_id, 'none') ORDER BY bundle_id, COALESCE(rule_id, 'none')
                """, as: RuleCountColumns.self
            ).map { row in
                RetentionRuleCounts(
                    bundleId: row.bundleId, ruleId: row.ruleId, requests: Int(row.requests), renewed: Int(row.renewed),
                    expired: Int(row.expired))
            }
        }
    }

    func purgeRetentionRequests(requestedBefore: Int64) async throws -> Int {
        try await write { session in
            let count = try session.value(
                "SELECT COUNT(*) FROM retention_requests WHERE requested_at < \(requestedBefore)", as: Int64.self) ?? 0
            if count > 0 { try session.query("DELETE FROM retention_requests WHERE requested_at < \(requestedBefore)") }
            return Int(count)
        }
    }
}

private struct RetentionRequestColumns: Decodable {
    var id: Int64
    var requestIdentifier: String
    var bundleId: String
    var environment: String
    var originalTransactionId: String
    var productId: String?
    var locale: String?
    var ruleId: String?
    var answerKind: String?
    var messageIdentifier: String?
    var offerId: String?
    var alternateProductId: String?
    var requestedAt: Int64
    var outcome: String?
}

private struct RuleCountColumns: Decodable {
    var bundleId: String
    var ruleId: String
    var requests: Int64
    var renewed: Int64
    var expired: Int64
}
