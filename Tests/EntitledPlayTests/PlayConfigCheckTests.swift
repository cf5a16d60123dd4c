import EntitledCrypto
@testable import EntitledTestSupport
import Foundation
import Testing

/// A Google Play app is checked at load and served whole (acknowledgement, the voided-purchases
/// poll): the commands warn of nothing.
@Suite struct PlayConfigCheckTests {
    @Test func configCheckWarnsOfNothingForAPlayApp() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("play-check-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pem = try RSAPrivateKey().pkcs8PEM()
        let keyFile: [String: String] = [
            "type": "service_account", "private_key": pem, "client_email": "entitled@p.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        try JSONSerialization.data(withJSONObject: keyFile).write(to: URL(fileURLWithPath: folder + "/key.json"))
        let config = """
            {"apps": [{"packageName": "com.example.app", "googlePlay": {"serviceAccountKeyFile": "key.json",
              "pubsub": {"audience": "https://e.example/v1/google/notifications", "serviceAccountEmail": "push@p.iam.gserviceaccount.com"}}}]}
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/entitled.json"))
        let result = try await CLI.run(["config", "check", "--config", folder + "/entitled.json"])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(!result.stderr.contains("warning"), "\(result.stderr)")

        // A broken key file is a configuration problem (2) naming its key.
        try Data("{}".utf8).write(to: URL(fileURLWithPath: folder + "/key.json"))
        let broken = try await CLI.run(["config", "check", "--config", folder + "/entitled.json"])
        #expect(broken.status == 2)
        #expect(broken.stderr.contains("apps[0].googlePlay.serviceAccountKeyFile"), "\(broken.stderr)")
    }
}
