import AppStoreTesting
import Entitlements
import Foundation
import Testing

@testable import Storage

/// Generated lifecycles (purchase, renewals some signed late, offers, auto-renew toggles, billing
/// failure with and without grace, recovery, expiry, refund, family revocation, upgrade) delivered
/// in real time, in one burst, shuffled with messages days apart (far beyond the settle window)
/// and duplicated: the net stream of the outbox (its events, less those corrections supersede) is
/// the engine's hindsight timeline every time.
@Suite struct EventStreamPropertyTests {
    static let month = 30 * day
    static let start = testNow - 400 * day
    static let seeds: [UInt64] = [11, 12, 13]
    static let customersPerSeed = 16

    typealias Message = (batch: TestBatch, at: Int64, facts: [Fact])

    static func projector() -> Projector {
        var projector = testProjector
        projector.eventHold = EventHold(settleSeconds: 5, maxHoldSeconds: 300)
        return projector
    }

    // MARK: Generator

    struct Generator {
        var rng: SplitMix64
        var messages: [Message] = []

        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
        mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

        /// One customer's subscription, as Apple signs it (one message per instant).
        mutating func lifecycle(_ index: Int, seed: UInt64) {
            let otid = "g\(seed)-\(index)", claim = Claim(appUserId: "u\(seed)-\(index)")
            var byInstant: [Int64: [Fact]] = [:]
            func add(_ fact: Fact) { byInstant[fact.date, default: []].append(fact) }
            let origin = EventStreamPropertyTests.start + Int64(int(0...20)) * day
            let periods = int(1...5)
            let family = chance(15)
            var autoRenew = true
            var product = "com.example.pro"
            var periodStart = origin
            // Apple re-signs a transaction (an upgrade, a refund) with its offer fields unchanged.
            var offers: [String: OfferType] = [:]
            for k in 0..<periods {
                let end = periodStart + EventStreamPropertyTests.month
                let signed = k > 0 && chance(30) ? periodStart + Int64(int(1...40)) * 3_600_000 : periodStart
                let offer: OfferType? = chance(15) ? .promotional : nil
                offers["\(otid)-t\(k)"] = offer
                add(tx(otid, "\(otid)-t\(k)", product: product, from: periodStart, to: end, signed: signed, offer: offer, family: family))
                add(info(otid, on: autoRenew, signed: signed))
                if chance(20) {
                    // Auto-renew off in the period, on again before its end.
                    add(info(otid, on: false, signed: periodStart + 5 * day))
                    add(info(otid, on: true, signed: periodStart + 9 * day))
                }
                if k < periods - 1 && chance(10) {
                    // An upgrade in the middle of the period: the old transaction re-signed upgraded.
                    let at = periodStart + 12 * day
                    add(tx(otid, "\(otid)-t\(k)", product: product, from: periodStart, to: end, signed: at, offer: offer, upgraded: at, family: family))
                    product = product == "com.example.pro" ? "com.example.max" : "com.example.pro"
                    add(tx(otid, "\(otid)-u\(k)", product: product, from: at, to: at + EventStreamPropertyTests.month, signed: at, family: family))
                    periodStart = at + EventStreamPropertyTests.month
                    continue
                }
                periodStart = end
            }
            let last = "\(otid)-t\(periods - 1)"
            let lastStart = periodStart - EventStreamPropertyTests.month
            switch int(0...6) {
            case 0:
                // Voluntary churn: off mid-period, expired at the end.
                autoRenew = false
                add(info(otid, on: false, signed: lastStart + 10 * day))
                add(info(otid, on: false, intent: 1, signed: periodStart + 1_000))
            case 1:
                // Billing failure in a grace period, recovered (or not) later.
                add(info(otid, on: true, retry: true, grace: periodStart + 16 * day, intent: 2, signed: periodStart + 500))
                if chance(50) {
                    let at = periodStart + Int64(int(1...30)) * day
                    add(tx(otid, "\(otid)-r", product: product, from: at, to: at + EventStreamPropertyTests.month, signed: at, family: family))
                    add(info(otid, on: true, signed: at))
                } else {
                    add(info(otid, on: true, retry: true, grace: periodStart + 16 * day, intent: 2, signed: periodStart + 20 * day))
                }
            case 2:
                // Billing retry without grace, then Apple gives up.
                add(info(otid, on: true, retry: true, intent: 2, signed: periodStart + 3_600_000))
                add(info(otid, on: false, retry: false, intent: 2, signed: periodStart + 40 * day))
            case 3:
                // A refund of the last period.
                let at = lastStart + Int64(int(1...20)) * day
                add(tx(otid, last, product: product, from: lastStart, to: periodStart, signed: at, offer: offers[last], revoked: at, family: family))
            case 4 where family:
                // Family sharing revoked.
                let at = lastStart + 3 * day
                add(tx(otid, last, product: product, from: lastStart, to: periodStart, signed: at, offer: offers[last], revoked: at, family: true))
            default:
                // Still renewing at the end: the period's end is decided by a later fact.
                add(info(otid, on: autoRenew, signed: periodStart + 2 * day))
            }
            for (at, facts) in byInstant {
                let signed = facts.map { ($0, Fixture.signed($0)) }
                messages.append((Fixture.batch(uuid: "\(otid)-\(at)", facts: signed, claim: claim), at, facts))
            }
        }

