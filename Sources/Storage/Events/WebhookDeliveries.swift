/// One event's delivery to one webhook endpoint (table `webhook_deliveries`).
///
/// Deliveries are created from the outbox by ``WebhookDeliveryStore/fanOut(endpoint:wants:limit:now:)``,
/// attempted by whoever holds their lease, and end `delivered` (a 2xx answer) or `failed` (retries
/// exhausted); a retry through the admin API makes a delivery pending again.
public struct WebhookDelivery: Sendable, Hashable {
    public var id: Int64
    /// The endpoint's URL (its identity in the configuration).
    public var endpoint: String
    /// The event's outbox sequence, id and type.
    public var eventSequence: Int64
    public var eventId: String
    public var eventType: String
    /// Deliveries of one key reach their endpoint in event order: the customer (appUserId; empty
    /// for events of no customer, e.g. `test`).
    public var customerKey: String
    public var status: WebhookDeliveryStatus
    /// Attempts started so far.
    public var attempts: Int
    /// When the next attempt is due (epoch ms).
    public var nextAttemptAt: Int64
    /// When the first and the latest attempt started (epoch ms); nil before any.
    public var firstAttemptAt: Int64?
    public var lastAttemptAt: Int64?
    /// The latest attempt's HTTP status (nil: none arrived) and failure, bounded.
    public var lastStatus: Int?
    public var lastError: String?
    public var createdAt: Int64
    public var updatedAt: Int64
}

/// Where a delivery is in its life.
public enum WebhookDeliveryStatus: String, Sendable, Hashable, CaseIterable {
    /// Waiting for `nextAttemptAt`, or being attempted under a lease.
    case pending
    /// The endpoint answered 2xx.
    case delivered
    /// Retries exhausted (`maxRetryHours`); the admin API can retry it.
    case failed
}

/// How an attempt ended (``WebhookDeliveryStore/finishDelivery(_:owner:outcome:now:)``).
public enum WebhookAttemptOutcome: Sendable, Hashable {
    case delivered(status: Int)
    /// Try again at `at` (epoch ms); `status` is the answer's, nil when none arrived.
    case retry(at: Int64, status: Int?, error: String)
    case failed(status: Int?, error: String)
}

/// A claimed delivery and the event it carries.
public struct ClaimedDelivery: Sendable, Hashable {
    public var delivery: WebhookDelivery
    public var event: OutboxEvent
}

/// Webhook delivery bookkeeping, on both SQLite and PostgreSQL.
public protocol WebhookDeliveryStore: Sendable {
    /// Creates the deliveries of events committed since the endpoint's cursor that `wants` keeps
    /// (type and environment), at most `limit` events read, and moves the cursor past them — in one
    /// transaction, idempotent (a repeated event is kept once). An endpoint seen for the first time
    /// starts after the newest event: it receives what is committed from then on.
    /// - Returns: events read (less than `limit`: the endpoint is caught up).
    func fanOut(endpoint: String, wants: @escaping @Sendable (_ type: String, _ environment: String?) -> Bool, limit: Int, now: Int64)
        async throws -> Int

