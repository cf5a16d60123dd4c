import AppStore
import EntitledConfig
import Foundation
import HTTPServer
import JSONCoding
import Storage
import Synchronization

/// Wakes long-polling readers of the event feed when the ledger committed something, so that they
/// read again at once instead of polling in a loop.
public final class EventBell: Sendable {
    private struct State {
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var next: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes every current waiter.
    public func ring() {
        let waiters = state.withLock { state in
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether the server is stopping (``close()``): long-polls end at once.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The server is stopping: wakes every waiter, and every later ``wait(timeout:)`` returns at
    /// once, so a long-poll answers now instead of holding the shutdown for its whole wait.
    public func close() {
        state.withLock { $0.closed = true }
        ring()
    }

    /// Returns when rung, after `timeout`, when the task is cancelled or once the bell is closed,
    /// whichever comes first.
    public func wait(timeout: Duration) async {
        guard !isClosed else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.waitForRing() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForRing() async {
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if Task.isCancelled || state.closed { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// An outbox event as webhooks deliver it and the feed lists it: the event JSON.
enum EventJSON {
    private struct Body: Encodable {
        var id: String
        var type: String
        var occurredAt: String
        var recordedAt: String
        var environment: String?
        var appUserId: String?
        var appAccountToken: String?
        var bundleId: String?
        var productId: String?
        var originalTransactionId: String?
        var entitlements: [String]
        var data: [String: String]
        var attributes: [String: String]

        enum CodingKeys: CodingKey {
            case id, type, occurredAt, recordedAt, environment, appUserId, appAccountToken, bundleId, productId
            case originalTransactionId, entitlements, data, attributes
        }

        /// `appUserId` and `appAccountToken` are always present: null for an unlinked subscription's
        /// events and a scrubbed erasure; the other optional fields are left out when absent.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(type, forKey: .type)
            try c.encode(occurredAt, forKey: .occurredAt)
            try c.encode(recordedAt, forKey: .recordedAt)
            try c.encodeIfPresent(environment, forKey: .environment)
            try c.encode(appUserId, forKey: .appUserId)
            try c.encode(appAccountToken, forKey: .appAccountToken)
            try c.encodeIfPresent(bundleId, forKey: .bundleId)
            try c.encodeIfPresent(productId, forKey: .productId)
            try c.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
            try c.encode(entitlements, forKey: .entitlements)
            try c.encode(data, forKey: .data)
            try c.encode(attributes, forKey: .attributes)
        }
    }

    /// The event's JSON object: its fields, `cause` (the notification or transactions that caused
    /// it), `customer` (the customer's answer after it, as `GET /v1/customers/{appUserId}`
    /// answers at `recordedAt`; null when there is none) and `attributes` (the customer's
    /// attributes as they are now, ``Storage/OutboxEvent/attributes``).
    static func render(_ event: OutboxEvent) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = Body(
            id: event.id, type: event.type, occurredAt: ISO8601.format(milliseconds: event.occurredAt),
            recordedAt: ISO8601.format(milliseconds: event.recordedAt), environment: event.environment, appUserId: event.appUserId,
            appAccountToken: event.appAccountToken, bundleId: event.bundleId, productId: event.productId,
            originalTransactionId: event.originalTransactionId, entitlements: event.entitlements, data: event.details,
            attributes: event.attributes)
        var bytes = Array((try? encoder.encode(body)) ?? Data("{}".utf8))
        let customer = customerAnswer(event.answer, serverTime: event.recordedAt)
        // Both are JSON this server wrote; appended as members of the object.
        bytes.removeLast()
        bytes += Array(#","cause":"#.utf8) + Array(event.cause.utf8) + Array(#","customer":"#.utf8) + customer + [UInt8(ascii: "}")]
        return bytes
    }

    /// The customer's answer an event carries, at `serverTime`: rendered from the state storage
    /// kept with it (``Storage/CustomerDocument``), so that it is in this binary's answer format;
    /// an older binary's stored rendering of the current format as it is; `null` when there is none.
    static func customerAnswer(_ stored: [UInt8], serverTime: Int64) -> [UInt8] {
        let codec = JSONCodec()
        if !stored.isEmpty, let document = try? codec.decode(CustomerDocument.self, from: stored),
            let bytes = try? codec.encodeAnswer(CustomerBody(customer: document.customer, state: document.state, now: serverTime))
        {
            return bytes
        }
        return RenderedCustomer(document: stored)?.body(serverTime: serverTime) ?? Array("null".utf8)
    }
}
