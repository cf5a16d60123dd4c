import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EntitledCrypto
import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import Testing

/// 2026-01-15T00:00:00Z.
let start: Int64 = 1_768_435_200_000
let bundleId = "com.example.app"
let issuerId = "57246542-96fe-1a63-e053-0824d011072a"

/// An ``OutboundHTTP`` answering from a script and recording what was sent.
final class ScriptedTransport: OutboundHTTP {
    private let state: Mutex<(script: [Result<OutboundResponse, OutboundHTTPError>], sent: [OutboundRequest])>

    init(_ script: [Result<OutboundResponse, OutboundHTTPError>]) { state = Mutex((script, [])) }

    /// The requests sent so far.
    var sent: [OutboundRequest] { state.withLock { $0.sent } }

    func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        let next: Result<OutboundResponse, OutboundHTTPError> = state.withLock { state in
            state.sent.append(request)
            return state.script.isEmpty ? .failure(OutboundHTTPError(message: "script exhausted")) : state.script.removeFirst()
        }
        return try next.get()
    }
}

/// A ``Sleeper`` that records the waits and returns at once.
final class RecordingSleeper: Sleeper {
    private let waits = Mutex<[Int64]>([])
    var recorded: [Int64] { waits.withLock { $0 } }
    func sleep(milliseconds: Int64) async throws { waits.withLock { $0.append(milliseconds) } }
}

/// A JSON response.
func json(_ status: Int, _ body: String, headers: [String: String] = [:]) -> Result<OutboundResponse, OutboundHTTPError> {
    .success(OutboundResponse(status: status, headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a }, body: Array(body.utf8)))
}

/// A signing chain, a verifier trusting it, and a client over a scripted transport.
struct Fixture {
    let ca: SimulatorCA
    let key: P256PrivateKey
    let clock: VirtualClock
    let verifier: SignedDataVerifier

    init() throws {
        ca = try SimulatorCA.ephemeral()
        key = try P256PrivateKey()
        clock = VirtualClock(milliseconds: start)
        verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [ca.rootDER], bundleId: bundleId, environments: [.production, .sandbox], mode: .offline),
            clock: clock)
    }

    var credentials: ServerAPICredentials {
        ServerAPICredentials(bundleId: bundleId, keyId: "ABC123DEFG", issuerId: issuerId, privateKey: key)
    }

    func client(
        _ transport: any OutboundHTTP, sleeper: any Sleeper = RecordingSleeper(), settings: AppStoreServerAPIClient.Settings = .init(),
        random: @escaping @Sendable () -> Double = { 0 }
    ) -> AppStoreServerAPIClient {
        AppStoreServerAPIClient(
            credentials: credentials, settings: settings, verifier: verifier, transport: transport, clock: clock, sleeper: sleeper,
            random: random)
    }

    /// A signed transaction in `environment`.
    func transaction(_ id: String, environment: AppStoreEnvironment = .production) throws -> String {
        try ca.signer.sign(
            JWSTransactionDecodedPayload(
                originalTransactionId: id, transactionId: id, bundleId: bundleId, productId: "pro.monthly", signedDate: start,
                environment: environment))
    }
}

/// `error` as a ``ServerAPIError`` (recording an issue when it is something else).
func apiError(_ body: () async throws -> Void) async -> ServerAPIError? {
    do {
        try await body()
        Issue.record("expected an error")
        return nil
    } catch let error as ServerAPIError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

extension HTTPServer {
    /// A started server on a free loopback port, without logs.
    static func quietLoopback(_ routes: Router, threads: Int = 2) throws -> HTTPServer {
        var settings = HTTPServer.Configuration()
        (settings.host, settings.port, settings.threads, settings.accessLog, settings.errorLog) = ("127.0.0.1", 0, threads, nil, nil)
        let server = HTTPServer(configuration: settings, router: routes)
        try server.start()
        return server
    }
}
