import AppStore
import AppStoreSimulator
import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Testing

/// Retention messaging against the simulator: its CA signs the realtime requests as Apple would,
/// its lifecycle (renewals, a cancellation, the expiry) reaches the server as Apple's
/// notifications, and the save-rate report attributes each answer to what followed.
@Suite struct RetentionSimulatorTests {
    static let stay = "6f0e7c34-5f3a-4a59-9a53-0f6b3f1d2a10"
    static let fallback = "0b7b1f3e-2d44-4c8e-8b8f-1a2b3c4d5e6f"

    static func rules(_ world: SimulatorEndToEndTests.World) async throws -> [[String: Any]] {
        let report = try await Loopback.send(
            port: world.port, "GET", "/v1/retention/save-rates", headers: ["Authorization": APIHarness.admin])
        return try #require(report.json["rules"] as? [[String: Any]])
    }

    @Test func aSavedAndALostSubscriberGiveASaveRateOfOneHalf() async throws {
        try await SimulatorEndToEndTests.run(configure: { app in
            app.retention = RetentionRuleSet(
                rules: [RetentionRule(id: "stay", when: RetentionCondition(productIds: ["pro.monthly"]), respond: .message(messageIdentifier: Self.stay))],
                defaultAnswer: .message(messageIdentifier: Self.fallback))
        }) { world in
            var subscriptions: [String: String] = [:]
            for customer in ["alice", "bob"] {
                let token = try await world.token(customer)
                try await world.act("customer") { $0.customer = customer }
                try await world.act("purchase") {
                    $0.customer = customer
                    $0.product = "pro.monthly"
                    $0.appAccountToken = token
                }
                subscriptions[customer] = try #require(
                    try await world.customer(customer).entitlement("pro")?["originalTransactionId"] as? String)
            }
            let now = world.simulator.clock.nowMilliseconds()
            for customer in ["alice", "bob", "nobody"] {
                let payload = try world.simulator.ca.signer.sign(
                    DecodedRealtimeRequestBody(
                        originalTransactionId: subscriptions[customer] ?? "999999", appAppleId: Catalog.demo.appAppleId,
                        productId: "pro.monthly", userLocale: "en-US", requestIdentifier: UUID().uuidString, environment: .sandbox,
                        signedDate: now))
                let reply = try await Loopback.send(
                    port: world.port, "POST", "/v1/apple/retention", headers: ["Content-Type": "application/json"],
                    body: Array(#"{"signedPayload":"\#(payload)"}"#.utf8))
                #expect(reply.status == 200)
                let expected = customer == "nobody" ? Self.fallback : Self.stay
                #expect((reply.json["message"] as? [String: Any])?["messageIdentifier"] as? String == expected)
            }
            // The records are written within 100 ms (real time) of the answers.
            for _ in 0..<100 where try await Self.rules(world).count < 2 { try await Task.sleep(for: .milliseconds(20)) }
            // Bob cancels anyway; Alice stays. A month later one renewed and one expired.
            try await world.act("autoRenew") {
                $0.customer = "bob"
                $0.product = "pro.monthly"
                $0.enabled = false
            }
            let later = try await world.act("advance") { $0.by = "P1M1D" }
            #expect(later.map(\.payload.notificationType).contains(.didRenew))
            #expect(later.map(\.payload.notificationType).contains(.expired))
            let rules = try await Self.rules(world)
            let stay = try #require(rules.first { $0["ruleId"] as? String == "stay" })
            #expect(stay["requests"] as? Int == 2)
            #expect(stay["renewed"] as? Int == 1)
            #expect(stay["expired"] as? Int == 1)
            #expect(stay["saveRate"] as? Double == 0.5)
            // The unknown subscription's answer stays undecided: nothing of it ever arrives.
            let fallback = try #require(rules.first { $0["ruleId"] as? String == "default" })
            #expect(fallback["requests"] as? Int == 1 && fallback["undecided"] as? Int == 1)
        }
    }
}
