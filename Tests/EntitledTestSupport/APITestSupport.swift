import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Synchronization
import Testing

@testable import Storage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The stub verifier, the real ledger on `sqlite::memory:` with an outage switch, and a loopback client.

/// The tests' composition root reads the fast paths' switch once, as `entitled` does: with
/// `ENTITLED_FAST_PATHS=off` (by hand; CI compares the two in `FastPathsDifferentialTests`) every
/// server in these tests runs without them.
let testFastPaths = FastPaths(environment: ProcessInfo.processInfo.environment)

/// A settable clock.
final class VirtualClock: EpochClock {
    private let now: Mutex<Int64>
    init(_ start: Int64) { now = Mutex(start) }
    func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    func advance(by milliseconds: Int64) { now.withLock { $0 += milliseconds } }
}

/// Builds JWS-shaped strings whose "signature" the stub verifier understands: `valid`, `forged`
/// (INVALID_SIGNATURE), `expired` (CERTIFICATE_EXPIRED), `retry` (retryable failure).
enum FakeJWS {
    static func make<T: Encodable>(_ payload: T, signature: String = "valid") -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","x5c":[]}"#.utf8))
        let body = Base64URL.encode(Array(try! AppStoreJSON.encode(payload)))
        return "\(header).\(body).\(signature)"
    }

    static func decode<T: Decodable>(_ type: T.Type, _ jws: String) throws(VerificationError) -> T {
        try decodeReportingUnknown(type, jws).value
    }

    /// The payload and the members its model does not know, as the real verifier's decode
    /// reports them (with the fast paths' switch of this test run).
    static func decodeReportingUnknown<T: Decodable>(_ type: T.Type, _ jws: String) throws(VerificationError)
        -> (value: T, unknown: [UnknownMember])
    {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { throw VerificationError(.malformedPayload, "not a JWS") }
        switch parts[2] {
        case "valid": break
        case "forged": throw VerificationError(.invalidSignature, "bad signature")
        case "expired": throw VerificationError(.certificateExpired, "chain expired")
        case "retry": throw VerificationError(.retryableVerificationFailure, "ocsp down")
        default: throw VerificationError(.invalidSignature, "bad signature")
        }
        do {
            // Decoded first as before for the errors' wording; then as the verifier decodes.
            let value = try AppStoreJSON.decode(type, from: Data(bytes))
            guard let known = (T.self as? any ReportsUnknownMembers.Type)?.knownMembers else { return (value, []) }
            return try testFastPaths.codec.decodeReportingUnknown(type, from: bytes, known: known)
        } catch let error as AppStoreDecodingError {
            throw VerificationError(.malformedPayload, error.description)
        } catch {
            throw VerificationError(.malformedPayload, "\(error)")
        }
    }
}

/// Checks fake signatures, bundle ids and app Apple ids, as the real verifier will.
struct StubVerifier: NotificationVerifying {
    func verifyNotification(signedPayload: String, app: App) async throws(VerificationError) -> VerifiedNotification {
        let (payload, unknown) = try FakeJWS.decodeReportingUnknown(ResponseBodyV2DecodedPayload.self, signedPayload)
        var verified = VerifiedNotification(payload: payload, unknownMembers: unknown)
        guard payload.verificationBundleId == app.bundleId else { throw VerificationError(.invalidAppIdentifier) }
        if let id = payload.verificationAppAppleId, let expected = app.appAppleId, id != expected {
            throw VerificationError(.invalidAppIdentifier)
        }
        if let jws = payload.data?.signedTransactionInfo {
            let transaction = try FakeJWS.decodeReportingUnknown(JWSTransactionDecodedPayload.self, jws)
            verified.payload.data?.transactionInfo = transaction.value
            verified.transactionUnknownMembers = transaction.unknown
        }
        if let jws = payload.data?.signedRenewalInfo {
            let renewal = try FakeJWS.decodeReportingUnknown(JWSRenewalInfoDecodedPayload.self, jws)
            verified.payload.data?.renewalInfo = renewal.value
            verified.renewalUnknownMembers = renewal.unknown
        }
        if let jws = payload.appData?.signedAppTransactionInfo {
            verified.payload.appData?.appTransaction = try FakeJWS.decode(AppTransaction.self, jws)
        }
        return verified
    }

    func verifyTransaction(signedTransaction: String, app: App) async throws(VerificationError)
        -> (payload: JWSTransactionDecodedPayload, unknownMembers: [UnknownMember])
    {
        let (transaction, unknown) = try FakeJWS.decodeReportingUnknown(JWSTransactionDecodedPayload.self, signedTransaction)
        guard transaction.bundleId == app.bundleId else { throw VerificationError(.invalidAppIdentifier) }
        return (transaction, unknown)
    }

    func verifyAppTransaction(signedAppTransaction: String, app: App) async throws(VerificationError) -> AppTransaction {
        let appTransaction = try FakeJWS.decode(AppTransaction.self, signedAppTransaction)
        guard appTransaction.bundleId == app.bundleId else { throw VerificationError(.invalidAppIdentifier) }
        return appTransaction
    }

    func verifyRealtimeRequest(signedPayload: String, app: App) async throws(VerificationError) -> DecodedRealtimeRequestBody {
        try FakeJWS.decode(DecodedRealtimeRequestBody.self, signedPayload)
    }
}

