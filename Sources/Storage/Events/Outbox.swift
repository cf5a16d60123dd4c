import Entitlements
import Foundation

/// An event in the outbox (table `events`): a change of a customer's answer, written in the same
/// transaction as the ledger append that caused it.
public struct OutboxEvent: Sendable, Hashable {
    /// Commit order (the feed's cursor): increases with every event appended.
    public var sequence: Int64
    /// Stable id (`evt_…`): the same on every retry and every replay of the change.
    public var id: String
    /// The event type, e.g. `subscription.renewed`.
    public var type: String
    public var appUserId: String?
    public var appAccountToken: String?
    public var environment: String?
    public var bundleId: String?
    public var productId: String?
    public var originalTransactionId: String?
    /// Entitlement ids the event affects, sorted.
    public var entitlements: [String]
    /// Type-specific fields (`from`, `to`, `timing`, `kind`, `reason`).
    public var details: [String: String]
    /// What caused it: `notificationUUID`, `notificationType`, `subtype`, `transactionIds` (JSON object text).
    public var cause: String
    /// When it happened at Apple (ms since the epoch).
    public var occurredAt: Int64
    /// When it was committed (ms since the epoch).
    public var recordedAt: Int64
    /// The customer's answer after it: their state document as reads serve it (empty when none).
    public var answer: [UInt8]

    public init(
        sequence: Int64, id: String, type: String, appUserId: String?, appAccountToken: String?, environment: String?,
        bundleId: String?, productId: String?, originalTransactionId: String?, entitlements: [String], details: [String: String],
        cause: String, occurredAt: Int64, recordedAt: Int64, answer: [UInt8]
    ) {
        self.sequence = sequence
        self.id = id
        self.type = type
        self.appUserId = appUserId
        self.appAccountToken = appAccountToken
        self.environment = environment
        self.bundleId = bundleId
        self.productId = productId
        self.originalTransactionId = originalTransactionId
        self.entitlements = entitlements
        self.details = details
        self.cause = cause
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
        self.answer = answer
    }
}

/// The outbox read side: the durable event stream in commit order.
public protocol EventStore: Sendable {
    /// Events with a sequence above `after`, in commit order, at most `limit` (1…1000).
    func events(after: Int64, limit: Int) async throws -> [OutboxEvent]
    /// Appends an event that no ledger change caused (the `test` event); a repeated id is kept once.
    /// Returns the stored event (the earlier one for a repeated id).
    func appendEvent(_ event: OutboxEvent) async throws -> OutboxEvent
    /// Replaces the erased ids a `customer.deleted` event names by a tombstone (ids and token
    /// nulled, `details` `{"erased":"true"}`, its deliveries' customer key the event id) once it
    /// was recorded before `recordedBefore`, every endpoint's cursor has passed it and none of its
    /// deliveries is pending. Returns how many events it scrubbed.
    func scrubErasureEvents(recordedBefore: Int64) async throws -> Int
}

extension SessionBackedStore {
    func events(after: Int64, limit: Int) async throws -> [OutboxEvent] {
        let limit = Int64(min(max(limit, 1), 1000))
        return try await read { session in
            try session.query("SELECT \(Ledger.eventColumns) FROM events WHERE seq > $1 ORDER BY seq LIMIT $2", .int(after), .int(limit))
                .map(Ledger.decodeEvent)
        }
    }

    func appendEvent(_ event: OutboxEvent) async throws -> OutboxEvent {
        try await write { session in
            let ledger = Ledger(session: session, fault: nil)
            try ledger.insertEvent(event, customerID: nil)
            return try session.query("SELECT \(Ledger.eventColumns) FROM events WHERE event_id = $1", .text(event.id))
                .map(Ledger.decodeEvent)[0]
        }
    }
}