    /// Claims up to `limit` due pending deliveries of `endpoint` for `owner` until `leaseUntil`,
    /// counting an attempt: never one under another owner's unexpired lease, and never one of a
    /// customer whose earlier delivery to this endpoint is still pending (in flight or waiting for
    /// a retry), so each customer's events arrive in order. Atomic on both backends.
    func claimDeliveries(endpoint: String, owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [ClaimedDelivery]

    /// Records how `owner`'s attempt ended; false when `owner` no longer holds the lease.
    func finishDelivery(_ id: Int64, owner: String, outcome: WebhookAttemptOutcome, now: Int64) async throws -> Bool

    /// ``finishDelivery(_:owner:outcome:now:)`` of `finished`, then
    /// ``claimDeliveries(endpoint:owner:now:leaseUntil:limit:)``, in one transaction (one commit
    /// per attempt instead of two).
    func finishAndClaim(
        _ finished: (id: Int64, outcome: WebhookAttemptOutcome), endpoint: String, owner: String, now: Int64, leaseUntil: Int64,
        limit: Int
    ) async throws -> [ClaimedDelivery]

    /// Deliveries, newest first, optionally only those with `status`, with ids below `before`
    /// (the cursor; nil: from the newest); at most `limit` (1…1000).
    func deliveries(status: WebhookDeliveryStatus?, before: Int64?, limit: Int) async throws -> [WebhookDelivery]

    /// Makes a delivery pending and due at `now` (a new retry window; an attempt in flight keeps
    /// its lease and records its outcome); nil when there is none.
    func retryDelivery(_ id: Int64, now: Int64) async throws -> WebhookDelivery?

    /// Pending deliveries of each endpoint (the backlog gauge).
    func pendingDeliveries() async throws -> [String: Int]

    /// The console's status of `endpoints`, in that order: index ranges only, never a scan of
    /// the delivered history.
    func webhookStatus(endpoints: [String]) async throws -> [WebhookEndpointStatus]

    /// The newest `limit` deliveries (1…1000) of one customer's events to `endpoints`, newest first.
    func deliveries(customerKey: String, endpoints: [String], limit: Int) async throws -> [WebhookDelivery]
}

/// One endpoint's deliveries at a glance (the console's health page).
public struct WebhookEndpointStatus: Sendable, Hashable {
    public var endpoint: String
    /// Deliveries waiting or in flight (the backlog).
    public var pending: Int
    /// Deliveries whose retries ran out.
    public var failed: Int
    /// When the attempt that delivered the newest delivered event started; nil: none delivered.
    public var lastDeliveredAt: Int64?

    public init(endpoint: String, pending: Int, failed: Int, lastDeliveredAt: Int64?) {
        self.endpoint = endpoint
        self.pending = pending
        self.failed = failed
        self.lastDeliveredAt = lastDeliveredAt
    }
}


extension SessionBackedStore {
    static var deliveryColumns: SQLQuery {
        """
        id, endpoint, event_seq, event_id, event_type, customer_key, status, attempts, next_attempt_at, first_attempt_at,
        last_attempt_at, last_status, last_error, created_at, updated_at
        """
    }

    static func decodeDelivery(_ row: SQLRow) throws -> WebhookDelivery {
        let delivery = try row.decode(DeliveryColumns.self)
        return WebhookDelivery(
            id: delivery.id, endpoint: delivery.endpoint, eventSequence: delivery.eventSeq, eventId: delivery.eventId,
            eventType: delivery.eventType, customerKey: delivery.customerKey,
            status: WebhookDeliveryStatus(rawValue: delivery.status) ?? .failed, attempts: delivery.attempts,
            nextAttemptAt: delivery.nextAttemptAt, firstAttemptAt: delivery.firstAttemptAt, lastAttemptAt: delivery.lastAttemptAt,
            lastStatus: delivery.lastStatus, lastError: delivery.lastError, createdAt: delivery.createdAt,
            updatedAt: delivery.updatedAt)
    }

    func fanOut(endpoint: String, wants: @escaping @Sendable (String, String?) -> Bool, limit: Int, now: Int64) async throws -> Int {
        try await write { session in
            guard let after = try session.value("SELECT after_seq FROM webhook_cursors WHERE endpoint = \(endpoint)", as: Int64.self)
            else {
                let newest = try session.value("SELECT COALESCE(MAX(seq), 0) FROM events", as: Int64.self) ?? 0
                try session.query(
                    "INSERT INTO webhook_cursors (endpoint, after_seq) VALUES (\(endpoint), \(newest)) ON CONFLICT (endpoint) DO NOTHING")
                return 0
            }
            let rows = try session.rows(
                "SELECT seq, event_id, type, environment, app_user_id FROM events WHERE seq > \(after) ORDER BY seq LIMIT \(Int64(max(1, limit)))",
                as: FanOutEvent.self)
            guard let last = rows.last?.seq else { return 0 }
            var statements: [SQLQuery] = []
            for row in rows where wants(row.type, row.environment) {
                statements.append(
                    (
                        """
                        INSERT INTO webhook_deliveries (endpoint, event_seq, event_id, event_type, customer_key, status, attempts,
                            next_attempt_at, created_at, updated_at)
                        VALUES (\(endpoint), \(row.seq), \(row.eventId), \(row.type), \(row.appUserId ?? ""), 'pending', 0, \(now), \(now), \(now))
                        ON CONFLICT (endpoint, event_id) DO NOTHING
                        """ as SQLQuery))
            }
            // Only forward: another server's fan-out may have gone further meanwhile.
            statements.append(
                (
                    "UPDATE webhook_cursors SET after_seq = \(last) WHERE endpoint = \(endpoint) AND after_seq < \(last)" as SQLQuery))
            _ = try session.pipeline(statements)
            return rows.count
        }
    }