        func tx(
            _ otid: String, _ id: String, product: String, from: Int64, to: Int64, signed: Int64, offer: OfferType? = nil,
            upgraded: Int64? = nil, revoked: Int64? = nil, family: Bool
        ) -> Fact {
            .transaction(
                TransactionFact(
                    transactionId: id, originalTransactionId: otid, productId: product, purchaseDate: from,
                    originalPurchaseDate: nil, expiresDate: to, productType: .autoRenewable, ownership: family ? .familyShared : .purchased,
                    signedDate: signed, revocationDate: upgraded ?? revoked, revocationType: revoked != nil && family ? .familyRevoke : nil,
                    isUpgraded: upgraded != nil, offerType: offer, offerIdentifier: offer == nil ? nil : "promo1", price: 4_990,
                    currency: "EUR"))
        }

        func info(_ otid: String, on: Bool, retry: Bool = false, grace: Int64? = nil, intent: Int? = nil, signed: Int64) -> Fact {
            .renewalInfo(
                RenewalInfoFact(
                    originalTransactionId: otid, productId: "com.example.pro", autoRenewStatus: on, expirationIntent: intent,
                    isInBillingRetryPeriod: retry, gracePeriodExpiresDate: grace, signedDate: signed))
        }
    }

    static func generated(seed: UInt64) -> [Message] {
        var generator = Generator(rng: SplitMix64(seed: seed))
        for index in 0..<customersPerSeed { generator.lifecycle(index, seed: seed) }
        return generator.messages.sorted { ($0.at, $0.batch.message.notificationUUID ?? "") < ($1.at, $1.batch.message.notificationUUID ?? "") }
    }

    // MARK: Deliveries

    enum Delivery: String, CaseIterable, Sendable { case realTime, burst, shuffled, duplicated }

    /// Delivers `messages` as `delivery` says, releasing holds as time goes by; returns the outbox
    /// and the instant of the last release.
    func deliver(_ messages: [Message], _ delivery: Delivery, backend: Backend, seed: UInt64) async throws -> ([OutboxEvent], Int64) {
        var rng = SplitMix64(seed: seed)
        let after = messages.map(\.at).max()! + day
        var plan: [(Message, Int64)]
        switch delivery {
        case .realTime: plan = messages.map { ($0, $0.at + 1_000) }
        case .burst: plan = messages.enumerated().map { ($0.element, after + Int64($0.offset) * 10) }
        case .shuffled:
            // Ten minutes apart: every reordering is further apart than the settle window.
            plan = messages.shuffled(using: &rng).enumerated().map { ($0.element, after + Int64($0.offset) * 600_000) }
        case .duplicated:
            let repeated = messages.flatMap { Bool.random(using: &rng) ? [$0, $0] : [$0] }.shuffled(using: &rng)
            plan = repeated.enumerated().map { ($0.element, after + Int64($0.offset) * 600_000) }
        }
        let end = plan.map(\.1).max()! + 301_000
        let projector = Self.projector()
        var events: [OutboxEvent] = []
        try await withStore(backend, now: end) { store, _ in
            let holds = store
            for (message, at) in plan {
                _ = try await holds.releaseEventHolds(projector: projector, now: at, limit: 1000)
                _ = try await store.ingest(message.batch, projector: projector, now: at)
            }
            _ = try await holds.releaseEventHolds(projector: projector, now: end, limit: 1000)
            // The answers at the end (the rebuild `withStore` checks compares with them).
            _ = try await store.rebuild(projector: testProjector, now: end)
            while true {
                let page = try await store.events(after: events.last?.sequence ?? 0, limit: 1000)
                events += page
                if page.count < 1000 { break }
            }
        }
        return (events, end)
    }

