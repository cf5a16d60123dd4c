import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// Answer-change events held back until the customer's history settles (``EventHold``): written
/// as a hold in the ingest's transaction, released by ``EventHoldStore/releaseEventHolds(projector:now:limit:)``.
@Suite struct EventHoldTests {
    let outbox = EventOutboxTests()
    /// The lifecycle's deliveries, a second apart from here (the facts themselves happened days ago).
    let t0 = testNow

    static func projector(settle: Int = 5, maxHold: Int = 300) -> Projector {
        var projector = testProjector
        projector.eventHold = EventHold(settleSeconds: settle, maxHoldSeconds: maxHold)
        return projector
    }

    func holds(_ store: any LedgerStore) async throws -> any EventHoldStore { store }

    @Test("a change within the settle window pushes the release back", arguments: Backend.all)
    func debounce(backend: Backend) async throws {
        let projector = Self.projector()
        try await withStore(backend, now: t0 + 8_000) { store, _ in
            let holds = try await holds(store)
            _ = try await store.ingest(outbox.lifecycle()[0], projector: projector, now: t0)
            #expect(try await outbox.events(store).isEmpty)
            #expect(try await holds.nextEventHoldRelease() == t0 + 5_000)
            _ = try await store.ingest(outbox.lifecycle()[1], projector: projector, now: t0 + 3_000)
            #expect(try await holds.nextEventHoldRelease() == t0 + 8_000)
            // Not due at the first change's settle: the second pushed it back.
            #expect(try await holds.releaseEventHolds(projector: projector, now: t0 + 5_000, limit: 100) == 0)
            #expect(try await outbox.events(store).isEmpty)
            #expect(try await holds.releaseEventHolds(projector: projector, now: t0 + 8_000, limit: 100) == 1)
            let events = try await outbox.events(store)
            #expect(events.map(\.type) == ["subscription.started", "subscription.renewed"])
            #expect(events.allSatisfy { $0.recordedAt == t0 + 8_000 })
            #expect(try await store.rows("event_holds") == 0)
            #expect(try await holds.nextEventHoldRelease() == nil)
        }
    }

