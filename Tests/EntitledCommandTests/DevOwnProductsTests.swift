import AppStoreTesting
@testable import EntitledTestSupport
import Foundation
import Testing

/// `entitled dev` with your own products: `--config` (your apps, products and entitlements),
/// `--storekit` (Xcode's file), and Xcode-environment transactions posted by an app under
/// StoreKit testing.
@Suite struct DevOwnProductsTests {
    static let key = DevDashboardTests.key

    /// A new folder holding `name` with `text` (remove the folder after).
    static func file(_ name: String, _ text: String) throws -> (folder: URL, file: URL) {
        let folder = DevRestartTests.folder()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return (folder, file)
    }

    /// The customer's entitlements in the default answer (no `?environment=`): id → product.
    static func entitlements(_ port: Int, _ customer: String) async throws -> [String: String] {
        let reply = try await Loopback.send(port: port, "GET", "/v1/customers/\(customer)", headers: ["Authorization": "Bearer \(key)"])
        let all = reply.json["entitlements"] as? [String: [String: Any]] ?? [:]
        return all.filter { $0.value["active"] as? Bool == true }.compactMapValues { $0["productId"] as? String }
    }

    /// Buys `product` for a new `customer` through the dashboard's actions.
    static func buy(_ port: Int, _ customer: String, _ product: String) async throws -> Int {
        let created = try await DevDashboardTests.dev(port, "POST", "/dev/actions", #"{"action": "customer", "customer": "\#(customer)"}"#)
        #expect(created.status == 200)
        let bought = try await DevDashboardTests.dev(
            port, "POST", "/dev/actions", #"{"action": "purchase", "customer": "\#(customer)", "product": "\#(product)"}"#)
        return bought.status
    }

    @Test func devWithAConfigurationSellsItsProductsAndGrantsItsEntitlements() async throws {
        // A Production-only app: dev adds the simulator's Sandbox (and Xcode) to what it accepts and grants.
        let (folder, config) = try Self.file(
            "entitled.json",
            #"""
            {"apps": [{"bundleId": "com.acme.birds", "appAppleId": 42, "environments": ["Production"],
              "products": [
                {"productId": "birds.premium.monthly", "type": "autoRenewable", "subscriptionGroup": "birds",
                 "entitlements": ["premium", "sync"]},
                {"productId": "birds.lifetime", "type": "nonConsumable", "entitlements": ["premium"]}]}]}
            """#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let dev = try await ServeProcess.start { DevRestartTests.devArguments($0, ["--config", config.path]) }
        defer { dev.terminate() }
        // Not seeded: the demo customers would buy products this catalog does not sell.
        #expect(try await Self.entitlements(dev.port, "alice") == [:])
        #expect(try await Self.buy(dev.port, "zoe", "birds.premium.monthly") == 200)
        #expect(try await Self.entitlements(dev.port, "zoe") == ["premium": "birds.premium.monthly", "sync": "birds.premium.monthly"])
        #expect(try await Self.buy(dev.port, "yann", "pro.monthly") == 404)
        // App Store apps only: no fake Google Play.
        let play = try await DevDashboardTests.dev(dev.port, "GET", "/dev/play")
        #expect(play.status == 404)
        #expect(play.code == "NO_PLAY_APP")
    }

    static let storeKitFile = #"""
            {"identifier": "A1", "products": [
               {"displayPrice": "4.99", "familyShareable": false, "productID": "com.acme.coins", "type": "Consumable"},
               {"displayPrice": "29.99", "familyShareable": false, "productID": "com.acme.unlock", "type": "NonConsumable"}],
             "subscriptionGroups": [{"id": "21430000", "name": "Acme Pro", "subscriptions": [
               {"displayPrice": "2.99", "familyShareable": false, "groupNumber": 1, "productID": "com.acme.pro.monthly",
                "recurringSubscriptionPeriod": "P1M", "subscriptionGroupID": "21430000", "type": "RecurringSubscription",
                "introductoryOffer": {"paymentMode": "free", "subscriptionPeriod": "P1W", "numberOfPeriods": 1}}]}],
             "version": {"major": 3, "minor": 0}}
            """#

    @Test func devWithAStoreKitFileSellsItsProducts() async throws {
        let (folder, storeKit) = try Self.file("Products.storekit", Self.storeKitFile)
        defer { try? FileManager.default.removeItem(at: folder) }
        let dev = try await ServeProcess.start {
            DevRestartTests.devArguments($0, ["--storekit", storeKit.path, "--bundle-id", "com.acme.app"])
        }
        defer { dev.terminate() }
        #expect(try await Self.buy(dev.port, "zoe", "com.acme.pro.monthly") == 200)
        #expect(try await Self.buy(dev.port, "yann", "com.acme.unlock") == 200)
        // Without a configuration a subscription grants its group, a one-time purchase its own id.
        #expect(try await Self.entitlements(dev.port, "zoe") == ["21430000": "com.acme.pro.monthly"])
        #expect(try await Self.entitlements(dev.port, "yann") == ["com.acme.unlock": "com.acme.unlock"])
        let state = try await DevDashboardTests.dev(dev.port, "GET", "/dev/customers")
        #expect(state.status == 200)
    }

    @Test func aStoreKitFilesProductsGrantWhatTheConfigurationSays() async throws {
        let (folder, storeKit) = try Self.file("Products.storekit", Self.storeKitFile)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("entitled.json")
        try Data(
            #"""
            {"apps": [{"bundleId": "com.acme.app", "environments": ["Sandbox"], "products": [
              {"productId": "com.acme.pro.monthly", "type": "autoRenewable", "subscriptionGroup": "21430000", "entitlements": ["pro"]}]}]}
            """#.utf8
        ).write(to: config)
        let dev = try await ServeProcess.start {
            DevRestartTests.devArguments($0, ["--config", config.path, "--storekit", storeKit.path])
        }
        defer { dev.terminate() }
        #expect(try await Self.buy(dev.port, "zoe", "com.acme.pro.monthly") == 200)
        #expect(try await Self.buy(dev.port, "yann", "com.acme.unlock") == 200)
        // The configured product grants its entitlement; the one it does not list grants its id.
        #expect(try await Self.entitlements(dev.port, "zoe") == ["pro": "com.acme.pro.monthly"])
        #expect(try await Self.entitlements(dev.port, "yann") == ["com.acme.unlock": "com.acme.unlock"])
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func anXcodeTransactionFromApplesFixturesPostsToDevAndGrants() async throws {
        let (folder, config) = try Self.file(
            "entitled.json",
            #"""
            {"apps": [{"bundleId": "com.example.naturelab.backyardbirds.example", "environments": ["Xcode"],
              "products": [{"productId": "pass.premium", "type": "autoRenewable", "subscriptionGroup": "6F3A93AB",
                            "entitlements": ["pass"]}]}]}
            """#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let jws = try String(
            contentsOf: AppleTestData.pythonResources.appendingPathComponent("xcode/xcode-signed-transaction"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // The virtual clock between the fixture's purchase (1697679936049) and its expiry (1700358336049).
        let dev = try await ServeProcess.start {
            DevRestartTests.devArguments($0, ["--config", config.path, "--start", "1697680000000"])
        }
        defer { dev.terminate() }
        let posted = try await Loopback.send(
            port: dev.port, "POST", "/v1/customers/birder/transactions",
            headers: ["Authorization": "Bearer \(Self.key)", "Content-Type": "application/json"],
            body: Array(#"{"signedTransaction": "\#(jws)"}"#.utf8))
        #expect(posted.status == 200, "\(posted.json)")
        #expect(try await Self.entitlements(dev.port, "birder") == ["pass": "pass.premium"])
    }

    @Test func devHelpNamesTheOwnProductOptions() async throws {
        let help = try await CLI.run(["dev", "--help"])
        #expect(help.status == 0)
        for option in ["--config FILE", "--storekit FILE", "--bundle-id ID", "--start EPOCH_MS", "docs/test-your-app.md"] {
            #expect(help.stdout.contains(option), "\(option)")
        }
        let missing = try await CLI.run(["dev", "--data", DevRestartTests.folder().path, "--storekit", "/nonexistent.storekit"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("/nonexistent.storekit"))
    }
}
