import AppStore
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Test doubles for the two ports (they live here, not in Sources) and a loopback client.

/// The tests' composition root reads the fast paths' switch once, as `entitled` does: with
/// `ENTITLED_FAST_PATHS=off` (scripts/test's second run) every server in these tests runs without them.
let testFastPaths = FastPaths(environment: ProcessInfo.processInfo.environment)

/// A settable clock.
final class VirtualClock: ServerClock {
    private let now: Mutex<Int64>
    init(_ start: Int64) { now = Mutex(start) }
    func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    func advance(by milliseconds: Int64) { now.withLock { $0 += milliseconds } }
}

/// Builds JWS-shaped strings whose "signature" the stub verifier understands: `valid`, `forged`
/// (INVALID_SIGNATURE), `expired` (EXPIRED_CHAIN), `retry` (retryable failure).
enum FakeJWS {
    static func make<T: Encodable>(_ payload: T, signature: String = "valid") -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","x5c":[]}"#.utf8))
        let body = Base64URL.encode(Array(try! AppStoreJSON.encode(payload)))
        return "\(header).\(body).\(signature)"
    }

    static func decode<T: Decodable>(_ type: T.Type, _ jws: String) throws(VerificationError) -> T {
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
            return try AppStoreJSON.decode(type, from: Data(bytes))
        } catch {
            throw VerificationError(.malformedPayload, error.description)
        }
    }
}

/// Checks fake signatures, bundle ids and app Apple ids, as the real verifier will.
struct StubVerifier: NotificationVerifying {
    func verifyNotification(signedPayload: String, app: App) async throws(VerificationError) -> VerifiedNotification {
        let payload = try FakeJWS.decode(ResponseBodyV2DecodedPayload.self, signedPayload)
        guard payload.verificationBundleId == app.bundleId else { throw VerificationError(.invalidAppIdentifier) }
        if let id = payload.verificationAppAppleId, let expected = app.appAppleId, id != expected {
            throw VerificationError(.invalidAppIdentifier)
        }
        var result = VerifiedNotification(payload: payload)
        if let jws = payload.data?.signedTransactionInfo {
            result.transaction = try FakeJWS.decode(JWSTransactionDecodedPayload.self, jws)
        }
        if let jws = payload.data?.signedRenewalInfo {
            result.renewalInfo = try FakeJWS.decode(JWSRenewalInfoDecodedPayload.self, jws)
        }
        if let jws = payload.appData?.signedAppTransactionInfo {
            result.appTransaction = try FakeJWS.decode(AppTransaction.self, jws)
        }
        return result
    }

    func verifyTransaction(signedTransaction: String, app: App) async throws(VerificationError) -> JWSTransactionDecodedPayload {
        let transaction = try FakeJWS.decode(JWSTransactionDecodedPayload.self, signedTransaction)
        guard transaction.bundleId == app.bundleId else { throw VerificationError(.invalidAppIdentifier) }
        return transaction
    }

    func verifyAppTransaction(signedAppTransaction: String, app: App) async throws(VerificationError) -> AppTransaction {
        let appTransaction = try FakeJWS.decode(AppTransaction.self, signedAppTransaction)
        guard appTransaction.bundleId == app.bundleId else { throw VerificationError(.invalidAppIdentifier) }
        return appTransaction
    }
}

/// An in-memory ledger with the semantics `LedgerStoring` documents (one lock = one transaction).
final class InMemoryLedger: LedgerStoring {
    struct StoredFact {
        var id: Int
        var fact: Fact
        var receivedAt: Int64
        var bundleId: String?
    }

    struct State {
        var available = true
        var customers: [String: CustomerRecord] = [:]
        var facts: [StoredFact] = []
        var links: [String: String] = [:]  // originalTransactionId -> appUserId
        var clientFacts: [String: [Int]] = [:]  // appUserId -> fact ids posted for them without an otid
        var sources: Set<String> = []
        var batches: [LedgerBatch] = []
        var rejected: [RejectedDelivery] = []
        var nextId = 1
        /// Commits pause until this is cleared (to prove 200 comes only after the store call).
        var ingestDelayMilliseconds = 0
    }

