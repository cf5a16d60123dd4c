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
        // The event is appended at the commit (``TransactionTail``): read back once committed.
        try await write { session in Ledger(session: session, fault: nil).insertEvent(event, customerID: nil) }
        return try await write { session in
            try session.query("SELECT \(Ledger.eventColumns) FROM events WHERE event_id = $1", .text(event.id))
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

    /// Appends an event unless one with its id is stored (a replay of the same change), at the
    /// transaction's commit (``TransactionTail``: the outbox lock is taken last).
    func insertEvent(_ event: OutboxEvent, customerID: Int64?) {
        session.tail.appendEvent(event, customerID: customerID)
    }

    /// The statement that appends `event` unless one with its id is stored.
    static func insertEventStatement(_ event: OutboxEvent, customerID: Int64?) -> SQLStatement {
        SQLStatement(
            """
            INSERT INTO events (event_id, type, customer_id, app_user_id, app_account_token, environment, bundle_id, product_id,
                                original_transaction_id, entitlements, details, cause, occurred_at, recorded_at, answer)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
            ON CONFLICT (event_id) DO NOTHING
            """,
            .text(event.id), .text(event.type), SQLValue(customerID), SQLValue(event.appUserId), SQLValue(event.appAccountToken),
            SQLValue(event.environment), SQLValue(event.bundleId), SQLValue(event.productId), SQLValue(event.originalTransactionId),
            .text(json(event.entitlements)), .text(json(event.details)), .text(event.cause), .int(event.occurredAt),
            .int(event.recordedAt), .text(String(decoding: event.answer, as: UTF8.self)))
    }

    /// Writes the events of a customer's answer changing, derived from their history rather than
    /// from the stored answer, so that the order facts arrive in does not matter: the answer at
    /// each instant a fact happened, from the first at or after `earliest` (the answers before it
    /// were compared when their facts came), then at `now`; each change between consecutive
    /// answers is an event (``EventDerivation``), kept once by its id.
    ///
    /// With a `cause` (derived at the commit, no ``EventHold``): a lapse shows at the fact that
    /// tells it (Apple's `EXPIRED`) or at `now`, never between two facts — a gap there may be a
    /// renewal still on its way, and an event is never taken back; each event cites the facts of
    /// its instant and the message that brought them, and carries the answer after the commit.
    ///
    /// Without one (a hold's release: the history complete as far as it goes), each event cites
    /// the facts of the instant the replay finds it at and the message that brought them, and
    /// carries the answer just after that instant; before each instant the answer of the facts
    /// before it is compared too, evaluated at that instant (a lapse between two facts shows there,
    /// as a release in between would have found it: dated and cited by the earlier facts). So a
    /// release finds the same events, causes and answers whatever order the facts came in.
    func emitEvents(
        for customer: CustomerRecord, facts: [Fact], origins: [FactOrigin],
        after: (projection: CustomerProjection, periods: [String: SubscriptionPeriod]), projector: any Projector,
        cause: EventCause?, from earliest: Int64, now: Int64
    ) throws {
        let signedDates = origins.map(\.signedDate)
        let first = signedDates.firstIndex { $0 >= earliest } ?? facts.count
        var history = EventHistory(entitlements: projector.policy.products.mapValues(\.entitlements))
        for fact in facts[..<first] { history.note(fact) }
        /// The facts of the instant the fact at `index` happened at.
        func instant(of index: Int) -> Range<Int> {
            var lower = index
            while lower > 0 && signedDates[lower - 1] == signedDates[index] { lower -= 1 }
            return lower..<index + 1
        }
        var previous: Step? = nil
        if first > 0 {
            let (rows, _, periods) = projector.rows(facts: Array(facts[..<first]), now: signedDates[first - 1])
            previous = Step(
                rows: rows, periods: periods, history: history, facts: cause == nil ? instant(of: first - 1) : first - 1..<first,
                count: first, at: signedDates[first - 1], evaluatedAt: signedDates[first - 1])
        }
        // Facts of one instant are one change.
        var steps: [Step] = []
        var start = first
        var lastInstant = previous?.facts
        for index in first..<facts.count {
            if cause == nil, index == start, let last = lastInstant {
                let (rows, _, periods) = projector.rows(facts: Array(facts[..<start]), now: signedDates[start])
                steps.append(
                    Step(rows: rows, periods: periods, history: history, facts: last, count: start, at: signedDates[start - 1],
                         evaluatedAt: signedDates[start]))
            }
            history.note(facts[index])
            guard index + 1 == facts.count || signedDates[index + 1] != signedDates[index] else { continue }
            let (rows, _, periods) = projector.rows(facts: Array(facts[..<(index + 1)]), now: signedDates[index])
            steps.append(
                Step(rows: rows, periods: periods, history: history, facts: start..<index + 1, count: index + 1, at: signedDates[index],
                     evaluatedAt: signedDates[index]))
            lastInstant = start..<index + 1
            start = index + 1
        }
        // The answer at `now`: the projection's own (no evaluation of its own); a change there
        // without a fact of its own cites the newest fact (a release: the newest instant's facts).
        var final = after.projection
        final.state = []
        steps.append(
            Step(rows: final, periods: after.periods, history: history,
                 facts: cause == nil ? lastInstant ?? max(0, facts.count - 1)..<facts.count : max(0, facts.count - 1)..<facts.count,
                 count: facts.count, at: cause.map { max($0.occurredAt, signedDates.last ?? 0) } ?? signedDates.last ?? now,
                 evaluatedAt: now))
        var citations: [Int64: EventCause.Citation] = [:]
        var found: [OutboxEvent] = []
        for step in steps {
            defer { previous = step }
            guard previous?.rows != step.rows || previous?.periods != step.periods
                || previous?.history.revokedPurchases != step.history.revokedPurchases
            else { continue }
            let events = EventDerivation.events(
                appUserId: customer.appUserId, before: previous?.rows, after: step.rows, instant: step.at,
                periods: (previous?.periods ?? [:], step.periods), history: step.history, previousHistory: previous?.history)
            guard !events.isEmpty else { continue }
            let causeText: String
            var answer = after.projection.state
            if let cause {
                causeText = Self.json(try citation(of: step.facts, origins: origins, cause: cause, cache: &citations))
            } else {
                causeText = Self.json(try citation(of: step.facts, origins: origins, cache: &citations))
                if step.count < facts.count || step.evaluatedAt != now {
                    answer = try projector.projectionAndPeriods(customer: customer, facts: Array(facts[..<step.count]), now: step.evaluatedAt)
                        .projection.state
                }
            }
            let bundleId = cause?.bundleId ?? origins[step.facts].compactMap(\.bundleId).min()
            for event in events {
                found.append(
                    OutboxEvent(
                        sequence: 0, id: event.id, type: event.type, appUserId: customer.appUserId,
                        appAccountToken: customer.appAccountToken, environment: event.environment, bundleId: bundleId,
                        productId: event.productId, originalTransactionId: event.originalTransactionId,
                        entitlements: event.entitlements, details: event.details, cause: causeText,
                        occurredAt: event.occurredAt ?? step.at, recordedAt: now, answer: answer))
            }
        }
        // Several found at once (facts that came late): appended in the order they happened.
        for event in found.sorted(by: { ($0.occurredAt, $0.id) < ($1.occurredAt, $1.id) }) {
            insertEvent(event, customerID: customer.id)
        }
    }

    /// What a step's events cite: the transactions of its facts and the message that brought the
    /// newest of them (the committed one when it is that, or a fact came without a message).
    private func citation(
        of range: Range<Int>, origins: [FactOrigin], cause: EventCause, cache: inout [Int64: EventCause.Citation]
    ) throws -> EventCause.Citation {
        let transactionIds = origins[range].compactMap(\.transactionId)
        guard let notificationID = range.last.flatMap({ origins[$0].notificationID }), notificationID != cause.notificationID else {
            var citation = cause.citation
            if !range.isEmpty { citation.transactionIds = transactionIds }
            return citation
        }
        var known = try storedCitation(notificationID, cache: &cache)
        known.transactionIds = transactionIds
        return known
    }

    /// What a released step's events cite, from the stored facts alone (whichever order they came
    /// in): the transactions of its facts, sorted, and the message that brought them (of several
    /// messages at one instant, the one whose UUID sorts first).
    private func citation(
        of range: Range<Int>, origins: [FactOrigin], cache: inout [Int64: EventCause.Citation]
    ) throws -> EventCause.Citation {
        let transactionIds = Set(origins[range].compactMap(\.transactionId)).sorted()
        var messages: [EventCause.Citation] = []
        for id in Set(origins[range].compactMap(\.notificationID)) { messages.append(try storedCitation(id, cache: &cache)) }
        var citation =
            messages.min { ($0.notificationUUID ?? "\u{10FFFF}", $0.notificationType ?? "") < ($1.notificationUUID ?? "\u{10FFFF}", $1.notificationType ?? "") }
            ?? EventCause.Citation(transactionIds: [])
        citation.transactionIds = transactionIds
        return citation
    }

    /// The stored message a fact came with, as events cite it (`transactionIds` left empty).
    private func storedCitation(_ notificationID: Int64, cache: inout [Int64: EventCause.Citation]) throws -> EventCause.Citation {
        if let known = cache[notificationID] { return known }
        let row = try session.query(
            "SELECT notification_uuid, notification_type, subtype FROM notifications WHERE id = $1", .int(notificationID)
        ).first
        let citation = EventCause.Citation(
            notificationUUID: try row?.optionalText(0), notificationType: try row?.optionalText(1), subtype: try row?.optionalText(2),
            transactionIds: [])
        cache[notificationID] = citation
        return citation
    }
}

/// Where a customer's fact came from, as its ledger row says.
struct FactOrigin: Sendable {
    var notificationID: Int64?
    var transactionId: String?
    var signedDate: Int64
    var bundleId: String?
}

/// One instant of a customer's history as events compare it.
private struct Step {
    var rows: CustomerProjection
    var periods: [String: SubscriptionPeriod]
    /// What the facts up to it say.
    var history: EventHistory
    /// The facts of its instant (indexes into the customer's facts): what its events cite.
    var facts: Range<Int>
    /// How many of the customer's facts its answer holds.
    var count: Int
    /// When its events happened, unless the change itself says.
    var at: Int64
    /// The instant its answer is evaluated at.
    var evaluatedAt: Int64
}

extension EventCause {
    /// What an event cites as its cause.
    struct Citation: Encodable {
        var notificationUUID: String?
        var notificationType: String?
        var subtype: String?
        var transactionIds: [String]
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
            insertEvent(event, customerID: owner.id)
        }
    }
}