    static func said(_ events: [OutboxEvent]) -> [String] {
        events.map { event in
            let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            return "\(event.appUserId ?? "-") \(event.type) @\(event.occurredAt) \(event.originalTransactionId ?? "-") [\(details)]"
        }.sorted()
    }

    static func said(_ events: [CustomerEvent], appUserId: String) -> [String] {
        events.map { event in
            let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            return "\(appUserId) \(event.type.rawValue) @\(event.occurredAt) \(event.originalTransactionId) [\(details)]"
        }
    }

    @Test(arguments: Backend.all.filter { $0 != .sqliteFile }, seeds)
    func netStreamIsTheHindsightTimeline(backend: Backend, seed: UInt64) async throws {
        let messages = Self.generated(seed: seed)
        let customers = Dictionary(grouping: messages) { $0.batch.claim?.appUserId ?? "" }
        var streams: [Delivery: [String]] = [:]
        for delivery in Delivery.allCases {
            let (events, end) = try await deliver(messages, delivery, backend: backend, seed: seed)
            let net = events.net
            var truth: [String] = []
            for (appUserId, mine) in customers {
                let facts = mine.flatMap(\.facts)
                truth += Self.said(eventTimeline(facts: facts, policy: testProjector.policy, now: end, environment: .production), appUserId: appUserId)
                checkHindsight(net.filter { $0.appUserId == appUserId }, facts: facts, delivery: delivery)
            }
            let got = Self.said(net)
            #expect(got == truth.sorted(), "\(delivery) seed \(seed) on \(backend): \(difference(truth.sorted(), got))")
            #expect(Set(events.map(\.id)).count == events.count)
            if delivery == .realTime || delivery == .burst {
                let corrections = events.filter { $0.type == EventType.correction.rawValue }
                #expect(corrections.isEmpty, "\(delivery) needs no correction")
            }
            if delivery == .shuffled {
                // Reorderings beyond the window did disprove released events: corrections were needed.
                #expect(events.contains { $0.type == EventType.correction.rawValue }, "seed \(seed)")
            }
            streams[delivery] = got
        }
        #expect(Set(streams.values).count == 1)
    }

    /// No `expired` while the subscription granted access in hindsight; no auto-renew event but
    /// where `autoRenewStatus` changed.
    func checkHindsight(_ net: [OutboxEvent], facts: [Fact], delivery: Delivery) {
        for event in net {
            switch EventType(rawValue: event.type) {
            case .subscriptionExpired:
                let state = evaluate(facts: facts, policy: testProjector.policy, now: event.occurredAt + 1, environment: .production)
                #expect(!state.entitlements.contains { $0.originalTransactionId == event.originalTransactionId && $0.active },
                        "\(delivery): expired at \(event.occurredAt) with access")
            case .subscriptionAutoRenewEnabled, .subscriptionAutoRenewDisabled:
                let statuses = facts.compactMap { fact -> (Int64, Bool)? in
                    if case .renewalInfo(let r) = fact { (r.signedDate, r.autoRenewStatus) } else { nil }
                }
                let enabled = event.type == EventType.subscriptionAutoRenewEnabled.rawValue
                #expect(statuses.contains { $0.0 == event.occurredAt && $0.1 == enabled }, "\(delivery): \(event.type)")
                #expect(statuses.filter { $0.0 < event.occurredAt }.max { $0.0 < $1.0 }?.1 == !enabled, "\(delivery): \(event.type)")
            default: continue
            }
        }
    }

    func difference(_ expected: [String], _ got: [String]) -> String {
        "missing \(expected.filter { !got.contains($0) }), extra \(got.filter { !expected.contains($0) })"
    }
}

extension [OutboxEvent] {
    /// The outbox less its corrections and the events they supersede: what a consumer holds.
    var net: [OutboxEvent] {
        let superseded = Set(
            filter { $0.type == EventType.correction.rawValue }
                .flatMap { ($0.details[EventDerivation.supersedesKey] ?? "").split(separator: ",").map(String.init) })
        return filter { $0.type != EventType.correction.rawValue && !superseded.contains($0.id) }
    }
}
