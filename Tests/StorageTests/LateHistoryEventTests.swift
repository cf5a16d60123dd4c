import AppStoreTesting
import Entitlements
import Foundation
import Testing

@testable import Storage

/// Facts that reach the server long after the moment they describe (a replay, Apple's retries after
/// an outage, a catch-up, an import): the outbox says what happened, the same as in real time.
@Suite struct LateHistoryEventTests {
    static let start = testNow - 100 * day
    static let month = 30 * day

    func sign(_ fact: Fact) -> SignedFact { (fact, Fixture.signed(fact)) }

    func tx(_ otid: String, _ k: Int, from: Int64? = nil, revoked: Int64? = nil, signed: Int64? = nil) -> SignedFact {
        let purchase = from ?? Self.start + Int64(k) * Self.month
        return sign(
            .transaction(
                TransactionFact(
                    transactionId: "\(otid)-t\(k)", originalTransactionId: otid, productId: "com.example.pro", purchaseDate: purchase,
                    originalPurchaseDate: Self.start, expiresDate: purchase + Self.month, productType: .autoRenewable,
                    signedDate: signed ?? purchase, revocationDate: revoked, price: 4_990, currency: "EUR")))
    }

    func info(_ otid: String, on: Bool = true, retry: Bool = false, grace: Int64? = nil, intent: Int? = nil, signed: Int64) -> SignedFact {
        sign(
            .renewalInfo(
                RenewalInfoFact(
                    originalTransactionId: otid, productId: "com.example.pro", autoRenewStatus: on, expirationIntent: intent,
                    isInBillingRetryPeriod: retry, gracePeriodExpiresDate: grace, signedDate: signed)))
    }

    /// 12 customers' monthly subscriptions over 100 days, as Apple sent them (one message per
    /// instant); the first two turned auto-renew off on day 40 and expired on day 60.
    func history() -> [(batch: TestBatch, at: Int64)] {
        var messages: [(batch: TestBatch, at: Int64)] = []
        for customer in 0..<12 {
            let otid = "o\(customer)", claim = Claim(appUserId: "u\(customer)")
            let cancels = customer < 2
            var instants: [(Int64, [SignedFact])] = []
            for k in 0..<(cancels ? 2 : 4) {
                let at = Self.start + Int64(k) * Self.month
                instants.append((at, [tx(otid, k), info(otid, signed: at)]))
            }
            if cancels {
                instants.append((Self.start + 40 * day, [info(otid, on: false, signed: Self.start + 40 * day)]))
                let end = Self.start + 2 * Self.month
                instants.append((end, [info(otid, on: false, intent: 1, signed: end)]))
            }
            for (at, facts) in instants {
                messages.append((Fixture.batch(uuid: "\(otid)-\(at)", facts: facts, claim: claim), at))
            }
        }
        return messages.sorted { ($0.at, $0.batch.message.notificationUUID ?? "") < ($1.at, $1.batch.message.notificationUUID ?? "") }
    }

    /// A message of customer u1's, sent at `at`.
    func message(_ uuid: String, _ facts: [SignedFact], at: Int64) -> (batch: TestBatch, at: Int64) {
        (Fixture.batch(uuid: uuid, facts: facts, claim: Claim(appUserId: "u1")), at)
    }

    /// u1 buys the monthly subscription o1 at the start.
    var bought: (batch: TestBatch, at: Int64) { message("a", [tx("o1", 0), info("o1", signed: Self.start)], at: Self.start) }

    /// What the events say, per customer in the order they happened (no cause, answer or times of arrival).
    func said(_ events: [OutboxEvent]) -> [String] {
        events.map { event in
            let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            return "\(event.appUserId ?? "-") \(event.occurredAt) \(event.type) \(event.id) [\(details)]"
        }.sorted()
    }

