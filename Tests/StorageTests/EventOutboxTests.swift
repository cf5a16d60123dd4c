import Entitlements
import Foundation
import Testing

@testable import Storage

/// Events derived from changes of customers' answers, written to the outbox with the ledger append.
@Suite struct EventOutboxTests {
    static let day: Int64 = 86_400_000

    /// A subscription's life: bought 40 days ago for 30 days, renewed an hour before it lapsed,
    /// auto-renew turned off 5 days ago.
    func lifecycle() -> [TestBatch] {
        let d = Self.day
        let claim = Claim(appUserId: "u1")
        return [
            Fixture.batch(
                uuid: "n1",
                facts: [
                    Fixture.transaction(otid: "o1", tid: "t1", expires: testNow - 10 * d, signed: testNow - 40 * d),
                    Fixture.renewal(otid: "o1", autoRenew: true, signed: testNow - 40 * d),
                ], claim: claim),
            Fixture.batch(
                uuid: "n2", facts: [Fixture.transaction(otid: "o1", tid: "t2", expires: testNow + 20 * d, signed: renewedAt)],
                claim: claim),
            Fixture.batch(uuid: "n3", facts: [Fixture.renewal(otid: "o1", autoRenew: false, signed: testNow - 5 * d)], claim: claim),
        ]
    }

    let renewedAt = testNow - 10 * Self.day - 3_600_000

    /// The same subscription renewed into a promotional offer, then a price increase announced,
    /// the renewal date extended by 5 days, and the increase accepted.
    func offersLifecycle() -> [TestBatch] {
        let d = Self.day
        let claim = Claim(appUserId: "u1")
        return [
            lifecycle()[0],
            Fixture.batch(
                uuid: "m2", facts: [Fixture.transaction(otid: "o1", tid: "t2", expires: testNow + 20 * d, signed: renewedAt, offer: .promotional)],
                claim: claim),
            Fixture.batch(uuid: "m3", facts: [Fixture.renewal(otid: "o1", autoRenew: true, signed: testNow - 8 * d, priceIncrease: 0)], claim: claim),
            Fixture.batch(
                uuid: "m4",
                facts: [
                    Fixture.transaction(
                        otid: "o1", tid: "t2", expires: testNow + 25 * d, signed: testNow - 6 * d, offer: .promotional, purchased: renewedAt)
                ], claim: claim),
            Fixture.batch(uuid: "m5", facts: [Fixture.renewal(otid: "o1", autoRenew: true, signed: testNow - 4 * d, priceIncrease: 1)], claim: claim),
        ]
    }

    static let offersTypes = [
        "subscription.started", "subscription.renewed", "subscription.offer_redeemed", "subscription.price_increase",
        "subscription.extended", "subscription.price_increase",
    ]

    /// When each batch's newest fact happened (the basic lifecycle's three, then the offers one's).
    func happened(_ offers: Bool) -> [Int64] {
        offers
            ? [testNow - 40 * Self.day, renewedAt, testNow - 8 * Self.day, testNow - 6 * Self.day, testNow - 4 * Self.day]
            : [testNow - 40 * Self.day, renewedAt, testNow - 5 * Self.day]
    }

    /// Each delivery is ingested a minute after the newest fact delivered so far happened.
    func deliveryTimes(_ order: [Int], offers: Bool = false) -> [Int64] {
        let happened = happened(offers)
        var newest = Int64.min
        return order.map { index in
            newest = max(newest, happened[index])
            return newest + 60_000
        }
    }

    func events(_ store: any LedgerStore) async throws -> [OutboxEvent] {
        try await store.events(after: 0, limit: 1000)
    }

    /// Ingests the batches at the given indexes (repeats allowed) and returns the outbox.
    func run(_ backend: Backend, order: [Int], offers: Bool = false) async throws -> [OutboxEvent] {
        var result: [OutboxEvent] = []
        try await withStore(backend) { store, _ in
            let batches = offers ? offersLifecycle() : lifecycle()
            for (index, now) in zip(order, deliveryTimes(order, offers: offers)) {
                _ = try await store.ingest(batches[index], projector: testProjector, now: now)
            }
            result = try await events(store)
            // A rebuild finds nothing to change, so it adds no event.
            _ = try await store.rebuild(projector: testProjector, now: testNow)
            #expect(try await events(store).count == result.count)
        }
        return result
    }