extension SessionBackedStore {
    func scrubErasureEvents(recordedBefore: Int64) async throws -> Int {
        try await write { session in
            let ids = try session.query(
                """
                SELECT event_id FROM events e WHERE e.type = 'customer.deleted' AND e.app_user_id IS NOT NULL AND e.recorded_at < $1
                    AND NOT EXISTS (SELECT 1 FROM webhook_cursors c WHERE c.after_seq < e.seq)
                    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.event_id AND d.status = 'pending')
                """, .int(recordedBefore)
            ).map { try $0.text(0) }
            for id in ids {
                try session.pipeline([
                    SQLStatement(
                        "UPDATE events SET app_user_id = NULL, app_account_token = NULL, details = $2 WHERE event_id = $1", .text(id),
                        .text(#"{"erased":"true"}"#)),
                    SQLStatement("UPDATE webhook_deliveries SET customer_key = $1 WHERE event_id = $1", .text(id)),
                ])
            }
            return ids.count
        }
    }
}

extension Ledger {
    static let eventColumns = """
        seq, event_id, type, app_user_id, app_account_token, environment, bundle_id, product_id, original_transaction_id,
        entitlements, details, cause, occurred_at, recorded_at, answer
        """

    static func decodeEvent(_ row: SQLRow) throws -> OutboxEvent {
        let entitlements = (try? JSONDecoder().decode([String].self, from: Data(try row.text(9).utf8))) ?? []
        let details = (try? JSONDecoder().decode([String: String].self, from: Data(try row.text(10).utf8))) ?? [:]
        return OutboxEvent(
            sequence: try row.int(0), id: try row.text(1), type: try row.text(2), appUserId: try row.optionalText(3),
            appAccountToken: try row.optionalText(4), environment: try row.optionalText(5), bundleId: try row.optionalText(6),
            productId: try row.optionalText(7), originalTransactionId: try row.optionalText(8), entitlements: entitlements,
            details: details, cause: try row.text(11), occurredAt: try row.int(12), recordedAt: try row.int(13),
            answer: Array(try row.text(14).utf8))
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// Appends an event unless one with its id is stored (a replay of the same change).
    /// - Returns: whether it was new.
    @discardableResult
    func insertEvent(_ event: OutboxEvent, customerID: Int64?) throws -> Bool {
        // PostgreSQL: `seq` is drawn at the insert but seen at the commit, so concurrent appenders
        // could commit out of `seq` order and a reader paging by `seq` skip one. This transaction
        // lock, held to the commit, makes appends commit in `seq` order.
        // One lock per schema: servers of other schemas in the database never wait for it.
        if isPostgres { _ = try session.query("SELECT pg_advisory_xact_lock(hashtextextended('entitled.events.' || current_schema(), 0))") }
        return try !session.query(
            """
            INSERT INTO events (event_id, type, customer_id, app_user_id, app_account_token, environment, bundle_id, product_id,
                                original_transaction_id, entitlements, details, cause, occurred_at, recorded_at, answer)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
            ON CONFLICT (event_id) DO NOTHING RETURNING seq
            """,
            .text(event.id), .text(event.type), SQLValue(customerID), SQLValue(event.appUserId), SQLValue(event.appAccountToken),
            SQLValue(event.environment), SQLValue(event.bundleId), SQLValue(event.productId), SQLValue(event.originalTransactionId),
            .text(Self.json(event.entitlements)), .text(Self.json(event.details)), .text(event.cause), .int(event.occurredAt),
            .int(event.recordedAt), .text(String(decoding: event.answer, as: UTF8.self))
        ).isEmpty
    }

    /// Writes the events of a customer's answer changing, derived from their history rather than
    /// from the stored answer, so that the order facts arrive in does not matter: the answer after
    /// each fact from the earliest one this message brought (evaluated when that fact happened,
    /// and again just before the next one, so that lapses in between show), then at `now`; each
    /// change between consecutive answers is an event (``EventDerivation``), kept once by its id.
    func emitEvents(
        for customer: CustomerRecord, facts: [Fact], signedDates: [Int64],
        after: (projection: CustomerProjection, periods: [String: SubscriptionPeriod]), projector: any Projector,
        cause: EventCause, now: Int64
    ) throws {
        let first = signedDates.firstIndex { $0 >= cause.earliestSignedDate } ?? facts.count
        var previous: Step? = nil
        var steps: [(Step, EventCause)] = []
        func answer(_ count: Int, at time: Int64) -> Step {
            let (rows, _, periods) = projector.rows(facts: Array(facts[..<count]), now: time)
            return Step(rows: rows, periods: periods)
        }
        if first > 0 {
            previous = answer(first, at: signedDates[first - 1])
            if first < facts.count { steps.append((answer(first, at: signedDates[first] - 1), cause.at(signedDates[first] - 1))) }
        }
        if first < facts.count {
            // Facts of one instant are one change.
            for index in first..<facts.count where index + 1 == facts.count || signedDates[index + 1] != signedDates[index] {
                steps.append((answer(index + 1, at: signedDates[index]), cause.at(signedDates[index])))
                if index + 1 < facts.count {
                    steps.append((answer(index + 1, at: signedDates[index + 1] - 1), cause.at(signedDates[index + 1] - 1)))
                }
            }
        }
        // The answer at `now`: the projection's own (no evaluation of its own).
        var final = after.projection
        final.state = []
        steps.append((Step(rows: final, periods: after.periods), cause.at(max(cause.occurredAt, signedDates.last ?? 0))))
        let causeText = Self.json(cause.citation)
        for (answer, stepCause) in steps {
            defer { previous = answer }
            guard previous != answer else { continue }
            let events = EventDerivation.events(
                appUserId: customer.appUserId, before: previous?.rows, after: answer.rows, cause: stepCause,
                periods: (previous?.periods ?? [:], answer.periods))
            for event in events {
                try insertEvent(
                    OutboxEvent(
                        sequence: 0, id: event.id, type: event.type, appUserId: customer.appUserId,
                        appAccountToken: customer.appAccountToken, environment: event.environment, bundleId: cause.bundleId,
                        productId: event.productId, originalTransactionId: event.originalTransactionId,
                        entitlements: event.entitlements, details: event.details, cause: causeText,
                        occurredAt: event.occurredAt ?? stepCause.occurredAt, recordedAt: now, answer: after.projection.state),
                    customerID: customer.id)
            }
        }
    }
}

/// One instant of a customer's history as events compare it.
private struct Step: Equatable {
    var rows: CustomerProjection
    var periods: [String: SubscriptionPeriod]
}

extension EventCause {
    /// What an event cites as its cause.
    struct Citation: Encodable {
        var notificationUUID: String?
        var notificationType: String?
        var subtype: String?
        var transactionIds: [String]
    }

    /// The same cause, at the instant of one step of the history.
    func at(_ instant: Int64) -> EventCause {
        var copy = self
        copy.occurredAt = instant
        return copy
    }

    var citation: Citation {
        Citation(notificationUUID: notificationUUID, notificationType: notificationType, subtype: subtype, transactionIds: transactionIds)
    }
}

extension Ledger {
    /// Events a message is by itself rather than by a change of an answer: a restore that moved a
    /// subscription (`customer.transferred`, for the new owner) and Apple asking for consumption
    /// information (`consumption.requested`, for the subscription's owner).
    func emitMessageEvents(
        _ message: ReceivedMessage, links: [LinkResult], otids: [String], cause: EventCause, now: Int64
    ) throws {
        var events: [(String, String, [String: String])] = []
        for link in links {
            if case .transferred(let from) = link.outcome {
                events.append(("customer.transferred", link.originalTransactionId, ["from": from]))
            }
        }
        if message.notificationType == "CONSUMPTION_REQUEST" {
            for otid in otids { events.append(("consumption.requested", otid, [:])) }
        }
        for (type, otid, details) in events {
            guard let owner = try owner(of: otid) else { continue }
            let stored = try storedState(customerID: owner.id)
            let row = stored?.projection.subscriptions.first { $0.originalTransactionId == otid }
            // Keyed by the causing message: each restore or request is its own event.
            let key = [otid, details["from"] ?? "", cause.notificationUUID ?? cause.factDigest ?? ""]
            let event = OutboxEvent(
                sequence: 0, id: EventDerivation.eventID(appUserId: owner.appUserId, type: type, key: key), type: type,
                appUserId: owner.appUserId, appAccountToken: owner.appAccountToken, environment: row?.environment,
                bundleId: cause.bundleId, productId: row?.productId, originalTransactionId: otid,
                entitlements: (stored?.projection.entitlements ?? []).filter { $0.originalTransactionId == otid }.map(\.entitlement).sorted(),
                details: details, cause: Self.json(cause.citation), occurredAt: cause.occurredAt, recordedAt: now,
                answer: stored?.projection.state ?? [])
            try insertEvent(event, customerID: owner.id)
        }
    }
}