    let state = Mutex(State())

    var available: Bool {
        get { state.withLock { $0.available } }
        set { state.withLock { $0.available = newValue } }
    }
    var rejected: [RejectedDelivery] { state.withLock { $0.rejected } }
    var batches: [LedgerBatch] { state.withLock { $0.batches } }
    var factCount: Int { state.withLock { $0.facts.count } }

    func checkReady() async throws {
        if !available { throw LedgerError(.unavailable) }
    }

    func ingest(_ batch: LedgerBatch) async throws(LedgerError) -> IngestOutcome {
        let delay = state.withLock { $0.ingestDelayMilliseconds }
        if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
        return try state.withLock { (s: inout State) throws(LedgerError) -> IngestOutcome in
            guard s.available else { throw LedgerError(.unavailable, detail: "down") }
            let key: String?
            switch batch.source {
            case .notificationV2(let uuid, _, _): key = "v2:" + uuid
            case .notificationV1(let k, _): key = "v1:" + k
            case .client: key = nil
            }
            if let key, s.sources.contains(key) { return IngestOutcome(status: .duplicate) }
            if let key { s.sources.insert(key) }
            s.batches.append(batch)
            var newIds: [Int] = []
            for fact in batch.facts where !s.facts.contains(where: { $0.fact == fact }) {
                s.facts.append(StoredFact(id: s.nextId, fact: fact, receivedAt: batch.receivedAt, bundleId: batch.bundleId))
                newIds.append(s.nextId)
                s.nextId += 1
            }
            // appAccountToken links a purchase to its customer, whichever arrives first.
            for fact in batch.facts {
                if let token = Self.token(fact), let otid = Self.otid(fact), s.links[otid] == nil,
                    let owner = s.customers.values.first(where: { $0.appAccountToken == token })
                {
                    s.links[otid] = owner.appUserId
                }
            }
            var links: [String: IngestOutcome.LinkResult] = [:]
            if let link = batch.link {
                if s.customers[link.appUserId] == nil {
                    s.customers[link.appUserId] = CustomerRecord(
                        appUserId: link.appUserId, appAccountToken: UUID().uuidString.lowercased(), createdAt: batch.receivedAt)
                }
                for otid in link.originalTransactionIds {
                    switch s.links[otid] {
                    case nil, link.appUserId?:
                        s.links[otid] = link.appUserId
                        links[otid] = .linked
                    case _?:
                        if link.restoreBehavior == .transfer {
                            s.links[otid] = link.appUserId
                            links[otid] = .transferred
                        } else {
                            links[otid] = .keptByOther
                        }
                    }
                }
                if link.originalTransactionIds.isEmpty {
                    let ids = s.facts.filter { batch.facts.contains($0.fact) }.map(\.id)
                    s.clientFacts[link.appUserId, default: []] += ids
                }
            }
            return IngestOutcome(status: .accepted, links: links)
        }
    }

    func recordRejected(_ delivery: RejectedDelivery) async throws(LedgerError) {
        try state.withLock { (s: inout State) throws(LedgerError) in
            guard s.available else { throw LedgerError(.unavailable) }
            s.rejected.append(delivery)
        }
    }

    func customer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> CustomerSnapshot {
        try state.withLock { (s: inout State) throws(LedgerError) -> CustomerSnapshot in
            guard s.available else { throw LedgerError(.unavailable) }
            if s.customers[appUserId] == nil {
                let record = CustomerRecord(
                    appUserId: appUserId, appAccountToken: UUID().uuidString.lowercased(), createdAt: context.now)
                s.customers[appUserId] = record
                // Facts that arrived first, carrying this token, now belong to the customer.
                for stored in s.facts {
                    if let token = Self.token(stored.fact), token == record.appAccountToken, let otid = Self.otid(stored.fact),
                        s.links[otid] == nil
                    {
                        s.links[otid] = appUserId
                    }
                }
            }
            let facts = Self.facts(of: appUserId, in: s).map(\.fact)
            return CustomerSnapshot(
                customer: s.customers[appUserId]!,
                state: evaluate(facts: facts, policy: context.policy, now: context.now, environment: context.environment))
        }
    }