    func claimDeliveries(endpoint: String, owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [ClaimedDelivery] {
        guard limit > 0 else { return [] }
        return try await write { session in
            try Self.claim(session, endpoint: endpoint, owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
        }
    }

    func finishAndClaim(
        _ finished: (id: Int64, outcome: WebhookAttemptOutcome), endpoint: String, owner: String, now: Int64, leaseUntil: Int64,
        limit: Int
    ) async throws -> [ClaimedDelivery] {
        try await write { session in
            try Self.finish(session, finished.id, owner: owner, outcome: finished.outcome, now: now)
            guard limit > 0 else { return [] }
            return try Self.claim(session, endpoint: endpoint, owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
        }
    }

    static func claim(
        _ session: any SQLSession, endpoint: String, owner: String, now: Int64, leaseUntil: Int64, limit: Int
    ) throws -> [ClaimedDelivery] {
        // PostgreSQL: a concurrent claimer skips the rows another holds (`SKIP LOCKED`) and takes
        // the next eligible ones; the lease condition is repeated outside the subquery for a row
        // whose lock was released meanwhile. SQLite has one writer.
        let skipLocked: SQLQuery = session.dialect == .postgres ? " FOR UPDATE OF d SKIP LOCKED" : ""
        let claimed = try session.query(
            """
            UPDATE webhook_deliveries SET lease_owner = \(owner), lease_expires_at = \(leaseUntil), attempts = attempts + 1,
                first_attempt_at = COALESCE(first_attempt_at, \(now)), last_attempt_at = \(now), updated_at = \(now)
            WHERE id IN (
                SELECT d.id FROM webhook_deliveries d
                WHERE d.endpoint = \(endpoint) AND d.status = 'pending' AND d.next_attempt_at <= \(now)
                    AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= \(now))
                    AND NOT EXISTS (
                        SELECT 1 FROM webhook_deliveries e
                        WHERE e.endpoint = d.endpoint AND e.customer_key = d.customer_key AND e.status = 'pending'
                            AND e.event_seq < d.event_seq)
                ORDER BY d.event_seq LIMIT \(Int64(limit))\(skipLocked))
            AND status = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= \(now))
            RETURNING \(Self.deliveryColumns)
            """).map(Self.decodeDelivery)
        guard !claimed.isEmpty else { return [] }
        var events: [Int64: OutboxEvent] = [:]
        for delivery in claimed {
            let rows = try session.query(
                "SELECT \(Ledger.eventColumns) FROM events WHERE seq = \(delivery.eventSequence)")
            if let event = try Ledger.decodeEvents(rows, session: session).first { events[delivery.eventSequence] = event }
        }
        return claimed.sorted { $0.eventSequence < $1.eventSequence }.compactMap { delivery in
            events[delivery.eventSequence].map { ClaimedDelivery(delivery: delivery, event: $0) }
        }
    }

    func finishDelivery(_ id: Int64, owner: String, outcome: WebhookAttemptOutcome, now: Int64) async throws -> Bool {
        try await write { session in try Self.finish(session, id, owner: owner, outcome: outcome, now: now) }
    }

    @discardableResult
    static func finish(_ session: any SQLSession, _ id: Int64, owner: String, outcome: WebhookAttemptOutcome, now: Int64) throws -> Bool {
        let (status, nextAttempt, httpStatus, error): (WebhookDeliveryStatus, Int64?, Int?, String?) =
        switch outcome {
        case .delivered(let status): (.delivered, nil, status, nil)
        case .retry(let at, let status, let error): (.pending, at, status, error)
        case .failed(let status, let error): (.failed, nil, status, error)
        }
        return try !session.query(
            """
            UPDATE webhook_deliveries SET status = \(status.rawValue), next_attempt_at = COALESCE(\(nextAttempt), next_attempt_at), last_status = \(httpStatus.map { Int64($0) }),
                last_error = \(error.map { String($0.prefix(1000)) }), lease_owner = NULL, lease_expires_at = NULL, updated_at = \(now)
            WHERE id = \(id) AND lease_owner = \(owner) AND status = 'pending'
            RETURNING id
            """).isEmpty
    }

    func deliveries(status: WebhookDeliveryStatus?, before: Int64?, limit: Int) async throws -> [WebhookDelivery] {
        guard (1...1000).contains(limit) else { throw StorageError(.invalidArgument, "limit must be 1…1000") }
        return try await read { session in
            try session.query(
                """
                SELECT \(Self.deliveryColumns) FROM webhook_deliveries
                WHERE (\(status?.rawValue ?? "") = '' OR status = \(status?.rawValue ?? "")) AND id < \(before ?? .max) ORDER BY id DESC LIMIT \(Int64(limit))
                """).map(Self.decodeDelivery)
        }
    }

    func retryDelivery(_ id: Int64, now: Int64) async throws -> WebhookDelivery? {
        try await write { session in
            try session.query(
                """
                UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = \(now), first_attempt_at = NULL, updated_at = \(now)
                WHERE id = \(id)
                RETURNING \(Self.deliveryColumns)
                """).first.map(Self.decodeDelivery)
        }
    }

    func pendingDeliveries() async throws -> [String: Int] {
        try await read { session in
            var counts: [String: Int] = [:]
            for row in try session.rows(
                "SELECT endpoint, COUNT(*) AS pending FROM webhook_deliveries WHERE status = 'pending' GROUP BY endpoint", as: PendingCount.self)
            {
                counts[row.endpoint] = row.pending
            }
            return counts
        }
    }

    func webhookStatus(endpoints: [String]) async throws -> [WebhookEndpointStatus] {
        try await read { session in
            try endpoints.map { endpoint in
                // Each a range of `webhook_deliveries_due` (endpoint, status, event_seq).
                func count(_ status: WebhookDeliveryStatus) throws -> Int {
                    Int(try session.value(
                        "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint = \(endpoint) AND status = \(status.rawValue)", as: Int64.self) ?? 0)
                }
                let last = try (session.value(
                    """
                    SELECT last_attempt_at FROM webhook_deliveries WHERE endpoint = \(endpoint) AND status = 'delivered'
                    ORDER BY event_seq DESC LIMIT 1
                    """, as: Int64?.self) ?? nil)
                return WebhookEndpointStatus(endpoint: endpoint, pending: try count(.pending), failed: try count(.failed), lastDeliveredAt: last)
            }
        }
    }

    func deliveries(customerKey: String, endpoints: [String], limit: Int) async throws -> [WebhookDelivery] {
        let limit = min(max(limit, 1), 1000)
        return try await read { session in
            // Per endpoint a range of `webhook_deliveries_order` (endpoint, customer_key, …).
            let all = try endpoints.flatMap { endpoint in
                try session.query(
                    """
                    SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE endpoint = \(endpoint) AND customer_key = \(customerKey)
                    ORDER BY id DESC LIMIT \(Int64(limit))
                    """).map(Self.decodeDelivery)
            }
            return Array(all.sorted { $0.id > $1.id }.prefix(limit))
        }
    }
}

/// A delivery's columns (``SessionBackedStore/deliveryColumns``).
private struct DeliveryColumns: Decodable {
    var id: Int64
    var endpoint: String
    var eventSeq: Int64
    var eventId: String
    var eventType: String
    var customerKey: String
    var status: String
    var attempts: Int
    var nextAttemptAt: Int64
    var firstAttemptAt: Int64?
    var lastAttemptAt: Int64?
    var lastStatus: Int?
    var lastError: String?
    var createdAt: Int64
    var updatedAt: Int64
}

/// An event as the fan-out reads it.
private struct FanOutEvent: Decodable {
    var seq: Int64
    var eventId: String
    var type: String
    var environment: String?
    var appUserId: String?
}

/// An endpoint's pending deliveries.
private struct PendingCount: Decodable {
    var endpoint: String
    var pending: Int
}
