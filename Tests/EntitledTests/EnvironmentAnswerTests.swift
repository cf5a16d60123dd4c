import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Testing

/// A customer answer merges the environments the configuration lets grant access
/// (`apps[].grantEnvironments`, default Production and Sandbox); each entitlement and subscription
/// says its environment, and `?environment=` still filters.
@Suite struct EnvironmentAnswerTests {
    static let t0 = APIHarness.start
    static let day: Int64 = 86_400_000

    /// A purchase notification of `otid` in `environment`, expiring at `expires`.
    static func purchase(otid: String, token: String, environment: AppStoreEnvironment, expires: Int64) -> String {
        Apple.notification(
            .subscribed, .initialBuy, signed: t0,
            transaction: Apple.transaction(
                otid: otid, tid: otid, purchase: expires - 30 * day, expires: expires, signed: t0, token: token,
                environment: environment),
            environment: environment)
    }

    static func configuration(grant: [String]?) -> Configuration {
        var configuration = APIHarness.configuration()
        if let grant { configuration.apps[0].grantEnvironments = grant }
        return configuration
    }

    @Test func aSandboxPurchaseIsActiveInThePlainAnswerAndFiltersStillFilter() async throws {
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            #expect(try await api.postV2(Self.purchase(otid: "s1", token: token, environment: .sandbox, expires: Self.t0 + Self.day)).status == 200)

            let plain = try await api.customer("u1")
            #expect(plain.json["state"] as? String == "active")
            #expect(plain.json["environment"] as? String == "Sandbox")
            #expect(plain.entitlement("pro")?["active"] as? Bool == true)
            #expect(plain.entitlement("pro")?["environment"] as? String == "Sandbox")
            let subscriptions = plain.json["subscriptions"] as? [[String: Any]] ?? []
            #expect(subscriptions.map { $0["environment"] as? String } == ["Sandbox"])

            let production = try await api.send("GET", "/v1/customers/u1?environment=Production", auth: APIHarness.reader)
            #expect(production.json["state"] as? String == "new")
            #expect((production.json["entitlements"] as? [String: Any])?.isEmpty == true)
            let sandbox = try await api.send("GET", "/v1/customers/u1?environment=Sandbox", auth: APIHarness.reader)
            #expect(sandbox.json["state"] as? String == "active")
            #expect(sandbox.entitlement("pro")?["environment"] as? String == "Sandbox")
        }
    }

    @Test(arguments: [
        (grant: [String]?.none, sandboxGrants: true),
        (grant: ["Production", "Sandbox"], sandboxGrants: true),
        (grant: ["Sandbox"], sandboxGrants: true),
        (grant: ["Production"], sandboxGrants: false),
        (grant: [], sandboxGrants: false),
    ])
    func onlyTheGrantEnvironmentsGrant(grant: [String]?, sandboxGrants: Bool) async throws {
        try await APIHarness.run(configuration: Self.configuration(grant: grant)) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            #expect(try await api.postV2(Self.purchase(otid: "s1", token: token, environment: .sandbox, expires: Self.t0 + Self.day)).status == 200)
            let plain = try await api.customer("u1")
            #expect(plain.json["state"] as? String == (sandboxGrants ? "active" : "new"))
            #expect((plain.entitlement("pro")?["active"] as? Bool ?? false) == sandboxGrants)
            // A filter names its environment whatever the configuration grants.
            let sandbox = try await api.send("GET", "/v1/customers/u1?environment=Sandbox", auth: APIHarness.reader)
            #expect(sandbox.entitlement("pro")?["active"] as? Bool == true)
        }
    }

    @Test func anEntitlementActiveInOneEnvironmentIsActiveAndEverySubscriptionIsListed() async throws {
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            // Production's expired yesterday; Sandbox's runs until tomorrow.
            #expect(try await api.postV2(Self.purchase(otid: "p1", token: token, environment: .production, expires: Self.t0 - Self.day)).status == 200)
            #expect(try await api.postV2(Self.purchase(otid: "s1", token: token, environment: .sandbox, expires: Self.t0 + Self.day)).status == 200)
            let plain = try await api.customer("u1")
            #expect(plain.json["state"] as? String == "active")
            #expect(plain.json["environment"] as? String == "Production")
            #expect(plain.entitlement("pro")?["active"] as? Bool == true)
            #expect(plain.entitlement("pro")?["originalTransactionId"] as? String == "s1")
            #expect(plain.entitlement("pro")?["environment"] as? String == "Sandbox")
            let subscriptions = plain.json["subscriptions"] as? [[String: Any]] ?? []
            #expect(subscriptions.map { $0["environment"] as? String } == ["Production", "Sandbox"])
            #expect(subscriptions.map { ($0["current"] as? [String: Any])?["originalTransactionId"] as? String } == ["p1", "s1"])
            // The answer changes when the Sandbox subscription ends: that is its next change.
            #expect(plain.json["nextChangeAt"] as? String == ISO8601.format(milliseconds: Self.t0 + Self.day))

            let production = try await api.send("GET", "/v1/customers/u1?environment=Production", auth: APIHarness.reader)
            #expect(production.json["state"] as? String == "inactive")
            #expect(production.entitlement("pro")?["active"] as? Bool == false)
        }
    }

    @Test func grantEnvironmentsAreReadAndCheckedWithTheirPath() throws {
        let loader = ConfigurationLoader(environment: [:])
        let app = #"{"bundleId": "b", "environments": ["Sandbox"], "grantEnvironments": ["Sandbox", "Xcode"]}"#
        let configuration = try loader.parse(Data(#"{"apps": [\#(app)]}"#.utf8))
        #expect(configuration.apps[0].grantEnvironments == ["Sandbox", "Xcode"])
        #expect(configuration.grantEnvironments == [.sandbox, .xcode])
        #expect(App(bundleId: "b").grantEnvironments == ["Production", "Sandbox"])
        #expect {
            try loader.parse(Data(#"{"apps": [{"bundleId": "b", "environments": ["Sandbox"], "grantEnvironments": ["Staging"]}]}"#.utf8))
        } throws: { error in
            (error as? ConfigurationError)?.path.hasSuffix("apps[0].grantEnvironments[0]") == true
        }
    }

    @Test func everyAppsGrantEnvironmentsTogetherProductionFirst() {
        var configuration = Configuration()
        configuration.apps = [
            App(bundleId: "a", environments: ["Sandbox"], grantEnvironments: ["Sandbox"]),
            App(bundleId: "b", environments: ["Sandbox"], grantEnvironments: ["LocalTesting", "Production"]),
        ]
        #expect(configuration.grantEnvironments == [.production, .sandbox, .localTesting])
        #expect(Configuration().grantEnvironments == [.production, .sandbox])
    }
}
