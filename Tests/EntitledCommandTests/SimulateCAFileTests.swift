@testable import EntitledTestSupport
import Foundation
import Testing

/// `entitled simulate --target https://… --ca-file PEM`: posts to a server whose certificate a
/// private CA issued; without the CA the delivery fails, and the failure is printed.
@Suite(.serialized) struct SimulateCAFileTests {
    @Test func postsToHTTPSWithAPrivateCAAndPrintsTheFailureWithoutIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-simulate-ca-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The server's self-signed certificate is its own private CA.
        try ServeTLSTests.writeCertificate(serial: 0x33, in: folder)
        let simulatorData = folder.appendingPathComponent("sim").path
        // The simulator's CA first, so that the server can trust its root.
        #expect(try await CLI.run(["simulate", "--data", simulatorData]).status == 0)
        try #"""
        {"tls": {"certificateFile": "cert.pem", "privateKeyFile": "key.pem"},
         "apps": [{"bundleId": "com.example.app", "environments": ["Sandbox"], "appleRootCertificates": ["sim/ca/root.der"],
           "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro", "entitlements": ["pro"]}]}]}
        """#.write(to: folder.appendingPathComponent("entitled.json"), atomically: true, encoding: .utf8)
        let server = try await ServeProcess.start(
            extraArguments: ["--config", folder.appendingPathComponent("entitled.json").path], folder: folder)
        defer { server.terminate() }
        let (scenarioFolder, scenario) = try SimulateCLITests.scenario(
            """
            {"action": "customer", "customer": "alice"}
            {"action": "purchase", "customer": "alice", "product": "pro.monthly"}
            """)
        defer { try? FileManager.default.removeItem(at: scenarioFolder) }
        let target = "https://127.0.0.1:\(server.port)/v1/apple/notifications"
        let arguments = ["simulate", "--data", simulatorData, "--scenario", scenario.path, "--target", target]

        let trusted = try await CLI.run(arguments + ["--ca-file", folder.appendingPathComponent("cert.pem").path])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout.contains(#""notificationType":"SUBSCRIBED""#))
        #expect(!trusted.stderr.contains("delivery to"), "\(trusted.stderr)")

        let untrusted = try await CLI.run(arguments)
        #expect(untrusted.status == 0)
        #expect(untrusted.stderr.contains("delivery to \(target) failed"), "\(untrusted.stderr)")
        #expect(untrusted.stderr.lowercased().contains("certificate"), "\(untrusted.stderr)")
    }
}
