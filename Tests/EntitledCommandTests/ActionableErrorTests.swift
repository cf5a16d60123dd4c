import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Errors that say what to fix: which customer-token check failed, where a configuration file
/// is broken, what to do about a taken port, and simulate's lines as they happen.
@Suite struct ActionableErrorTests {
    /// A token with these claims (JSON members), signed with `secret`.
    static func token(_ claims: String, secret: String = APIHarness.tokenSecret) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode(Array("{\(claims)}".utf8))
        let mac = Digests().hmacSHA256(key: Array(secret.utf8), message: Array("\(header).\(payload)".utf8))
        return "\(header).\(payload).\(Base64URL.encode(mac))"
    }

    static let now = APIHarness.start / 1000

    @Test(arguments: [
        (#""sub":"u1""#, APIHarness.tokenSecret, 401, "TOKEN_EXP_MISSING", "no exp"),
        (#""sub":"u1","exp":\#(now + 86_400 * 30)"#, APIHarness.tokenSecret, 401, "TOKEN_LIFETIME_TOO_LONG", "maxLifetimeSeconds (86400)"),
        (#""sub":"u1","exp":\#(now - 1)"#, APIHarness.tokenSecret, 401, "TOKEN_EXPIRED", "expired"),
        (#""sub":"u1","exp":\#(now + 60)"#, String(repeating: "x", count: 40), 401, "TOKEN_SIGNATURE_INVALID", "customerTokens.secret"),
        (#""sub":"u2","exp":\#(now + 60)"#, APIHarness.tokenSecret, 403, "TOKEN_CUSTOMER_MISMATCH", "its own customer"),
        (#""exp":\#(now + 60)"#, APIHarness.tokenSecret, 401, "TOKEN_MALFORMED", "no sub"),
    ])
    func eachCustomerTokenCheckHasItsOwnCode(claims: String, secret: String, status: Int, code: String, detail: String) async throws {
        try await APIHarness.run { api in
            let reply = try await api.customer("u1", auth: "Bearer " + Self.token(claims, secret: secret))
            #expect(reply.status == status)
            #expect(reply.code == code)
            let body = String(decoding: reply.body, as: UTF8.self)
            #expect(body.contains(detail), "\(body)")
            #expect((reply.headers["www-authenticate"] != nil) == (status == 401))
        }
    }

    @Test(arguments: [
        ("{\"listen\": \"127.0.0.1:1\",\n  \"cacheTTLSeconds\": 5,\n}", "line 3, column 1: a trailing comma before '}' is not JSON"),
        ("{\"apps\": [1, 2,]}", "line 1, column 16: a trailing comma before ']' is not JSON"),
        ("{\n  \"listen\": \"x\"\n  \"database\": \"y\"}", "line 3, column 3: expected ',' or '}', found '\"'"),
        ("{\"a\": 'b'}", "line 1, column 7: strings take double quotes"),
        ("{\"a\": 01}", "line 1, column 8: a number does not start with 0"),
        ("{\"é\": tru}", "line 1, column 10: expected true, found '}'"),
        ("{} {}", "line 1, column 4: unexpected text after the end"),
    ])
    func aBrokenConfigurationFileNamesLineAndColumn(text: String, message: String) {
        #expect {
            try ConfigurationLoader(environment: [:]).parse(Data(text.utf8))
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func theScopeListNamesEveryScope() {
        #expect {
            try ConfigurationLoader(environment: [:]).parse(
                Data(#"{"apiKeys": [{"name": "k", "secret": "0123456789abcdef", "scopes": ["reader"]}]}"#.utf8))
        } throws: { error in
            "\(error)".contains("unknown scope 'reader' (read, write, admin, metrics, console)")
        }
    }

    @Test func serveOnATakenPortSuggestsListenAndCreatesNoDatabase() async throws {
        let taken = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(taken) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        #expect(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(taken, $0, length) } } == 0)
        #expect(listen(taken, 1) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(taken, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-taken-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await CLI.run(["serve", "--listen", "127.0.0.1:\(port)", "--database", "sqlite:\(folder.path)/db/entitled.sqlite"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot listen on 127.0.0.1:\(port): Address already in use"), "\(result.stderr)")
        #expect(result.stderr.contains("--listen HOST:PORT"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "a database folder was made before the port was checked")
    }

    @Test func simulatePrintsEachLineAsItHappensIntoAPipe() async throws {
        let (folder, scenario) = try SimulateCLITests.scenario(
            """
            {"action": "customer", "customer": "alice"}
            {"action": "purchase", "customer": "alice", "product": "pro.monthly"}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = Pipe()
        let process = Process()
        (process.executableURL, process.standardOutput, process.standardError) = (CLI.binary, output, FileHandle.nullDevice)
        // With --listen it keeps serving after the scenario: its lines must not wait for its exit.
        process.arguments = [
            "simulate", "--data", folder.appendingPathComponent("d").path, "--scenario", scenario.path, "--listen", "127.0.0.1:0",
        ]
        try process.runSerialized()
        defer { process.terminate(); process.waitUntilExit() }
        let reader = output.fileHandleForReading
        let collected = LockedData()
        Thread.detachNewThread {
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                collected.append(chunk)
            }
        }
        let arrived = await eventually(within: .seconds(30)) {
            String(decoding: collected.get(), as: UTF8.self).contains("INITIAL_BUY")
        }
        #expect(arrived, "nothing printed while simulate runs: \(String(decoding: collected.get(), as: UTF8.self))")
        #expect(process.isRunning)
    }
}
