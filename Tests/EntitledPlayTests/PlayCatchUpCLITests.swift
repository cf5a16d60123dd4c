@testable import EntitledTestSupport
import Foundation
import GooglePlaySimulator
import Testing

/// `entitled import` and `entitled reconcile` for a Google Play app end to end: the built binary,
/// a configuration file as an operator writes it, and the fake Google on loopback.
@Suite(.serialized) struct PlayCatchUpCLITests {
    @Test func importThenReconcileAPlayApp() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-playcli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The command signs its assertions on the system clock; the fake checks them on its own.
        let clock = VirtualClock(Int64(Date().timeIntervalSince1970 * 1000))
        let google = try FakeGoogle(
            products: [
                FakePlayProduct(productId: "premium", kind: .subscription(basePlans: ["monthly"], periodSeconds: 30 * 86_400)),
                FakePlayProduct(productId: "coins", kind: .oneTime(consumable: true)),
            ],
            clock: clock, signingKey: PlayWorld.googleKey)
        let fake = try FakeGoogleServer(google: google)
        defer { Task { await fake.shutdown() } }
        try Data(try fake.serviceAccountKeyFile(key: PlayWorld.serviceAccountKey)).write(to: folder.appendingPathComponent("key.json"))
        let package = "com.example.android"
        let config = """
            {"database": "sqlite:entitled.sqlite",
             "apps": [{"packageName": "\(package)",
               "googlePlay": {"serviceAccountKeyFile": "key.json", "apiBaseURL": "\(fake.baseURL.absoluteString)",
                              "pubsub": {"audience": "https://e.example/v1/google/notifications",
                                         "serviceAccountEmail": "push@p.iam.gserviceaccount.com", "certsURL": "\(fake.certsURL.absoluteString)"}},
               "products": [{"productId": "premium", "type": "autoRenewable", "entitlements": ["pro"]},
                            {"productId": "coins", "type": "consumable"}]}]}
            """
        let configPath = folder.appendingPathComponent("entitled.json").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let token = try google.buySubscription(packageName: package, productId: "premium")
        let coins = try google.buyProduct(packageName: package, productId: "coins", quantity: 3)
        let lines = folder.appendingPathComponent("tokens.csv")
        try Data("carol,premium,\(token)\ncarol,coins,\(coins)\n".utf8).write(to: lines)

        let imported = try await CLI.run(["import", "--config", configPath, "--app", package, lines.path])
        #expect(imported.status == 0, "\(imported.stdout) \(imported.stderr)")
        #expect(imported.stdout.contains("lines 2, imported 2, transactions 2"), "\(imported.stdout)")

        try google.cancel(token)
        let caughtUp = try await CLI.run(["reconcile", "--config", configPath, "--app", package])
        #expect(caughtUp.status == 0, "\(caughtUp.stdout) \(caughtUp.stderr)")
        #expect(caughtUp.stdout.contains("\(package): tokens 2, final 0, changed 1, unchanged 1, failed 0"), "\(caughtUp.stdout)")
        // Without --app: every Play app (no App Store app has serverAPI), and nothing changed since.
        let again = try await CLI.run(["reconcile", "--config", configPath])
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains("\(package): tokens 2, final 0, changed 0, unchanged 2, failed 0"), "\(again.stdout)")
        // Two units of the one-time purchase refunded: the catch-up asks products.get and stores it.
        try google.refundProductQuantity(coins, quantity: 2)
        let refunded = try await CLI.run(["reconcile", "--config", configPath, "--app", package])
        #expect(refunded.stdout.contains("\(package): tokens 2, final 0, changed 1, unchanged 1, failed 0"), "\(refunded.stdout)")

        let windowed = try await CLI.run(["reconcile", "--config", configPath, "--app", package, "--since", "2026-11-01T00:00:00Z"])
        #expect(windowed.status == 2, "\(windowed.stderr)")
        let rc = try await CLI.run(["import", "--config", configPath, "--app", package, "--from", "revenuecat", lines.path])
        #expect(rc.status == 2 && rc.stderr.contains("App Store"), "\(rc.stderr)")
    }
}
