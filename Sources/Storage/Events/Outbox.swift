import Entitlements
import Foundation
import JSONCoding

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
    /// The customer's state after it, in storage's encoding (``CustomerDocument``); empty when
    /// none. Readers render their answer from it.
    public var answer: [UInt8]
    /// The customer's attributes (``CustomerAttribute``) by name as they are when the event is
    /// read, not stored with it: erasure leaves none to send. Empty for an event of no customer.
    public var attributes: [String: String]

    public init(
        sequence: Int64, id: String, type: String, appUserId: String?, appAccountToken: String?, environment: String?,
        bundleId: String?, productId: String?, originalTransactionId: String?, entitlements: [String], details: [String: String],
        cause: String, occurredAt: Int64, recordedAt: Int64, answer: [UInt8], attributes: [String: String] = [:]
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
        self.attributes = attributes
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
            try Ledger.decodeEvents(
                session.query("SELECT \(Ledger.eventColumns) FROM events WHERE seq > \(after) ORDER BY seq LIMIT \(limit)"), session: session)
        }
    }

    func appendEvent(_ event: OutboxEvent) async throws -> OutboxEvent {
        // The event is appended at the commit (``TransactionTail``): read back once committed.
        try await write { session in try Ledger(session: session, fault: nil).insertEvent(event, customerID: nil) }
        return try await write { session in
            try session.query("SELECT \(Ledger.eventColumns) FROM events WHERE event_id = \(event.id)")
                .map(Ledger.decodeEvent)[0]
        }
    }
}

extension SessionBackedStore {
    func scrubErasureEvents(recordedBefore: Int64) async throws -> Int {
        try await write { session in
            let ids = try session.values(
                """
                SELECT event_id FROM events e WHERE e.type = 'customer.deleted' AND e.app_user_id IS NOT NULL AND e.recorded_at < \(recordedBefore)
                    AND NOT EXISTS (SELECT 1 FROM webhook_cursors c WHERE c.after_seq < e.seq)
                    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.event_id AND d.status = 'pending')
                """, as: String.self)
            for id in ids {
                try session.pipeline([
                    (
                        "UPDATE events SET app_user_id = NULL, app_account_token = NULL, details = \(#"{"erased":"true"}"#) WHERE event_id = \(id)" as SQLQuery),
                    ("UPDATE webhook_deliveries SET customer_key = \(id) WHERE event_id = \(id)" as SQLQuery),
                ])
            }
            return ids.count
        }
    }
}

extension Ledger {
    static let eventColumns: SQLQuery = """
        seq, event_id, type, app_user_id, app_account_token, environment, bundle_id, product_id, original_transaction_id,
        entitlements, details, cause, occurred_at, recorded_at, answer, answer_packed, customer_id
        """

    /// An event's columns (``eventColumns``).
    private struct EventColumns: Decodable {
        var seq: Int64
        var eventId: String
        var type: String
        var appUserId: String?
        var appAccountToken: String?
        var environment: String?
        var bundleId: String?
        var productId: String?
        var originalTransactionId: String?
        var entitlements: String
        var details: String
        var cause: String
        var occurredAt: Int64
        var recordedAt: Int64
        var answer: String
        var answerPacked: [UInt8]?
        var customerId: Int64?
    }

    static func decodeEvent(_ row: SQLRow) throws -> OutboxEvent { try decodeEventAndCustomer(row).event }