    func history(appUserId: String, cursor: String?, limit: Int) async throws(LedgerError) -> LedgerHistoryPage? {
        try state.withLock { (s: inout State) throws(LedgerError) -> LedgerHistoryPage? in
            guard s.available else { throw LedgerError(.unavailable) }
            guard s.customers[appUserId] != nil else { return nil }
            var offset = 0
            if let cursor {
                guard let value = Int(cursor), value >= 0 else { throw LedgerError(.invalidRequest) }
                offset = value
            }
            let entries = Self.facts(of: appUserId, in: s).map(Self.entry).sorted {
                ($0.occurredAt, $0.id) > ($1.occurredAt, $1.id)
            }
            let page = Array(entries.dropFirst(offset).prefix(limit))
            let next = offset + page.count < entries.count ? String(offset + page.count) : nil
            return LedgerHistoryPage(entries: page, nextCursor: next)
        }
    }

    func subscription(originalTransactionId: String) async throws(LedgerError) -> SubscriptionRecord? {
        try state.withLock { (s: inout State) throws(LedgerError) -> SubscriptionRecord? in
            guard s.available else { throw LedgerError(.unavailable) }
            let stored = s.facts.filter { Self.otid($0.fact) == originalTransactionId }
            guard !stored.isEmpty else { return nil }
            let customer = s.links[originalTransactionId].flatMap { s.customers[$0] }
            let notifications = stored.map(Self.entry).filter { $0.kind == .notification || $0.kind == .v1Notification }
                .sorted { ($0.occurredAt, $0.id) > ($1.occurredAt, $1.id) }
            return SubscriptionRecord(
                originalTransactionId: originalTransactionId, bundleId: stored.first?.bundleId, customer: customer,
                facts: stored.map(\.fact), notifications: notifications)
        }
    }

    private static func facts(of appUserId: String, in s: State) -> [StoredFact] {
        let ids = Set(s.clientFacts[appUserId] ?? [])
        return s.facts.filter { stored in
            if ids.contains(stored.id) { return true }
            guard let otid = otid(stored.fact) else { return false }
            return s.links[otid] == appUserId
        }
    }

    static func otid(_ fact: Fact) -> String? {
        switch fact {
        case .transaction(let f): f.originalTransactionId
        case .renewalInfo(let f): f.originalTransactionId
        case .notification(let f): f.originalTransactionId
        case .receiptEntry(let f): f.originalTransactionId
        case .pendingRenewal(let f): f.originalTransactionId
        case .v1Notification(let f): f.originalTransactionId
        case .appTransaction: nil
        }
    }

    static func token(_ fact: Fact) -> String? {
        switch fact {
        case .transaction(let f): f.appAccountToken
        case .receiptEntry(let f): f.appAccountToken
        default: nil
        }
    }

    static func entry(_ stored: StoredFact) -> LedgerHistoryEntry {
        LedgerHistoryEntry(fact: stored.fact, id: String(stored.id), receivedAt: stored.receivedAt)
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
        host: String = "127.0.0.1"
    ) async throws -> Reply {
        try await blocking { try exchange(port: port, method, path, headers: headers, body: body, host: host) }
    }

    static func exchange(
        port: Int, _ method: String, _ path: String, headers: [String: String], body: [UInt8], host: String = "127.0.0.1"
    ) throws -> Reply {
        let fd = try connect(port: port)
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

/// Apple's model fixtures (app-store-server-library-python), found by walking up from this file.
enum AppleFixtures {
    static let folder: URL? = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<8 {
            let candidate = url.appendingPathComponent(
                "shared/apple-fixtures/app-store-server-library-python/tests/resources/models")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            url = url.deletingLastPathComponent()
        }
        return nil
    }()

    static func load<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        guard let folder else { throw CocoaError(.fileNoSuchFile) }
        return try AppStoreJSON.decode(type, from: Data(contentsOf: folder.appendingPathComponent(name)))
    }
}
