import AppStore
import EntitledConfig
import EntitledCrypto
import Entitlements
import Foundation
import HTTPServer
import Storage

/// Webhook administration (admin scope): deliveries by status, a retry by hand, a `test` event.
struct WebhookRoutes: Sendable {
    /// Delivery list page size when `limit` is absent, and its maximum.
    static let defaultDeliveriesLimit = 50
    static let maxDeliveriesLimit = 200

    let gate: AccessGate
    let ledger: FactLedger
    let configuration: Configuration
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/webhooks/deliveries") { try await routes.listDeliveries($0) }
        router.post("/v1/webhooks/deliveries/{deliveryId}/retry") { try await routes.retryDelivery($0) }
        router.post("/v1/webhooks/test") { try await routes.sendTestEvent($0) }
    }

    var deliveries: any WebhookDeliveryStore { ledger.store }

    /// `GET /v1/webhooks/deliveries?status=failed|pending|delivered&cursor=&limit=`: newest first.
    func listDeliveries(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        var status: WebhookDeliveryStatus?
        if let text = request.query["status"] {
            guard let parsed = WebhookDeliveryStatus(rawValue: text) else {
                throw HTTPError(.invalidRequest, "status must be pending, delivered or failed")
            }
            status = parsed
        }
        var limit = Self.defaultDeliveriesLimit
        if let text = request.query["limit"] {
            guard let value = Int(text), (1...Self.maxDeliveriesLimit).contains(value) else {
                throw HTTPError(.invalidLimit, "limit must be 1…\(Self.maxDeliveriesLimit)")
            }
            limit = value
        }
        var before: Int64?
        if let text = request.query["cursor"], !text.isEmpty {
            guard text.count <= 19, let value = Int64(text), value > 0 else { throw API.invalidCursor }
            before = value
        }
        let page = try await Problems.storeAny { try await deliveries.deliveries(status: status, before: before, limit: limit) }
        return try .json(
            DeliveriesBody(
                deliveries: page.map(DeliveryBody.init), nextCursor: page.count == limit ? page.last.map { String($0.id) } : nil))
    }

    /// `POST /v1/webhooks/deliveries/{deliveryId}/retry`: pending again, due now, with a new
    /// `maxRetryHours` window.
    func retryDelivery(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let text = try request.parameter("deliveryId")
        guard text.count <= 19, let id = Int64(text), id > 0 else {
            throw HTTPError(.invalidPathParameter, "deliveryId must be a delivery's numeric id")
        }
        let now = clock.nowMilliseconds()
        guard let delivery = try await Problems.storeAny({ try await deliveries.retryDelivery(id, now: now) }) else {
            throw HTTPError(.notFound, "no delivery with this id")
        }
        ledger.events.ring()
        return try .json(DeliveryBody(delivery), status: 202)
    }

    /// `POST /v1/webhooks/test`: appends a `test` event; every endpoint whose `events` include it
    /// receives it (and the feed lists it).
    func sendTestEvent(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let now = clock.nowMilliseconds()
        var random = SystemRandomNumberGenerator()
        let id = "evt_" + Hex.encode((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        let event = OutboxEvent(
            sequence: 0, id: id, type: EventType.test.rawValue, appUserId: nil, appAccountToken: nil, environment: nil, bundleId: nil, productId: nil,
            originalTransactionId: nil, entitlements: [], details: [:], cause: #"{"request":"POST /v1/webhooks/test"}"#,
            occurredAt: now, recordedAt: now, answer: [])
        let feed = ledger.store
        let stored = try await Problems.storeAny { try await feed.appendEvent(event) }
        ledger.events.ring()
        let endpoints =
            configuration.webhooks.filter { $0.wants(type: EventType.test.rawValue, environment: nil) }.count
            + configuration.integrations.filter { $0.wants(type: EventType.test.rawValue, environment: nil) }.count
        return .json(bytes: Array(#"{"endpoints":\#(endpoints),"event":"#.utf8) + EventJSON.render(stored) + [UInt8(ascii: "}")], status: 202)
    }
}

struct DeliveriesBody: Encodable {
    var deliveries: [DeliveryBody]
    var nextCursor: String?

    enum Key: String, CodingKey { case deliveries, nextCursor }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(deliveries, .deliveries)
        try c.put(nextCursor, .nextCursor)
    }
}

/// One delivery; dates as ISO 8601, absent values `null`.
struct DeliveryBody: Encodable {
    var delivery: WebhookDelivery

    init(_ delivery: WebhookDelivery) { self.delivery = delivery }

    enum Key: String, CodingKey {
        case id, endpoint, eventId, eventType, appUserId, status, attempts, nextAttemptAt, firstAttemptAt, lastAttemptAt
        case lastStatus, lastError, createdAt, updatedAt
    }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        let d = delivery
        try c.put(String(d.id), .id)
        try c.put(d.endpoint, .endpoint)
        try c.put(d.eventId, .eventId)
        try c.put(d.eventType, .eventType)
        try c.put(d.customerKey.isEmpty ? nil : d.customerKey, .appUserId)
        try c.put(d.status.rawValue, .status)
        try c.put(d.attempts, .attempts)
        try c.date(d.status == .pending ? d.nextAttemptAt : nil, .nextAttemptAt)
        try c.date(d.firstAttemptAt, .firstAttemptAt)
        try c.date(d.lastAttemptAt, .lastAttemptAt)
        try c.put(d.lastStatus, .lastStatus)
        try c.put(d.lastError, .lastError)
        try c.date(d.createdAt, .createdAt)
        try c.date(d.updatedAt, .updatedAt)
    }
}