    /// Ingests each message at its instant (`at`) or all at `now`, events at the commit.
    func outbox(_ backend: Backend, _ messages: [(batch: TestBatch, at: Int64)], now: Int64? = nil) async throws -> [OutboxEvent] {
        var result: [OutboxEvent] = []
        // The closing rebuild evaluates at the last ingest's instant (a later one may move the answer).
        try await withStore(backend, now: now ?? messages.map(\.at).max()! + 1_000) { store, _ in
            for (batch, at) in messages { _ = try await store.ingest(batch, projector: testProjector, now: now ?? at + 1_000) }
            result = try await store.events(after: 0, limit: 10_000)
        }
        return result
    }

    @Test("100 days of 12 customers in one burst: the events of real time, none that never happened", arguments: Backend.all)
    func hundredDaysInOneBurst(backend: Backend) async throws {
        let messages = history()
        let live = try await outbox(backend, messages)
        let burst = try await outbox(backend, messages, now: testNow)
        var rng = SplitMix64(seed: 3)
        let duplicated = try await outbox(backend, messages.flatMap { Bool.random(using: &rng) ? [$0, $0] : [$0] }, now: testNow)
        #expect(said(burst) == said(live))
        #expect(said(duplicated) == said(live))
        #expect(burst.filter { $0.type == EventType.subscriptionAutoRenewDisabled.rawValue }.count == 2)
        #expect(burst.filter { $0.type == EventType.subscriptionAutoRenewEnabled.rawValue }.isEmpty)
        #expect(burst.filter { $0.type == EventType.subscriptionExpired.rawValue }.map(\.appUserId) == ["u0", "u1"])
        let renewals: Int = 10 * 3 + 2
        #expect(burst.filter { $0.type == EventType.subscriptionRenewed.rawValue }.count == renewals)
        // In a burst in signed order, commit order is the order things happened.
        #expect(burst.map(\.occurredAt) == burst.map(\.occurredAt).sorted())
        let renewed = try #require(burst.first { $0.type == EventType.subscriptionRenewed.rawValue })
        #expect(renewed.details["price"] == "4.99" && renewed.details["currency"] == "EUR" && renewed.details["store"] == "appStore")
    }

    @Test("a grace period signed half a second after the period end: one billing issue, never expired", arguments: Backend.all)
    func graceSignedLater(backend: Backend) async throws {
        let claim = Claim(appUserId: "u1")
        let end = Self.start + Self.month
        let messages: [(batch: TestBatch, at: Int64)] = [
            (Fixture.batch(uuid: "a", facts: [tx("o1", 0), info("o1", signed: Self.start)], claim: claim), Self.start),
            (Fixture.batch(uuid: "b", facts: [info("o1", retry: true, grace: end + 16 * day, intent: 2, signed: end + 500)], claim: claim),
             end + 500),
        ]
        for now in [nil, testNow] as [Int64?] {
            let events = try await outbox(backend, messages, now: now)
            #expect(events.map(\.type) == [EventType.subscriptionStarted.rawValue, EventType.subscriptionBillingIssue.rawValue])
            #expect(events.last?.occurredAt == end && events.last?.details["kind"] == "gracePeriod")
        }
    }

    @Test("a refund is one event: no auto_renew_disabled beside it", arguments: Backend.all)
    func refund(backend: Backend) async throws {
        let claim = Claim(appUserId: "u1")
        let refundAt = Self.start + 10 * day
        let messages: [(batch: TestBatch, at: Int64)] = [
            (Fixture.batch(uuid: "a", facts: [tx("o1", 0), info("o1", signed: Self.start)], claim: claim), Self.start),
            (Fixture.batch(uuid: "b", facts: [tx("o1", 0, revoked: refundAt, signed: refundAt)], claim: claim), refundAt),
        ]
        let events = try await outbox(backend, messages, now: testNow)
        #expect(events.map(\.type) == [EventType.subscriptionStarted.rawValue, EventType.subscriptionRefunded.rawValue])
        #expect(events.last?.occurredAt == refundAt)
    }

