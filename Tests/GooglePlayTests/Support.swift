import AppStore
import EntitledCrypto
import Foundation
import GooglePlay
import HTTPClient
import Synchronization

/// A clock tests move by hand.
final class TestClock: EpochClock {
    private let now: Mutex<Int64>
    init(seconds: Int64 = 1_780_000_000) { now = Mutex(seconds * 1000) }
    func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    func advance(seconds: Int64) { now.withLock { $0 += seconds * 1000 } }
    var seconds: Int64 { nowMilliseconds() / 1000 }
}

/// An in-memory transport answering with a closure and recording every request.
final class ScriptedTransport: OutboundHTTP {
    private let handler: @Sendable (OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse
    private let log = Mutex<[OutboundRequest]>([])

    init(_ handler: @escaping @Sendable (OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse) {
        self.handler = handler
    }

    func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        log.withLock { $0.append(request) }
        return try await handler(request)
    }

    var requests: [OutboundRequest] { log.withLock { $0 } }
    func count(path: String) -> Int { requests.filter { $0.url.path == path }.count }
}

/// Records the waits instead of waiting.
final class RecordingSleeper: Sleeper {
    private let log = Mutex<[Int64]>([])
    func sleep(milliseconds: Int64) async throws { log.withLock { $0.append(milliseconds) } }
    var waits: [Int64] { log.withLock { $0 } }
}

/// RSA keys are slow to generate: the tests share a few.
enum TestKeys {
    static let google = try! RSAPrivateKey()
    static let other = try! RSAPrivateKey()
    static let serviceAccount = try! RSAPrivateKey()
}

func json(_ text: String) -> [UInt8] { Array(text.utf8) }
