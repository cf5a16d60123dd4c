import AppStoreTesting
import EntitledCrypto
import Foundation
import Testing

/// The `entitled` binary, built beside the test runner by every build of the tests (whatever
/// the configuration or scratch folder).
let entitledBinary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("entitled")

/// The `entitled verify` contract, run against the built binary.
@Suite("entitled verify")
struct VerifyCLITests {
    struct Run {
        var status: Int32
        var lines: [[String: Any]]
        var text: String
    }

    func run(_ arguments: [String], input: String) throws -> Run {
        let process = Process()
        process.executableURL = entitledBinary
        process.arguments = ["verify"] + arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = output.split(separator: UInt8(ascii: "\n")).map {
            (try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]) ?? ["unparsed": String(decoding: $0, as: UTF8.self)]
        }
        return Run(status: process.terminationStatus, lines: lines, text: String(decoding: output, as: UTF8.self))
    }

    /// A named pipe that `text` is written into once a reader opens it (as `<(…)` gives).
    func fifo(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-\(UUID().uuidString)").path
        try #require(mkfifo(path, 0o600) == 0)
        Thread.detachNewThread {
            // Opening for writing blocks until the command opens the pipe for reading.
            guard let handle = FileHandle(forWritingAtPath: path) else { return }
            handle.write(Data(text.utf8))
            try? handle.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        return path
    }

    struct Transaction: Encodable {
        var transactionId = "77"
        var bundleId = "com.example"
        var environment = "Sandbox"
        var signedDate: Int64 = testNowMilliseconds
    }
    struct Renewal: Encodable {
        var autoRenewStatus = 1
        var environment = "Sandbox"
        var signedDate: Int64 = testNowMilliseconds
    }
    struct AppData: Encodable {
        var environment = "Sandbox"
        var bundleId = "com.example"
        var appAppleId: Int64 = 1234
        var signedTransactionInfo: String
        var signedRenewalInfo: String
    }
    struct Notification: Encodable {
        var notificationType = "DID_RENEW"
        var signedDate: Int64 = testNowMilliseconds
        var data: AppData
    }

    func rootFile(_ ca: TestCertificateAuthority) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("root-\(UUID().uuidString).pem").path
        try ca.root.pem.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func notificationWithNestedFieldsAndAFailure() throws {
        let ca = sharedCA
        let signer = ca.signer
        let good = try signer.sign(
            Notification(data: AppData(signedTransactionInfo: try signer.sign(Transaction()), signedRenewalInfo: try signer.sign(Renewal()))))
        let badNested = try signer.sign(
            Notification(
                data: AppData(
                    signedTransactionInfo: try signer.sign(Transaction(bundleId: "com.other")), signedRenewalInfo: try signer.sign(Renewal()))))
        let root = try rootFile(ca)
        defer { try? FileManager.default.removeItem(atPath: root) }

        let result = try run(["--root", root, "--bundle-id", "com.example"], input: good + "\n{\"signedPayload\": \"\(badNested)\"}\n\nnot-a-jws\n")
        #expect(result.status == 2)
        try #require(result.lines.count == 3)
        let data = try #require(result.lines[0]["data"] as? [String: Any])
        #expect((data["signedTransactionInfo"] as? [String: Any])?["transactionId"] as? String == "77")
        #expect((data["signedRenewalInfo"] as? [String: Any])?["autoRenewStatus"] as? Int == 1)
        #expect(result.lines[1]["error"] as? String == "INVALID_APP_IDENTIFIER")
        #expect(result.lines[2]["error"] as? String == "INVALID_JWT_FORMAT")
        #expect(result.lines[2]["message"] is String)

        let allGood = try run(["--root", root], input: good + "\n")
        #expect(allGood.status == 0)
        #expect(allGood.lines.first?["notificationType"] as? String == "DID_RENEW")
    }

    @Test func environmentAndTimeOptions() throws {
        let ca = sharedCA
        let token = try ca.signer.sign(Transaction())
        let root = try rootFile(ca)
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(try run(["--root", root, "--environment", "Production"], input: token).lines.first?["error"] as? String
            == "INVALID_ENVIRONMENT")
        #expect(try run(["--root", root, "--at", "2280946846"], input: token).lines.first?["error"] as? String == "CERTIFICATE_EXPIRED")
        #expect(try run(["--root", root, "--kind", "renewal"], input: token).status == 0)
        // The bundled Apple root does not trust the test CA.
        #expect(try run([], input: token).lines.first?["error"] as? String == "CHAIN_UNTRUSTED")
    }

    @Test func localTestingOnlyWhenNamed() throws {
        let token = try JWSSigner(key: try P256PrivateKey(), certificateChain: nil)
            .sign(Transaction(environment: "LocalTesting"))
        #expect(try run([], input: token).lines.first?["error"] as? String == "INVALID_JWT_FORMAT")
        let named = try run(["--environment", "LocalTesting"], input: token)
        #expect(named.status == 0)
        #expect(named.lines.first?["transactionId"] as? String == "77")
    }

    /// `entitled verify --root <(…) <(…)`: pipes and process substitutions are read to their end.
    @Test func readsNamedPipesForInputAndRoot() throws {
        let ca = sharedCA
        let token = try ca.signer.sign(Transaction())
        let result = try run(["--root", try fifo(ca.root.pem), try fifo(token + "\n")], input: "")
        #expect(result.status == 0, "\(result.text)")
        #expect(result.lines.first?["transactionId"] as? String == "77")
    }

    struct XcodeTransaction: Encodable {
        var transactionId = "0"
        var bundleId = "com.example"
        var environment = "Xcode"
        var purchaseDate = 1_697_679_936_049.7297
        var expiresDate = 1_700_358_336_049.5
        var signedDate = 1_697_679_936_056.213
        var price = 9.99
    }

    /// Xcode's fractional milliseconds print as the whole milliseconds the verifier reads (floored);
    /// other numbers print as signed.
    @Test func xcodeFractionalDatesPrintFloored() throws {
        let token = try JWSSigner(key: try P256PrivateKey(), certificateChain: nil).sign(XcodeTransaction())
        let result = try run(["--environment", "Xcode"], input: token + "\n")
        #expect(result.status == 0)
        let line = try #require(result.lines.first)
        #expect(line["purchaseDate"] as? Int64 == 1_697_679_936_049)
        #expect(line["expiresDate"] as? Int64 == 1_700_358_336_049)
        #expect(line["signedDate"] as? Int64 == 1_697_679_936_056)
        #expect(line["price"] as? Double == 9.99)
        #expect(!result.text.contains(".7297") && !result.text.contains("049.5"))
    }

    /// Many lines are verified on every core, and still come out in input order.
    @Test func manyLinesKeepTheirOrder() throws {
        let ca = sharedCA
        let root = try rootFile(ca)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var input = ""
        for index in 0..<400 {
            input += index % 7 == 3 ? "bad-\(index)\n" : try ca.signer.sign(Transaction(transactionId: "\(index)")) + "\n"
            if index % 50 == 0 { input += "   \n" }
        }
        let result = try run(["--root", root], input: input)
        #expect(result.status == 2)
        try #require(result.lines.count == 400)
        for (index, line) in result.lines.enumerated() {
            if index % 7 == 3 {
                #expect(line["error"] as? String == "INVALID_JWT_FORMAT", "line \(index)")
            } else {
                #expect(line["transactionId"] as? String == "\(index)", "line \(index)")
            }
        }
    }

    @Test func usageErrors() throws {
        #expect(try run(["--kind", "bogus"], input: "").status == 2)
        #expect(try run(["--environment", "Staging"], input: "").status == 2)
        #expect(try run(["--root", "/nonexistent"], input: "").status == 2)
    }
}