    @Test("a renewal arriving days after its period's expiry was sent: a correction supersedes the expiry", arguments: Backend.all)
    func lateRenewalIsCorrected(backend: Backend) async throws {
        let claim = Claim(appUserId: "u1")
        let end = Self.start + Self.month
        try await withStore(backend, now: end + 3 * day) { store, _ in
            let events: any EventStore = store
            _ = try await store.ingest(Fixture.batch(uuid: "a", facts: [tx("o1", 0), info("o1", signed: Self.start)], claim: claim),
                                       projector: testProjector, now: Self.start)
            // Renewal info signed after the end, no renewal known: the period expired.
            _ = try await store.ingest(Fixture.batch(uuid: "b", facts: [info("o1", signed: end + 3_600_000)], claim: claim),
                                       projector: testProjector, now: end + 3_600_000)
            let sent = try await events.events(after: 0, limit: 100)
            #expect(sent.map(\.type) == [EventType.subscriptionStarted.rawValue, EventType.subscriptionExpired.rawValue])
            // Three days later the renewal Apple signed at the end arrives.
            _ = try await store.ingest(Fixture.batch(uuid: "c", facts: [tx("o1", 1)], claim: claim), projector: testProjector, now: end + 3 * day)
            let all = try await events.events(after: 0, limit: 100)
            #expect(all.map(\.type).dropFirst(2) == [EventType.correction.rawValue, EventType.subscriptionRenewed.rawValue])
            let correction = all[2], renewed = all[3]
            #expect(correction.details["supersedes"] == sent[1].id)
            #expect(correction.details["replacements"] == renewed.id)
            #expect(correction.occurredAt == end && renewed.occurredAt == end)
            #expect(correction.appUserId == "u1" && correction.originalTransactionId == "o1")
            // The same facts again: nothing new.
            _ = try await store.ingest(Fixture.batch(uuid: "c", facts: [tx("o1", 1)], claim: claim), projector: testProjector, now: end + 4 * day)
            _ = try await store.ingest(Fixture.batch(uuid: "d", facts: [info("o1", signed: end + 5 * day)], claim: claim),
                                       projector: testProjector, now: end + 5 * day)
            #expect(try await events.events(after: 0, limit: 100).count == 4)
        }
    }

    @Test("a grace period that becomes billing retry: one billing issue, then the grace period's end", arguments: Backend.all)
    func graceThenRetry(backend: Backend) async throws {
        let end = Self.start + Self.month, graceEnd = end + 16 * day
        let messages = [
            bought,
            message("b", [info("o1", retry: true, grace: graceEnd, intent: 2, signed: end + 500)], at: end + 500),
            message("c", [info("o1", retry: true, grace: graceEnd, intent: 2, signed: graceEnd + 500)], at: graceEnd + 500),
        ]
        for now in [nil, testNow] as [Int64?] {
            let events = try await outbox(backend, messages, now: now)
            #expect(events.map(\.type) == [
                EventType.subscriptionStarted.rawValue, EventType.subscriptionBillingIssue.rawValue,
                EventType.subscriptionGracePeriodExpired.rawValue,
            ])
            #expect(events.map(\.occurredAt).suffix(2) == [end, graceEnd])
        }
    }

    @Test("a recovery's renewed and recovered come in the documented order, whatever order the facts came in", arguments: Backend.all)
    func recoveryOrderAtOneInstant(backend: Backend) async throws {
        let end = Self.start + Self.month, recoveredAt = end + 3 * day
        let messages = [
            bought,
            message("b", [info("o1", retry: true, intent: 2, signed: end + 3_600_000)], at: end + 3_600_000),
            message("c", [tx("o1", 1, from: recoveredAt), info("o1", signed: recoveredAt)], at: recoveredAt),
        ]
        let expected = [
            EventType.subscriptionStarted, .subscriptionBillingIssue, .subscriptionRenewed, .subscriptionRecovered,
        ].map(\.rawValue)
        for order in [[0, 1, 2], [2, 1, 0], [0, 2, 1], [1, 2, 0]] {
            let events = try await outbox(backend, order.map { messages[$0] }, now: testNow)
            #expect(events.net.map(\.type).sorted() == expected.sorted(), "order \(order)")
            #expect(events.net.filter { $0.occurredAt == recoveredAt }.map(\.type) == Array(expected.suffix(2)), "order \(order)")
        }
    }
}
