import EntitledKit
import Foundation
import Testing

/// The answer cache: served while fresh, refreshed in the background when stale, used offline
/// until the answer's own validity and never beyond; the device's clock changes none of it.
@Suite struct CacheTests {
    /// alice with a month of pro (expires 30/31 days on; the server's TTL is an hour).
    static func subscribed(_ world: KitWorld, _ id: String = "alice") async throws -> (EntitledClient, CustomerAnswer) {
        let client = world.client(id)
        let token = try await client.customer().appAccountToken
        let (_, jws) = try await world.buy(id, "pro.monthly", token: token)
        _ = try await client.post(signedTransaction: jws)
        return (client, try await client.refresh())
    }

    @Test func aFreshAnswerIsServedAndAStaleOneRefreshedInTheBackground() async throws {
        try await KitWorld.run { world in
            let (client, first) = try await Self.subscribed(world)
            let requests = world.transport.requests
            try await world.advance(seconds: 1800)
            #expect(try await client.customer() == first)
            #expect(world.transport.requests == requests)
            // Past max-age (an hour): the stale answer at once, a new one fetched behind it.
            try await world.advance(seconds: 1801)
            #expect(try await client.customer() == first)
            await client.backgroundRefreshesFinished()
            #expect(world.transport.requests == requests + 1)
            let second = try await client.customer()
            #expect(second.serverTime > first.serverTime)
            #expect(world.transport.requests == requests + 1)
        }
    }

    @Test func offlineAStaleAnswerHoldsUntilItsExpiryAndNotBeyond() async throws {
        try await KitWorld.run { world in
            let (client, answer) = try await Self.subscribed(world)
            let expiry = try #require(answer.validUntil)
            world.transport.offline = true
            let untilExpiry = Int64(expiry.timeIntervalSince(answer.serverTime))
            try await world.advance(seconds: untilExpiry - 60)
            #expect(await client.isEntitled("pro"))
            #expect(try await client.customer() == answer)
            try await world.advance(seconds: 61)
            #expect(await !client.isEntitled("pro"))
            await #expect(throws: EntitledError.self) { _ = try await client.customer() }
            // Back online: the server's answer (expired, as the simulator's renewals were not delivered).
            world.transport.offline = false
            #expect(try await client.customer().state == .inactive)
        }
    }

    @Test func aRelaunchedAppOfflineUsesTheDiskCacheWithinItsValidity() async throws {
        try await KitWorld.run { world in
            let (_, answer) = try await Self.subscribed(world)
            let expiry = try #require(answer.validUntil)
            world.transport.offline = true
            try await world.advance(seconds: 3 * KitWorld.day)
            // A new process: no memory cache, a new monotonic origin.
            let relaunched = world.client("alice", monotonic: FakeMonotonic())
            #expect(await relaunched.isEntitled("pro"))
            // The wall clock set back before the answer cannot rewind trusted time below what was seen.
            world.wall.set(answer.serverTime.addingTimeInterval(-365 * 86_400))
            let again = world.client("alice", monotonic: FakeMonotonic())
            #expect(try await again.trustedNow()! >= answer.serverTime)
            // Past the answer's expiry by the (corrected) wall clock: not used.
            world.wall.set(expiry.addingTimeInterval(60))
            #expect(await !world.client("alice", monotonic: FakeMonotonic()).isEntitled("pro"))
        }
    }

    /// A relaunch in the same boot keeps the monotonic clock's origin: the stored anchor still
    /// holds, so the wall clock plays no part either way.
    @Test func aRelaunchInTheSameBootIgnoresTheWallClock() async throws {
        try await KitWorld.run { world in
            let (_, answer) = try await Self.subscribed(world)
            let expiry = try #require(answer.validUntil)
            world.transport.offline = true
            try await world.advance(seconds: Int64(expiry.timeIntervalSince(answer.serverTime)) + 60)
            world.wall.set(answer.serverTime)
            #expect(await !world.client("alice").isEntitled("pro"))
            world.wall.set(answer.serverTime.addingTimeInterval(-365 * 86_400))
            #expect(await !world.client("alice").isEntitled("pro"))
        }
    }

    @Test func settingTheDeviceClockBackDoesNotExtendAccess() async throws {
        try await KitWorld.run { world in
            let (client, answer) = try await Self.subscribed(world)
            let expiry = try #require(answer.validUntil)
            world.transport.offline = true
            world.wall.set(answer.serverTime.addingTimeInterval(-30 * 86_400))
            #expect(try await client.trustedNow() == answer.serverTime)
            // Real time passes beyond the expiry while the wall clock stays a month behind.
            try await world.advance(seconds: Int64(expiry.timeIntervalSince(answer.serverTime)) + 60)
            world.wall.set(answer.serverTime.addingTimeInterval(-30 * 86_400))
            #expect(await !client.isEntitled("pro"))
        }
    }

    @Test func settingTheDeviceClockForwardDoesNotEndAccessEarly() async throws {
        try await KitWorld.run { world in
            let (client, answer) = try await Self.subscribed(world)
            let requests = world.transport.requests
            world.transport.offline = true
            world.wall.set(answer.serverTime.addingTimeInterval(365 * 86_400))
            #expect(try await client.trustedNow() == answer.serverTime)
            #expect(await client.isEntitled("pro"))
            // Still fresh: not even a refresh.
            #expect(world.transport.requests == requests)
        }
    }

    /// A Sandbox build and a Production build sharing an app group never read each other's answer.
    @Test func answersAreCachedPerEnvironment() async throws {
        try await KitWorld.run { world in
            _ = try await Self.subscribed(world)
            world.transport.offline = true
            #expect(await world.client("alice").isEntitled("pro"))
            let production = world.client("alice", environment: "Production")
            await #expect(throws: EntitledError.self) { _ = try await production.customer() }
        }
    }

    @Test func aBackendReadsAnyCustomerWithItsAPIKey() async throws {
        try await KitWorld.run { world in
            _ = try await Self.subscribed(world, "a/b é")
            let backend = world.backend()
            #expect(try await backend.customer("a/b é").grants("pro"))
            await #expect(throws: EntitledError.missingAppUserId) { _ = try await backend.customer() }
        }
    }
}
