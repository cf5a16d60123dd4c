import AppStore
import AppStoreSimulator
import EntitledCrypto
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Storage
import Testing

/// `entitled import --from revenuecat` end to end: the built binary, a configuration file as an
/// operator writes it, the simulator's fake App Store Server API on loopback, and a RevenueCat
/// export naming the simulator's purchases; the database then answers under RevenueCat's ids.
@Suite(.serialized) struct RevenueCatImportCLITests {
    @Test func theCommandImportsAnExportThroughTheServerAPI() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-rcimport-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ca = try SimulatorCA.ephemeral()
        try Data(ca.rootDER).write(to: folder.appendingPathComponent("root.der"))
        let simulator = Simulator(
            catalog: Catalog.demo, environment: .sandbox, ca: ca,
            // The command signs its tokens on the system clock; the fake API checks them on its own.
            clock: AppStoreSimulator.VirtualClock(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)), transport: nil)
        let apple = try HTTPServer.fakeServerAPI(simulator, keyFolder: folder)
        let config = """
            {"database": "sqlite:entitled.sqlite",
             "apps": [{"bundleId": "\(Catalog.demo.bundleId)", "environments": ["Sandbox"], "appleRootCertificates": ["root.der"],
              "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro", "level": 2,
                            "duration": "P1M", "entitlements": ["pro"]}],
              "serverAPI": {"keyId": "ABC123DEFG", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                            "privateKeyFile": "SubscriptionKey_ABC123DEFG.p8", "baseURL": "http://127.0.0.1:\(apple.port)"}}]}
            """
        try Data(config.utf8).write(to: folder.appendingPathComponent("entitled.json"))

        for id in ["alice", "bob"] {
            var customer = ActionRequest("customer")
            customer.customer = id
            _ = try await simulator.perform(customer)
            var purchase = ActionRequest("purchase")
            purchase.customer = id
            purchase.product = "pro.monthly"
            _ = try await simulator.perform(purchase)
        }
        let subscriptions = await simulator.snapshot().subscriptions
        let first = try #require(subscriptions.first { $0.customerId == "alice" }).originalTransactionId
        let second = try #require(subscriptions.first { $0.customerId == "bob" }).originalTransactionId
        let export = """
            rc_original_app_user_id;rc_last_seen_app_user_id_alias;store;store_transaction_id;original_store_transaction_id
            $RCAnonymousID:a11ce;alice;app_store;\(first);\(first)
            bob;bob;app_store;\(second);\(second)
            bob;bob;play_store;GPA.1;GPA.1
            carol;carol;app_store;999999;999999
            """
        let file = folder.appendingPathComponent("transactions.csv")
        try Data(export.utf8).write(to: file)

        func run(_ file: URL) async throws -> (status: Int32, out: [String], err: String) {
            let result = try await CLI.run([
                "import", "--config", folder.appendingPathComponent("entitled.json").path, "--app", Catalog.demo.bundleId,
                "--from", "revenuecat", file.path,
            ])
            return (result.status, result.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("{") }, result.stderr)
        }
        let result = try await run(file)
        #expect(result.status == 1, "carol's purchase is not Apple's: \(result.err)")
        #expect(result.out.first == "rows 4, App Store rows 3, transactions 3, customers 3, bad rows 0")
        #expect(result.out.contains("skipped 1 play_store rows (Google Play purchases are skipped until a Google Play import exists)"))
        #expect(result.out.contains("lines 3, imported 2, transactions 2, aliases 1, failed 1"), "\(result.out)")
        #expect(result.out.contains { $0.hasPrefix("line 5: APPLE_NOT_FOUND") }, "\(result.out)")
        let again = try await run(file)
        #expect(again.out.contains("lines 3, imported 2, transactions 2, aliases 0, failed 1"), "\(again.out)")

        // A file that cannot be read stops before anything, exit status 2, with its code and line.
        let gzip = folder.appendingPathComponent("transactions.csv.gz")
        try Data([0x1F, 0x8B, 0x08, 0x00]).write(to: gzip)
        let compressed = try await run(gzip)
        #expect(compressed.status == 2 && compressed.err.contains("IMPORT_NOT_CSV: the file is gzip-compressed"), "\(compressed.err)")
        let headless = folder.appendingPathComponent("headless.csv")
        try Data("rc_original_app_user_id,store\nalice,app_store\n".utf8).write(to: headless)
        let missing = try await run(headless)
        #expect(missing.status == 2)
        #expect(missing.err.contains("line 1: IMPORT_MISSING_COLUMN: the header lacks original_store_transaction_id or store_transaction_id"))

        let store = try await openStore(url: "sqlite:" + folder.appendingPathComponent("entitled.sqlite").path)
        for id in ["alice", "$RCAnonymousID:a11ce", "bob"] {
            let facts = try await store.facts(appUserId: id)
            #expect(facts.count == 1, "\(id) has the purchase")
        }
        #expect(try await store.customer(appUserId: "carol") == nil)
        await store.close()
        await apple.shutdown()
    }
}

extension HTTPServer {
    /// The simulator's fake App Store Server API on loopback, accepting the key it writes to
    /// `keyFolder` as `SubscriptionKey_ABC123DEFG.p8` (the operator's `.p8` file; issuer
    /// `57246542-96fe-1a63-e053-0824d011072a`).
    static func fakeServerAPI(_ simulator: Simulator, keyFolder: URL) throws -> HTTPServer {
        let key = try P256PrivateKey()
        try Data(try key.pkcs8PEM().utf8).write(to: keyFolder.appendingPathComponent("SubscriptionKey_ABC123DEFG.p8"))
        var routes = Router()
        FakeServerAPI.register(
            simulator, keys: [APIKey(keyId: "ABC123DEFG", issuerId: "57246542-96fe-1a63-e053-0824d011072a", publicKey: try key.publicKey)],
            on: &routes)
        return try quietLoopback(routes)
    }
}
