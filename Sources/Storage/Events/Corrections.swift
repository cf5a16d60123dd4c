import Entitlements
import Foundation

// The outbox side of corrections (``eventRelease(facts:policy:now:environment:released:revealedFrom:)``
// decides them): which events were released for a customer, and the `correction` event that
// names those hindsight disproves.

extension EventDerivation {
    /// The id of a timeline event: its first release keyed by its identity, a later one (a
    /// correction replaces a superseded version) by its revision too.
    static func eventID(appUserId: String, type: EventType, identityKey: [String], revision: Int) -> String {
        eventID(appUserId: appUserId, type: type.rawValue, key: identityKey + (revision > 0 ? [String(revision)] : []))
    }

    /// The `correction` key: the events it supersedes.
    static let supersedesKey = "supersedes"
    /// The `correction` key: the events released with it, the corrected history.
    static let replacementsKey = "replacements"
}

extension Ledger {
    /// The timeline events released for `customer` (its outbox rows the timeline decided, each
    /// marked superseded when a correction names it). Rows an id does not tie to the timeline
    /// (written by an older derivation) are left out: no correction supersedes them.
    func releasedTimelineEvents(of customer: CustomerRecord) throws -> [ReleasedEvent] {
        let rows = try session.rows(
            """
            SELECT event_id, type, occurred_at, environment, product_id, original_transaction_id, entitlements, details
            FROM events WHERE customer_id = \(customer.id)
            """, as: ReleasedEventColumns.self)
        var candidates: [ReleasedEvent] = []
        var superseded = Set<String>()
        for row in rows {
            let type = EventType(rawValue: row.type)
            let details = (try? JSONDecoder().decode([String: String].self, from: Data(row.details.utf8))) ?? [:]
            if type == .correction {
                for id in (details[EventDerivation.supersedesKey] ?? "").split(separator: ",") { superseded.insert(String(id)) }
                continue
            }
            guard EventType.timelineTypes.contains(type), let environment = row.environment else { continue }
            let entitlements = (try? JSONDecoder().decode([String].self, from: Data(row.entitlements.utf8))) ?? []
            candidates.append(
                ReleasedEvent(
                    id: row.eventId, type: type, occurredAt: row.occurredAt, environment: Environment(rawValue: environment),
                    originalTransactionId: row.originalTransactionId ?? "", productId: row.productId ?? "",
                    entitlements: entitlements, details: details, superseded: false))
        }
        // Revision r of an identity is keyed by r (``EventDerivation/eventID(appUserId:type:identityKey:revision:)``).
        let versions = Dictionary(grouping: candidates) { [$0.type.rawValue] + $0.identityKey }
        return candidates.compactMap { event in
            let count = versions[[event.type.rawValue] + event.identityKey]?.count ?? 1
            let ids = (0..<count).map {
                EventDerivation.eventID(appUserId: customer.appUserId, type: event.type, identityKey: event.identityKey, revision: $0)
            }
            guard ids.contains(event.id) else { return nil }
            var event = event
            event.superseded = superseded.contains(event.id)
            return event
        }
    }

    /// The `correction` that supersedes `superseded` and announces `replacements` (released in
    /// the same transaction, after it): dated at the earliest instant the history changed.
    func correctionEvent(
        for customer: CustomerRecord, superseded: [ReleasedEvent], replacements: [(event: CustomerEvent, id: String)],
        cause: EventCause?, answer: [UInt8], now: Int64
    ) -> OutboxEvent {
        let ids = superseded.map(\.id).sorted()
        let otids = Set(superseded.map(\.originalTransactionId) + replacements.map(\.event.originalTransactionId))
        let products = Set(superseded.map(\.productId) + replacements.map(\.event.productId))
        let environments = Set(superseded.map(\.environment.rawValue) + replacements.map(\.event.environment.rawValue))
        var citation = cause?.citation ?? EventCause.Citation(transactionIds: [])
        citation.transactionIds = []
        return OutboxEvent(
            sequence: 0, id: EventDerivation.eventID(appUserId: customer.appUserId, type: EventType.correction.rawValue, key: ids),
            type: EventType.correction.rawValue, appUserId: customer.linkedAppUserId,
            appAccountToken: customer.isUnlinked ? nil : customer.appAccountToken,
            environment: environments.count == 1 ? environments.first : nil, bundleId: cause?.bundleId,
            productId: products.count == 1 ? products.first : nil, originalTransactionId: otids.count == 1 ? otids.first : nil,
            entitlements: Set(superseded.flatMap(\.entitlements) + replacements.flatMap(\.event.entitlements)).sorted(),
            details: [
                EventDerivation.supersedesKey: ids.joined(separator: ","),
                EventDerivation.replacementsKey: replacements.map(\.id).joined(separator: ","),
            ],
            cause: Self.json(citation), occurredAt: (superseded.map(\.occurredAt) + replacements.map(\.event.occurredAt)).min() ?? now,
            recordedAt: now, answer: answer)
    }
}

private struct ReleasedEventColumns: Decodable {
    var eventId: String
    var type: String
    var occurredAt: Int64
    var environment: String?
    var productId: String?
    var originalTransactionId: String?
    var entitlements: String
    var details: String
}
