import AppStore
import AppStoreTesting
import EntitledConfig
@testable import EntitledTestSupport
import Foundation
import Testing

/// What `entitled serve` logs about requests: a request id on every line about one, levels
/// honoured, and never a signed payload or an API key, however verbose.
@Suite(.serialized) struct ServeLogTests {
    /// A configuration trusting `TestSigning.ca`, with the test keys, written into `folder`.
    static func writeConfiguration(in folder: URL) throws -> URL {
        let root = folder.appendingPathComponent("root.der")
        try Data(TestSigning.ca.rootDER).write(to: root)
        let file = folder.appendingPathComponent("entitled.json")
        try """
        {"apiKeys": [{"name": "reader", "secret": "reader-secret-0123456789", "scopes": ["read"]},
                     {"name": "writer", "secret": "writer-secret-0123456789", "scopes": ["read", "write"]}],
         "apps": [{"bundleId": "\(APIHarness.bundleId)", "appAppleId": 1234, "appleRootCertificates": ["root.der"],
                   "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro",
                                 "level": 1, "duration": "P1M", "entitlements": ["pro"]}]}]}
        """.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    static func lines(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func debugLogsCarryRequestIdsAndNeverAPayloadOrAKey() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-serve-log-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = try Self.writeConfiguration(in: folder)
        // The most verbose level: nothing secret may appear at any level, so not at info either.
        let server = try await ServeProcess.start(
            extraArguments: ["--config", config.path, "--log-level", "debug"], folder: folder)
        defer { server.terminate() }
        let port = server.port

        let customer = try await Loopback.send(
            port: port, "GET", "/v1/customers/u1", headers: ["Authorization": APIHarness.reader, "X-Request-Id": "read-1"])
        let token = try #require(customer.json["appAccountToken"] as? String)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let signer = TestSigning.ca.signer
        let transaction = Apple.transaction(tid: "t1", purchase: now - 86_400_000, expires: now + 86_400_000, signed: now, token: token)
        let signedTransaction = try signer.sign(transaction)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: .initialBuy, notificationUUID: "log-n1",
            data: NotificationData(
                environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                signedTransactionInfo: signedTransaction, signedRenewalInfo: try signer.sign(Apple.renewal(signed: now))),
            version: "2.0", signedDate: now)
        let signedPayload = try signer.sign(payload)
        let accepted = try await Loopback.send(
            port: port, "POST", "/v1/apple/notifications", headers: ["X-Request-Id": "apple-1"],
            body: Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8))
        #expect(accepted.status == 200)
        #expect(accepted.headers["x-request-id"] == "apple-1")
        // Forged: signed by a CA the server does not trust.
        let forged = try TestCertificateAuthority().signer.sign(payload)
        let rejected = try await Loopback.send(
            port: port, "POST", "/v1/apple/notifications", headers: ["X-Request-Id": "apple-2"],
            body: Array(#"{"signedPayload":"\#(forged)"}"#.utf8))
        #expect(rejected.status >= 400)
        let posted = try await Loopback.send(
            port: port, "POST", "/v1/customers/u1/transactions", headers: ["Authorization": APIHarness.writer],
            body: Array(#"{"signedTransaction":"\#(signedTransaction)"}"#.utf8))
        #expect(posted.status == 200)

        kill(server.process.processIdentifier, SIGTERM)
        let output = try await blocking {
            server.process.waitUntilExit()
            return server.remainingOutput()
        }
        // No signed payload (JWS headers are base64url JSON: they start with "eyJ"), no key secret.
        #expect(!output.contains("eyJ"))
        #expect(!output.contains(String(signedPayload.suffix(40))))
        #expect(!output.contains("reader-secret") && !output.contains("writer-secret"))

        let records = Self.lines(output)
        #expect(!records.isEmpty)
        #expect(records.allSatisfy { ["debug", "info", "warn", "error"].contains($0["level"] as? String ?? "") })
        // Every line about a request names it.
        for record in records where ["access", "request", "error"].contains(record["type"] as? String ?? "") {
            #expect((record["requestId"] as? String)?.isEmpty == false, "\(record)")
        }
        #expect(records.contains { $0["event"] as? String == "notification accepted" && $0["requestId"] as? String == "apple-1" })
        #expect(
            records.contains {
                $0["event"] as? String == "rejected" && $0["requestId"] as? String == "apple-2" && $0["level"] as? String == "warn"
            })
        #expect(records.contains { $0["type"] as? String == "access" && $0["requestId"] as? String == "read-1" })
    }

    @Test func logSectionSetsFormatAndLevel() throws {
        let loader = ConfigurationLoader(environment: [:])
        #expect(try loader.parse(Data("{}".utf8)).log == LogSettings(format: nil, level: .info))
        let parsed = try loader.parse(Data(#"{"log": {"format": "text", "level": "warn"}}"#.utf8))
        #expect(parsed.log == LogSettings(format: .text, level: .warn))
        for (json, path) in [
            (#"{"log": {"format": "xml"}}"#, "log.format"), (#"{"log": {"level": "verbose"}}"#, "log.level"),
            (#"{"log": {"colour": true}}"#, "log.colour"),
        ] {
            #expect(throws: ConfigurationError.self) { try loader.parse(Data(json.utf8)) }
            do { _ = try loader.parse(Data(json.utf8)) } catch { #expect(error.path == path) }
        }
    }
}
