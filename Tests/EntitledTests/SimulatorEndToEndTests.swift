import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

@testable import Storage

/// The simulator drives a real server (real verifier, engine and SQLite ledger) over loopback:
/// every notification is signed by the simulator's CA and posted as Apple would, and the server
/// takes `now` from the simulator's virtual clock. The customer's answer is checked at each step.
@Suite struct SimulatorEndToEndTests {
    struct World {
        let simulator: Simulator
        let port: Int

        func customer(_ id: String) async throws -> Loopback.Reply {
            try await Loopback.send(
                port: port, "GET", "/v1/customers/\(id)?environment=Sandbox", headers: ["Authorization": APIHarness.reader])
        }

        func token(_ id: String) async throws -> String {
            try #require(try await customer(id).json["appAccountToken"] as? String)
        }

        @discardableResult
        func act(_ action: String, _ configure: (inout ActionRequest) -> Void = { _ in }) async throws -> [SignedNotification] {
            var request = ActionRequest(action)
            configure(&request)
            return try await simulator.perform(request)
        }
    }

    /// `postgres`: a PostgreSQL URL to keep the ledger in (a schema of its own, dropped at the
    /// end) instead of a temporary SQLite file.
    static func run(
        catalog: Catalog = .demo, postgres: String? = nil, configure: (inout App) -> Void = { _ in }, _ body: (World) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-sim-e2e-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ca = try SimulatorCA.ephemeral()
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(ca.rootDER).write(to: rootFile)
        var configuration = APIHarness.configuration()
        configuration.apps = [
            App(
                bundleId: catalog.bundleId, appAppleId: catalog.appAppleId, environments: ["Production", "Sandbox"],
                appleRootCertificates: [rootFile.path], gracePeriodDays: 0,
                products: [
                    Product(productId: "pro.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 2, entitlements: ["pro"]),
                    Product(productId: "pro.yearly", type: .autoRenewable, subscriptionGroup: "pro", level: 1, entitlements: ["pro"]),
                    Product(productId: "basic.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 3, entitlements: ["basic"]),
                    Product(productId: "coins", type: .consumable),
                    Product(productId: "lifetime", type: .nonConsumable, entitlements: ["lifetime"]),
                ])
        ]
        configure(&configuration.apps[0])
        let clock = AppStoreSimulator.VirtualClock(milliseconds: APIHarness.start)
        var options = StoreConfiguration()
        options.postgresSchema = postgres.map { _ in "sim_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12) }
        let store = try await openStore(url: postgres ?? "sqlite:\(folder.path)/ledger.sqlite", configuration: options)
        func close() async {
            if let schema = options.postgresSchema { try? await (store as? PostgresStore)?._execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE") }
            await store.close()
        }
        let (server, ledger) = try await startServer(configuration: configuration, store: store, clock: clock)
        let transport = HTTPNotificationTransport(url: URL(string: "http://127.0.0.1:\(server.port)/v1/apple/notifications")!)
        let simulator = Simulator(catalog: catalog, ca: ca, clock: clock, transport: transport)
        do {
            try await body(World(simulator: simulator, port: server.port))
            // Every delivery was accepted, and the projections equal a rebuild from the ledger.
            let failures = await simulator.sender.history(onlyFailures: true)
            #expect(failures.isEmpty, "undelivered: \(failures.map(\.notificationType))")
            let report = try await store.rebuild(projector: ledger.projector, now: clock.nowMilliseconds())
            #expect(report.differences == 0, "rebuild changed \(report.changedCustomers)")
        } catch {
            await server.shutdown()
            await close()
            throw error
        }
        await server.shutdown()
        await close()
    }

    @Test func purchaseRenewCancelExpire() async throws {
        try await Self.run { world in
            let token = try await world.token("alice")
            try await world.act("customer") { $0.customer = "alice" }
            let bought = try await world.act("purchase") {
                $0.customer = "alice"
                $0.product = "pro.monthly"
                $0.appAccountToken = token
            }
            #expect(bought.map(\.payload.notificationType) == [.subscribed])
            var pro = try await world.customer("alice").entitlement("pro")
            #expect(pro?["status"] as? String == "active")
            #expect(pro?["willRenew"] as? Bool == true)
            let firstExpiry = pro?["expiresAt"] as? String

            let renewed = try await world.act("advance") { $0.by = "P1M1D" }
            #expect(renewed.map(\.payload.notificationType).contains(.didRenew))
            pro = try await world.customer("alice").entitlement("pro")
            #expect(pro?["status"] as? String == "active")
            #expect(pro?["expiresAt"] as? String != firstExpiry)

            try await world.act("autoRenew") {
                $0.customer = "alice"
                $0.product = "pro.monthly"
                $0.enabled = false
            }
            let cancelled = try await world.customer("alice")
            #expect(cancelled.entitlement("pro")?["willRenew"] as? Bool == false)
            #expect(cancelled.entitlement("pro")?["active"] as? Bool == true)

            let expired = try await world.act("advance") { $0.by = "P1M" }
            #expect(expired.map(\.payload.notificationType).contains(.expired))
            let lapsed = try await world.customer("alice")
            #expect(lapsed.entitlement("pro")?["status"] as? String == "expired")
            #expect(lapsed.json["state"] as? String == "inactive")
        }
    }

    @Test func billingFailureWithGraceThenRecovery() async throws {
        try await Self.run { world in
            let token = try await world.token("bob")
            try await world.act("customer") { $0.customer = "bob" }
            try await world.act("gracePeriod") { $0.days = 16 }
            try await world.act("purchase") {
                $0.customer = "bob"
                $0.product = "pro.monthly"
                $0.appAccountToken = token
            }
            try await world.act("paymentMethod") {
                $0.customer = "bob"
                $0.paymentMethod = "failing"
            }
            let failed = try await world.act("advance") { $0.by = "P1M1D" }
            #expect(failed.contains { $0.payload.notificationType == .didFailToRenew && $0.payload.subtype == .gracePeriod })
            let inGrace = try await world.customer("bob").entitlement("pro")
            #expect(inGrace?["status"] as? String == "gracePeriod")
            #expect(inGrace?["active"] as? Bool == true)
            #expect(inGrace?["gracePeriodExpiresAt"] as? String != nil)

            let recovered = try await world.act("paymentMethod") {
                $0.customer = "bob"
                $0.paymentMethod = "ok"
            }
            #expect(recovered.contains { $0.payload.notificationType == .didRenew && $0.payload.subtype == .billingRecovery })
            let back = try await world.customer("bob").entitlement("pro")
            #expect(back?["status"] as? String == "active")
        }
    }

    @Test func upgradeTakesEffectAtOnceAndRefundRevokesTheLifetimeUnlock() async throws {
        try await Self.run { world in
            let token = try await world.token("carol")
            try await world.act("customer") { $0.customer = "carol" }
            try await world.act("purchase") {
                $0.customer = "carol"
                $0.product = "basic.monthly"
                $0.appAccountToken = token
            }
            #expect(try await world.customer("carol").entitlement("basic")?["active"] as? Bool == true)
            try await world.act("upgrade") {
                $0.customer = "carol"
                $0.product = "basic.monthly"
                $0.to = "pro.yearly"
            }
            let upgraded = try await world.customer("carol")
            #expect(upgraded.entitlement("pro")?["productId"] as? String == "pro.yearly")
            #expect(upgraded.entitlement("pro")?["active"] as? Bool == true)
            #expect(upgraded.entitlement("basic")?["active"] as? Bool != true)

            try await world.act("purchase") {
                $0.customer = "carol"
                $0.product = "lifetime"
                $0.appAccountToken = token
            }
            #expect(try await world.customer("carol").entitlement("lifetime")?["active"] as? Bool == true)
            try await world.act("refund") {
                $0.customer = "carol"
                $0.product = "lifetime"
            }
            let refunded = try await world.customer("carol").entitlement("lifetime")
            #expect(refunded?["active"] as? Bool == false)
            #expect(refunded?["status"] as? String == "refunded")
        }
    }
}