/// The real ledger (`FactLedger` on a private `sqlite::memory:` database, started as the migrated
/// template) behind two switches
/// real storage cannot show on demand: an outage and a slow commit. Everything else is the
/// server's own code; what a test checks afterwards it reads from the database.
final class TestLedger: Sendable {
    /// Shared with the ``SwitchedStore``.
    final class Switches: Sendable {
        struct State {
            var available = true
            var ingestDelayMilliseconds = 0
        }

        let state = Mutex(State())
    }

    let ledger: FactLedger
    let store: SQLiteStore
    let switches = Switches()

    init(
        policy: Policy, cache: ProjectionCache, grantEnvironments: [Environment] = FactLedger.defaultGrantEnvironments
    ) async throws {
        store = try #require(
            try await openStore(url: "sqlite::memory:", configuration: SQLiteStore.migratedTemplateConfiguration()) as? SQLiteStore)
        ledger = FactLedger(
            store: SwitchedStore(base: store, switches: switches), policy: policy, cache: cache, grantEnvironments: grantEnvironments)
    }

    /// While false, every call fails as an unreachable database does.
    var available: Bool {
        get { switches.state.withLock { $0.available } }
        set { switches.state.withLock { $0.available = newValue } }
    }

    /// How long each ingest waits before it commits: a slow store is what the tests that set it
    /// examine (bounded by the value they set), so this sleep is the thing under test.
    var ingestDelayMilliseconds: Int {
        get { switches.state.withLock { $0.ingestDelayMilliseconds } }
        set { switches.state.withLock { $0.ingestDelayMilliseconds = newValue } }
    }

    // MARK: - What tests read back

    /// The first column of every row of `sql`, as text.
    func texts(_ query: SQLQuery) async throws -> [String] {
        try await store.read { session in try session.values(query, as: String?.self).map { $0 ?? "" } }
    }

    func count(_ query: SQLQuery) async throws -> Int { Int(try await store._scalar(query)) }

    /// The JSON of every fact of `kind`, in id order (decompressed: schema 16 stores it in `payload_packed`).
    func factJSON(kind: String) async throws -> [String] {
        try await store.read { session in
            try session.query("SELECT payload, payload_packed FROM facts WHERE kind = $1 ORDER BY id", .text(kind)).map {
                try FactPayload.text($0)
            }
        }
    }

    /// Facts in the ledger.
    func factCount() async throws -> Int { try await count("SELECT COUNT(*) FROM facts") }

    /// Accepted messages (committed batches).
    func acceptedCount() async throws -> Int { try await count("SELECT COUNT(*) FROM notifications WHERE outcome = 'accepted'") }

    /// The codes of the rejected deliveries, oldest first.
    func rejectedCodes() async throws -> [String] {
        try await texts("SELECT reject_code FROM notifications WHERE outcome = 'rejected' ORDER BY id")
    }

    /// Stored bodies (accepted or rejected) that contain `text`.
    func bodies(containing text: String) async throws -> Int {
        try await count("SELECT COUNT(*) FROM notifications WHERE instr(CAST(body AS TEXT), \(text)) > 0")
    }
}

extension LedgerStore {
    /// A customer's facts, decoded as the server does.
    func facts(appUserId: String) async throws -> [StoredFact] {
        try await facts(appUserId: appUserId, projector: FactLedger(store: self, policy: Policy()).projector)
    }
}

/// One HTTP/1.1 exchange per connection over loopback (`Connection: close`, read to EOF).
enum Loopback {
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        var code: String? { json["code"] as? String }
    }

    static func send(
        port: Int, _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = [],
        host: String = "127.0.0.1", timeoutSeconds: Int = 10
    ) async throws -> Reply {
        try await blocking {
            try exchange(port: port, method, path, headers: headers, body: body, host: host, timeoutSeconds: timeoutSeconds)
        }
    }

    static func exchange(
        port: Int, _ method: String, _ path: String, headers: [String: String], body: [UInt8], host: String = "127.0.0.1",
        timeoutSeconds: Int = 10
    ) throws -> Reply {
        let fd = try connect(port: port, timeoutSeconds: timeoutSeconds)
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if method == "POST" || !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var offset = 0
        while offset < request.count {
            let n = request.withUnsafeBytes { write(fd, $0.baseAddress! + offset, request.count - offset) }
            if n <= 0 { break }  // the server may answer early (413) and close
            offset += n
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { break }
            received.append(contentsOf: chunk[..<n])
        }
        guard let end = find(received, [13, 10, 13, 10]) else { throw CocoaError(.fileReadCorruptFile) }
        let lines = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Reply(status: status, headers: headers, body: Array(received[(end + 4)...]))
    }

    /// A TCP connection to 127.0.0.1:`port` whose reads give up after `timeoutSeconds`.
    static func connect(port: Int, timeoutSeconds: Int = 10) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw CocoaError(.fileReadUnknown)
        }
        return fd
    }

    private static func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where Array(haystack[i..<(i + needle.count)]) == needle { return i }
        return nil
    }
}

/// Apple's model fixtures (app-store-server-library-python, ``AppleTestData``).
enum AppleFixtures {
    static let folder: URL? = AppleTestData.isPresent ? AppleTestData.pythonResources.appendingPathComponent("models") : nil

    static func load<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        guard let folder else { throw CocoaError(.fileNoSuchFile) }
        return try AppStoreJSON.decode(type, from: Data(contentsOf: folder.appendingPathComponent(name)))
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        guard let folder else { throw CocoaError(.fileNoSuchFile) }
        return Array(try Data(contentsOf: folder.appendingPathComponent(name)))
    }
}