    /// Events as stored, each with its customer's attributes now (``OutboxEvent/attributes``: one
    /// read for the batch).
    static func decodeEvents(_ rows: [SQLRow], session: any SQLSession) throws -> [OutboxEvent] {
        let decoded = try rows.map(decodeEventAndCustomer)
        let customers = Set(decoded.compactMap { $0.event.appUserId == nil ? nil : $0.customer })
        let attributes = try readAttributes(session, customerIds: customers.sorted())
        return decoded.map { decoded in
            var event = decoded.event
            guard let customer = decoded.customer, event.appUserId != nil else { return event }
            event.attributes = Dictionary((attributes[customer] ?? []).map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
            return event
        }
    }

    private static func decodeEventAndCustomer(_ row: SQLRow) throws -> (event: OutboxEvent, customer: Int64?) {
        let columns = try row.decode(EventColumns.self)
        let entitlements = (try? JSONDecoder().decode([String].self, from: Data(columns.entitlements.utf8))) ?? []
        let details = (try? JSONDecoder().decode([String: String].self, from: Data(columns.details.utf8))) ?? [:]
        return (OutboxEvent(
            sequence: columns.seq, id: columns.eventId, type: columns.type, appUserId: columns.appUserId,
            appAccountToken: columns.appAccountToken, environment: columns.environment, bundleId: columns.bundleId,
            productId: columns.productId, originalTransactionId: columns.originalTransactionId, entitlements: entitlements,
            details: details, cause: columns.cause, occurredAt: columns.occurredAt, recordedAt: columns.recordedAt,
            answer: try EventAnswer.bytes(answer: columns.answer, packed: columns.answerPacked)), columns.customerId)
    }

    /// An event's JSON field (its entitlements, details, cause): sorted keys, slashes as they
    /// are. Written by the codec's sorted writer, which gives `JSONEncoder`'s bytes
    /// (`SortedJSONEncoderTests`) without a Foundation encoder per field.
    static func json(_ value: some Encodable) -> String {
        (try? JSONCodec().encodeSorted(value, escapingSlashes: false)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// Appends an event unless one with its id is stored (a replay of the same change), at the
    /// transaction's commit (``TransactionTail``: the outbox lock is taken last). Its answer is
    /// compressed here, as the event is made, not in the commit's statements.
    func insertEvent(_ event: OutboxEvent, customerID: Int64?) throws {
        session.tail.appendEvent(event, answerPacked: try EventAnswer.encode(event.answer), customerID: customerID)
    }

    /// The statement that appends `pending`'s event unless one with its id is stored.
    static func insertEventStatement(_ pending: TransactionTail.PendingEvent) -> SQLQuery {
        let (event, customerID) = (pending.event, pending.customerID)
        return (
            """
            INSERT INTO events (event_id, type, customer_id, app_user_id, app_account_token, environment, bundle_id, product_id,
                                original_transaction_id, entitlements, details, cause, occurred_at, recorded_at, answer, answer_packed)
            VALUES (\(event.id), \(event.type), \(customerID), \(event.appUserId), \(event.appAccountToken), \(event.environment), \(event.bundleId), \(event.productId), \(event.originalTransactionId), \(json(event.entitlements)), \(json(event.details)), \(event.cause), \(event.occurredAt), \(event.recordedAt), '', \(pending.answerPacked))
            ON CONFLICT (event_id) DO NOTHING
            """ as SQLQuery)
    }

    /// Writes what the engine releases for the customer
    /// (``eventRelease(facts:policy:now:environment:released:revealedFrom:)``: their timeline from
    /// all their facts in hindsight against the events released before): the events the change
    /// revealed, keyed by their identity (type, instant, subject), so recomputing after every
    /// ingest appends only what is new. An event is never taken back: a late fact that changes
    /// history adds the events it reveals, with their true `occurredAt` (which may come before
    /// events already sent), after one `correction` naming the released events it disproves.
    ///
    /// Each event cites the message that brought the newest fact it rests on (the committed one,
    /// `cause`, when that is it) and the transaction it concerns. At a commit it carries the answer
    /// after the commit (one pass over the facts per environment: no evaluation of the engine); at
    /// a hold's release the answer of the facts it rests on just after it (one evaluation per
    /// distinct instant released), so a release finds the same events, causes and answers
    /// whatever order the facts came in.
    func emitEvents(
        for customer: CustomerRecord, facts: [Fact], origins: [FactOrigin],
        after: CustomerProjection, document: CustomerDocument, projector: Projector,
        cause: EventCause?, from earliest: Int64, now: Int64
    ) throws {
        // What the timeline says against what was released: new events, and corrections.
        // A subscription a restore moved to another customer keeps the events it had here (they
        // happened to this customer); a placeholder's, claimed by a customer, are superseded.
        // A Play subscription's events name its chain's first token: one of its own or linked tokens.
        let held = Set(
            facts.flatMap { fact -> [String] in
                switch fact {
                case .transaction(let t): [t.originalTransactionId]
                case .receiptEntry(let e): [e.originalTransactionId]
                case .playSubscription(let p): [p.purchaseToken] + (p.linkedPurchaseToken.map { [$0] } ?? [])
                case .playProduct(let p): [p.purchaseToken]
                default: []
                }
            })
        let released = try releasedTimelineEvents(of: customer).filter { customer.isUnlinked || held.contains($0.originalTransactionId) }
        var found: [(event: CustomerEvent, id: String)] = []
        var superseded: [String] = []
        for environment in Set(facts.map(\.environment) + released.map(\.environment)).sorted() {
            let release = eventRelease(
                facts: facts, policy: projector.policy, now: now, environment: environment, released: released, revealedFrom: earliest)
            for addition in release.additions {
                let event = addition.event
                found.append(
                    (event, EventDerivation.eventID(
                        appUserId: customer.appUserId, type: event.type, identityKey: event.identityKey, revision: addition.revision)))
            }
            superseded += release.superseded
        }
        var citations: [Int64: EventCause.Citation] = [:]
        // A release carries, with each event, the answer of the facts it rests on, just after it
        // (whatever order they came in); a commit the answer after the commit.
        var answers: [[Int64]: [UInt8]] = [:]
        func answer(_ event: CustomerEvent) throws -> [UInt8] {
            let at = max(event.occurredAt, event.basis)
            guard cause == nil, at < now || facts.contains(where: { $0.date > event.basis }) else { return after.state }
            if let known = answers[[event.basis, at]] { return known }
            // Evaluated, then encoded only when it is not the answer after the change (`after`,
            // whose document is `document`): mostly it is, time having changed no status since.
            let evaluated = projector.document(customer: customer, facts: facts.filter { $0.date <= event.basis }, now: at)
            let state = evaluated == document ? after.state : try evaluated.encoded(codec: projector.codec)
            answers[[event.basis, at]] = state
            return state
        }
        // The messages of the facts of each instant: an event cites one of those of its basis.
        var messages: [Int64: Set<Int64>] = [:]
        var fromCommit: Set<Int64> = []
        for (index, origin) in origins.enumerated() where index < facts.count {
            if let id = origin.notificationID, id != cause?.notificationID {
                messages[facts[index].date, default: []].insert(id)
            } else {
                fromCommit.insert(facts[index].date)
            }
        }
        found.sort { CustomerEvent.happensBefore($0.event, $1.event) }
        if !superseded.isEmpty {
            // Before the events that replace what it supersedes.
            let disproved = released.filter { superseded.contains($0.id) }
            try insertEvent(
                correctionEvent(for: customer, superseded: disproved, replacements: found, cause: cause, answer: after.state, now: now),
                customerID: customer.id)
        }
        // Several found at once (facts that came late): appended in the order they happened.
        for (event, id) in found {
            let origin = origins.indices.contains(event.causeIndex) ? origins[event.causeIndex] : nil
            var citation: EventCause.Citation
            if let cause, fromCommit.contains(event.basis) {
                citation = cause.citation
            } else {
                // Of several messages that brought facts of that instant, the one whose UUID sorts
                // first: the same whichever of them came first.
                var candidates: [EventCause.Citation] = []
                for id in (messages[event.basis] ?? []).sorted() { candidates.append(try storedCitation(id, cache: &citations)) }
                citation =
                    candidates.min {
                        ($0.notificationUUID ?? "\u{10FFFF}", $0.notificationType ?? "") < ($1.notificationUUID ?? "\u{10FFFF}", $1.notificationType ?? "")
                    }
                    ?? cause?.citation ?? EventCause.Citation(transactionIds: [])
            }
            citation.transactionIds = [event.transactionId]
            try insertEvent(
                OutboxEvent(
                    sequence: 0, id: id,
                    type: event.type.rawValue, appUserId: customer.linkedAppUserId,
                    appAccountToken: customer.isUnlinked ? nil : customer.appAccountToken,
                    environment: event.environment.rawValue, bundleId: origin?.bundleId ?? cause?.bundleId, productId: event.productId,
                    originalTransactionId: event.originalTransactionId, entitlements: event.entitlements, details: event.details,
                    cause: Self.json(citation), occurredAt: event.occurredAt, recordedAt: now, answer: try answer(event)),
                customerID: customer.id)
        }
    }

    /// The stored message a fact came with, as events cite it (`transactionIds` left empty).
    private func storedCitation(_ notificationID: Int64, cache: inout [Int64: EventCause.Citation]) throws -> EventCause.Citation {
        if let known = cache[notificationID] { return known }
        let row = try session.row(
            "SELECT notification_uuid, notification_type, subtype FROM notifications WHERE id = \(notificationID)", as: StoredCitation.self)
        let citation = EventCause.Citation(
            notificationUUID: row?.notificationUuid, notificationType: row?.notificationType, subtype: row?.subtype, transactionIds: [])
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
    /// information (`consumption.requested`, for the subscription's owner), and the message's own
    /// ``ReceivedMessage/event`` (Google Play's `refund_review.requested`).
    func emitMessageEvents(
        _ message: ReceivedMessage, links: [LinkResult], otids: [String], cause: EventCause, now: Int64
    ) throws {
        var events: [(String, String, [String: String])] = []
        for link in links {
            if case .transferred(let from) = link.outcome {
                events.append((EventType.customerTransferred.rawValue, link.originalTransactionId, ["from": from]))
            }
        }
        if message.notificationType == "CONSUMPTION_REQUEST" {
            for otid in otids { events.append((EventType.consumptionRequested.rawValue, otid, [:])) }
        }
        if let event = message.event {
            for otid in event.originalTransactionIds { events.append((event.type, otid, event.details)) }
        }
        for (type, otid, details) in events {
            guard let owner = try owner(of: otid) else { continue }
            let stored = try storedState(customerID: owner.id)
            let row = stored?.projection.subscriptions.first { $0.originalTransactionId == otid }
            // Keyed by the causing message: each restore or request is its own event.
            let key = [otid, details["from"] ?? "", cause.notificationUUID ?? cause.factDigest ?? ""]
            let event = OutboxEvent(
                sequence: 0, id: EventDerivation.eventID(appUserId: owner.appUserId, type: type, key: key), type: type,
                appUserId: owner.linkedAppUserId, appAccountToken: owner.isUnlinked ? nil : owner.appAccountToken, environment: row?.environment,
                bundleId: cause.bundleId, productId: row?.productId, originalTransactionId: otid,
                entitlements: (stored?.projection.entitlements ?? []).filter { $0.originalTransactionId == otid }.map(\.entitlement).sorted(),
                details: details, cause: Self.json(cause.citation), occurredAt: cause.occurredAt, recordedAt: now,
                answer: stored?.projection.state ?? [])
            try insertEvent(event, customerID: owner.id)
        }
    }
}

/// What an event cites of a stored message.
private struct StoredCitation: Decodable {
    var notificationUuid: String?
    var notificationType: String?
    var subtype: String?
}