    @Test("changes that keep coming are released at most maxHoldSeconds after the first", arguments: Backend.all)
    func maxHoldCap(backend: Backend) async throws {
        let projector = Self.projector(settle: 5, maxHold: 10)
        try await withStore(backend, now: t0 + 12_000) { store, _ in
            let holds = try await holds(store)
            for (index, at) in [t0, t0 + 4_000, t0 + 8_000].enumerated() {
                _ = try await store.ingest(outbox.lifecycle()[index], projector: projector, now: at)
            }
            #expect(try await holds.nextEventHoldRelease() == t0 + 10_000)
            #expect(try await holds.releaseEventHolds(projector: projector, now: t0 + 10_000, limit: 100) == 1)
            #expect(
                try await outbox.events(store).map(\.type)
                    == ["subscription.started", "subscription.renewed", "subscription.auto_renew_disabled"])
            // A change after the release holds again, from scratch.
            let enabled = Fixture.batch(
                uuid: "n4", facts: [Fixture.renewal(otid: "o1", autoRenew: true, signed: testNow - 4 * day)], claim: Claim(appUserId: "u1"))
            _ = try await store.ingest(enabled, projector: projector, now: t0 + 12_000)
            #expect(try await holds.nextEventHoldRelease() == t0 + 17_000)
        }
    }

    @Test("settleSeconds 0: events at the commit, no hold", arguments: Backend.all)
    func settleZero(backend: Backend) async throws {
        #expect(EventHold(settleSeconds: 0, maxHoldSeconds: 300) == nil)
        let projector = Self.projector(settle: 0)
        let at = outbox.deliveryTimes([0])[0]
        try await withStore(backend, now: at) { store, _ in
            _ = try await store.ingest(outbox.lifecycle()[0], projector: projector, now: at)
            #expect(try await outbox.events(store).map(\.type) == ["subscription.started"])
            #expect(try await store.rows("event_holds") == 0)
        }
    }

    @Test("the hold commits with the ledger append or not at all", arguments: Backend.all)
    func sameTransaction(backend: Backend) async throws {
        let faults = FaultSwitch()
        let projector = Self.projector()
        try await withStore(backend, fault: faults.injector, now: t0) { store, _ in
            faults.arm(.afterProjections)
            await #expect(throws: StorageError.self) { _ = try await store.ingest(outbox.lifecycle()[0], projector: projector, now: t0) }
            #expect(try await store.rows("event_holds") == 0)
            #expect(try await store.rows("facts") == 0)
            faults.arm(nil)
            _ = try await store.ingest(outbox.lifecycle()[0], projector: projector, now: t0)
            #expect(try await store.rows("event_holds") == 1)
            #expect(try await outbox.events(store).isEmpty)
        }
    }

    /// Whose events the outbox holds, in its order, each customer's run once.
    func owners(_ store: any LedgerStore) async throws -> [String] {
        try await outbox.events(store).map { $0.appUserId ?? "-" }.reduce(into: []) { if $0.last != $1 { $0.append($1) } }
    }

    @Test("a release that fails moves its hold back, behind the holds due after it", arguments: Backend.all)
    func failedReleaseMovesBack(backend: Backend) async throws {
        let projector = Self.projector()
        let failures = FailingCommits()
        let now = t0 + 10_000
        // No fold of the rollup journal in the background: it would be the next commit to fail.
        try await withStore(backend, fault: failures.injector, now: now, configure: { options, _ in options.rollupFoldDelay = .seconds(3600) }) {
            store, _ in
            let holds = try await holds(store)
            // u1's hold is due at t0 + 5 s, u2's a second later.
            _ = try await store.ingest(outbox.lifecycle()[0], projector: projector, now: t0)
            let other = Fixture.batch(
                uuid: "m1", facts: [Fixture.transaction(otid: "o2", tid: "o2", expires: testNow + 20 * day, signed: testNow - day)],
                claim: Claim(appUserId: "u2"))
            _ = try await store.ingest(other, projector: projector, now: t0 + 1_000)
            failures.failNext(1)
            await #expect(throws: StorageError.self) { _ = try await holds.releaseEventHolds(projector: projector, now: now, limit: 1) }
            // Held 10 s when it failed: tried again 10 s later, so u2's is next.
            #expect(try await holds.nextEventHoldRelease() == t0 + 6_000)
            #expect(try await holds.releaseEventHolds(projector: projector, now: now, limit: 1) == 1)
            #expect(try await owners(store) == ["u2"])
            #expect(try await holds.nextEventHoldRelease() == now + 10_000)
            #expect(try await holds.releaseEventHolds(projector: projector, now: now + 9_999, limit: 1) == 0)
            #expect(try await holds.releaseEventHolds(projector: projector, now: now + 10_000, limit: 1) == 1)
            #expect(try await owners(store) == ["u2", "u1"])
            #expect(try await store.rows("event_holds") == 0)
        }
    }

    @Test("erasing a customer removes its hold; a rebuild writes none", arguments: Backend.all)
    func erasureAndRebuild(backend: Backend) async throws {
        let projector = Self.projector()
        try await withStore(backend, now: t0) { store, _ in
            _ = try await store.ingest(outbox.lifecycle()[0], projector: projector, now: t0)
            _ = try await store.rebuild(projector: projector, now: t0)
            #expect(try await store.rows("event_holds") == 1)
            #expect(try await store.directory.eraseCustomer(appUserId: "u1", actor: "test", now: t0 + 1_000) != nil)
            #expect(try await store.rows("event_holds") == 0)
            _ = try await store.rebuild(projector: projector, now: t0 + 2_000)
            #expect(try await store.rows("event_holds") == 0)
            #expect(try await outbox.events(store).map(\.type) == ["customer.deleted"])
        }
    }

    /// Every field but the release's own (`sequence`, `recordedAt`); the customer's token (random
    /// in each run's store) left out of the answer.
    static func fields(_ events: [OutboxEvent]) -> [String] {
        events.sorted { ($0.occurredAt, $0.id) < ($1.occurredAt, $1.id) }.map { event in
            let answer = String(decoding: event.answer, as: UTF8.self).replacingOccurrences(of: event.appAccountToken ?? "-", with: "TOKEN")
            return [
                event.id, event.type, String(event.occurredAt), event.productId ?? "-", event.bundleId ?? "-", event.environment ?? "-",
                event.originalTransactionId ?? "-", event.appUserId ?? "-", "\(event.details.sorted { $0.key < $1.key })",
                "\(event.entitlements)", event.cause, answer,
            ].joined(separator: " | ")
        }
    }

    /// Ingests `order`'s batches. In order, each a minute after its newest fact happened, the
    /// holds due then released first (as time goes by); otherwise all within one window, a
    /// millisecond apart after the newest fact happened, released at the end.
    func run(_ backend: Backend, order: [Int], offers: Bool, releasing: Bool) async throws -> [OutboxEvent] {
        let projector = Self.projector(settle: 1)
        var result: [OutboxEvent] = []
        let times = outbox.deliveryTimes(order, offers: offers)
        let last = times.max()! + Int64(order.count)
        try await withStore(backend, now: last + 1_000) { store, _ in
            let holds = try await holds(store)
            let batches = offers ? outbox.offersLifecycle() : outbox.lifecycle()
            for (step, index) in order.enumerated() {
                let now = releasing ? times[step] : times.max()! + Int64(step)
                if releasing { _ = try await holds.releaseEventHolds(projector: projector, now: now, limit: 100) }
                _ = try await store.ingest(batches[index], projector: projector, now: now)
            }
            _ = try await holds.releaseEventHolds(projector: projector, now: last + 1_000, limit: 100)
            result = try await outbox.events(store)
        }
        return result
    }

    @Test(
        "out of order within the window: every field of every event as in order, causes and answers too",
        arguments: Backend.all, [[1, 0, 2], [2, 1, 0], [2, 1, 0, 1, 2]])
    func outOfOrder(backend: Backend, order: [Int]) async throws {
        let inOrder = try await run(backend, order: [0, 1, 2], offers: false, releasing: true)
        let shuffled = try await run(backend, order: order, offers: false, releasing: false)
        #expect(Self.fields(shuffled) == Self.fields(inOrder))
        let disabled = try #require(shuffled.first { $0.type == "subscription.auto_renew_disabled" })
        #expect(disabled.cause.contains(#""notificationUUID":"n3""#))
    }

    @Test(
        "a price increase or auto-renew change shown first by a later fact: one event, dated by its own",
        arguments: Backend.all, [[0, 1, 4, 3, 2], [4, 3, 2, 1, 0]])
    func announcedLate(backend: Backend, order: [Int]) async throws {
        let inOrder = try await run(backend, order: [0, 1, 2, 3, 4], offers: true, releasing: true)
        let shuffled = try await run(backend, order: order, offers: true, releasing: false)
        #expect(shuffled.map(\.type).sorted() == EventOutboxTests.offersTypes.sorted())
        #expect(Self.fields(shuffled) == Self.fields(inOrder))
    }

    /// Holds for `customers` customers, each with two changes ingested at `t0`.
    func holdCustomers(_ customers: Int, in store: any LedgerStore, projector: Projector) async throws {
        for customer in 0..<customers {
            let (otid, claim, d) = ("o\(customer)", Claim(appUserId: "u\(customer)"), EventOutboxTests.day)
            let batches = [
                Fixture.batch(
                    uuid: "c\(customer)-0",
                    facts: [
                        Fixture.transaction(otid: otid, tid: otid + "-t1", expires: testNow - 10 * d, signed: testNow - 40 * d),
                        Fixture.renewal(otid: otid, autoRenew: true, signed: testNow - 40 * d),
                    ], claim: claim),
                Fixture.batch(
                    uuid: "c\(customer)-1",
                    facts: [Fixture.transaction(otid: otid, tid: otid + "-t2", expires: testNow + 20 * d, signed: outbox.renewedAt)],
                    claim: claim),
            ]
            for batch in batches { _ = try await store.ingest(batch, projector: projector, now: t0) }
        }
        #expect(try await store.rows("event_holds") == Int64(customers))
    }

    @Test("two servers on one PostgreSQL release each hold once", arguments: Backend.postgresOnly)
    func releaseOnceAcrossServers(backend: Backend) async throws {
        let projector = Self.projector()
        try await withStore(backend, now: t0 + 10_000) { store, database in
            let customers = 24
            try await holdCustomers(customers, in: store, projector: projector)
            let other = try await database.open()
            let (first, second) = (try await holds(store), try await holds(other))
            async let a = first.releaseEventHolds(projector: projector, now: t0 + 5_000, limit: 1000)
            async let b = second.releaseEventHolds(projector: projector, now: t0 + 5_000, limit: 1000)
            let released = try await [a, b]
            await other.close()
            #expect(released.reduce(0, +) == customers)
            let events = try await outbox.events(store)
            #expect(events.count == 2 * customers)
            #expect(Set(events.map(\.id)).count == events.count)
            #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
            #expect(try await store.rows("event_holds") == 0)
        }
    }

    /// Each release is its own transaction, but a pass submits them together: SQLite's writer
    /// commits them in groups rather than one commit (and one fsync) each.
    @Test("a pass's releases commit in groups on SQLite", arguments: [Backend.sqliteFile, .sqliteMemory])
    func releasesCommitInGroups(backend: Backend) async throws {
        let projector = Self.projector()
        let commits = CountedCommits()
        try await withStore(backend, fault: commits.injector, now: t0 + 10_000) { store, _ in
            let customers = 48
            try await holdCustomers(customers, in: store, projector: projector)
            let before = commits.count
            #expect(try await holds(store).releaseEventHolds(projector: projector, now: t0 + 5_000, limit: 1000) == customers)
            #expect(commits.count - before <= customers / 2)
            #expect(try await outbox.events(store).count == 2 * customers)
            #expect(try await store.rows("event_holds") == 0)
        }
    }
}

/// Counts the commits that reach ``FaultPoint/beforeCommit``.
final class CountedCommits: Sendable {
    private let counted = Mutex(0)

    var count: Int { counted.withLock { $0 } }

    var injector: FaultInjector {
        { [self] point in
            if point == .beforeCommit { counted.withLock { $0 += 1 } }
        }
    }
}

/// Fails the next commits it is told to (``FaultPoint/beforeCommit``), then lets every one through.
final class FailingCommits: Sendable {
    private let left = Mutex(0)

    func failNext(_ count: Int) { left.withLock { $0 = count } }

    var injector: FaultInjector {
        { [self] point in
            guard point == .beforeCommit else { return }
            let fail = left.withLock { left in
                guard left > 0 else { return false }
                left -= 1
                return true
            }
            if fail { throw StorageError(.faultInjected, "test fault before a commit") }
        }
    }
}
