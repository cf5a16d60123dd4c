import AppStore
import Foundation
import HTTPServer
import Storage

/// `GET /v1/offerings/{offeringId}/history` (`admin`): the logged changes that named an offering,
/// newest first — the console's version history.
struct OfferingHistoryRoutes: Sendable {
    let gate: AccessGate
    let history: OfferingHistory

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/offerings/{offeringId}/history") { try await routes.history($0) }
    }

    /// `?limit=` 1…100 (default 20).
    func history(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let id = try request.parameter("offeringId")
        guard OfferingRules.isValidId(id) else { throw HTTPError(.invalidOffering, "an offering id is [A-Za-z0-9_.-]{1,64}") }
        var limit = 20
        if let text = request.query["limit"] {
            guard let value = Int(text), (1...100).contains(value) else { throw HTTPError(.invalidLimit, "limit must be 1…100") }
            limit = value
        }
        return RequestInput.noStore(try .json(try await history.changes(of: id, limit: limit)))
    }
}

/// An offering's logged changes, each with the document it stored. Knows no request.
struct OfferingHistory: Sendable {
    let ledger: FactLedger

    func changes(of id: String, limit: Int) async throws -> OfferingHistoryBody {
        let records = try await Problems.store { () async throws(StorageError) in
            try await ledger.paywallChanges(subject: id, limit: limit)
        }
        return OfferingHistoryBody(offeringId: id, changes: records.map(OfferingHistoryBody.Change.init))
    }
}

/// `GET /v1/offerings/{offeringId}/history`' answer.
struct OfferingHistoryBody: Encodable {
    struct Change: Encodable {
        var version: Int64
        /// `offering` (created or replaced), `offeringDeleted` or `current` (made current).
        var kind: String
        var actor: String?
        var changedAt: String
        /// The offering as this change stored it (`offering` only).
        var offering: RawJSON?

        init(_ record: PaywallChangeRecord) {
            version = record.version
            kind = record.kind
            actor = record.actor
            changedAt = ISO8601.format(milliseconds: record.changedAt)
            offering = record.document.flatMap { try? JSONDecoder().decode(RawJSON.self, from: Data($0.utf8)) }
        }

        enum Key: String, CodingKey { case version, kind, actor, changedAt, offering }

        func encode(to encoder: any Encoder) throws {
            var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
            try c.put(version, .version)
            try c.put(kind, .kind)
            try c.put(actor, .actor)
            try c.put(changedAt, .changedAt)
            try c.put(offering, .offering)
        }
    }

    var offeringId: String
    var changes: [Change]
}