    @Test("in order: the lifecycle's events, in commit order, with stable ids", arguments: Backend.all)
    func inOrder(backend: Backend) async throws {
        let events = try await run(backend, order: [0, 1, 2])
        #expect(events.map(\.type) == ["subscription.started", "subscription.renewed", "subscription.auto_renew_disabled"])
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
        #expect(Set(events.map(\.id)).count == events.count)
        let renewed = try #require(events.first { $0.type == "subscription.renewed" })
        #expect(renewed.appUserId == "u1")
        #expect(renewed.originalTransactionId == "o1")
        #expect(renewed.productId == "com.example.pro")
        #expect(renewed.entitlements == ["pro"])
        #expect(renewed.environment == "Production")
        #expect(renewed.occurredAt == renewedAt)
        #expect(renewed.cause.contains(#""notificationUUID":"n2""#))
        #expect(renewed.cause.contains(#""transactionIds":["t2"]"#))
        #expect(renewed.recordedAt == renewedAt + 60_000)
        #expect(String(decoding: renewed.answer, as: UTF8.self).contains(#""appUserId":"u1""#))
    }

    @Test("duplicated: the same sequence, ids and all", arguments: Backend.all)
    func duplicated(backend: Backend) async throws {
        let inOrder = try await run(backend, order: [0, 1, 2])
        let duplicated = try await run(backend, order: [0, 0, 1, 0, 2, 1, 2])
        #expect(duplicated.map(\.id) == inOrder.map(\.id))
        #expect(duplicated.map(\.type) == inOrder.map(\.type))
    }

    /// What a consumer holds once it applied the corrections, in the order it happened.
    static func happened(_ events: [OutboxEvent]) -> [String] {
        events.net.sorted { ($0.occurredAt, $0.type) < ($1.occurredAt, $1.type) }.map { event in
            "\(event.type) \(event.occurredAt) \(event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })"
        }
    }

    @Test("shuffled: the same events, in the order they happened", arguments: Backend.all, [[1, 0, 2], [1, 2, 0], [2, 1, 0, 1, 2]])
    func shuffled(backend: Backend, order: [Int]) async throws {
        func happened(_ events: [OutboxEvent]) -> [String] { Self.happened(events) }
        let inOrder = try await run(backend, order: [0, 1, 2])
        let shuffled = try await run(backend, order: order)
        #expect(happened(shuffled) == happened(inOrder))
    }

    @Test("offers, price increases and extensions: their events, in order", arguments: Backend.all)
    func offersInOrder(backend: Backend) async throws {
        let events = try await run(backend, order: [0, 1, 2, 3, 4], offers: true)
        #expect(events.map(\.type) == Self.offersTypes)
        let offer = try #require(events.first { $0.type == "subscription.offer_redeemed" })
        #expect(offer.details["offerType"] == "promotional" && offer.details["transactionId"] == "t2")
        #expect(offer.details["periodType"] == "offer" && offer.details["store"] == "appStore")
        #expect(offer.cause.contains(#""notificationUUID":"m2""#))
        #expect(offer.occurredAt == renewedAt)
        #expect(events.filter { $0.type == "subscription.price_increase" }.map { $0.details["status"] } == ["pending", "accepted"])
        let extended = try #require(events.first { $0.type == "subscription.extended" })
        #expect(extended.details["from"] == String(testNow + 20 * Self.day) && extended.details["to"] == String(testNow + 25 * Self.day))
        #expect(extended.occurredAt == testNow - 6 * Self.day)
    }

    @Test(
        "offers lifecycle shuffled or duplicated: the same events, in the order they happened", arguments: Backend.all,
        [[1, 0, 3, 2, 4], [0, 1, 4, 3, 2], [1, 3, 0, 4, 2], [0, 1, 1, 3, 2, 3, 4, 0, 4]])
    func offersShuffled(backend: Backend, order: [Int]) async throws {
        func happened(_ events: [OutboxEvent]) -> [String] { Self.happened(events) }
        let inOrder = try await run(backend, order: [0, 1, 2, 3, 4], offers: true)
        let shuffled = try await run(backend, order: order, offers: true)
        #expect(happened(shuffled) == happened(inOrder))
    }

    @Test("a replay in a message of its own adds no event", arguments: Backend.all)
    func replayInAnotherMessage(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            for batch in lifecycle() { _ = try await store.ingest(batch, projector: testProjector, now: testNow) }
            let before = try await events(store)
            var replay = lifecycle()[1]
            replay.message.notificationUUID = nil
            _ = try await store.ingest(replay, projector: testProjector, now: testNow + Self.day)
            #expect(try await events(store) == before)
        }
    }

    @Test("events commit with the ledger append or not at all", arguments: Backend.all)
    func sameTransaction(backend: Backend) async throws {
        let faults = FaultSwitch()
        try await withStore(backend, fault: faults.injector, now: deliveryTimes([0])[0]) { store, _ in
            faults.arm(.afterProjections)
            await #expect(throws: StorageError.self) {
                _ = try await store.ingest(lifecycle()[0], projector: testProjector, now: deliveryTimes([0])[0])
            }
            #expect(try await store.rows("events") == 0)
            #expect(try await store.rows("facts") == 0)
            faults.arm(nil)
            _ = try await store.ingest(lifecycle()[0], projector: testProjector, now: deliveryTimes([0])[0])
            #expect(try await events(store).map(\.type) == ["subscription.started"])
        }
    }
}
