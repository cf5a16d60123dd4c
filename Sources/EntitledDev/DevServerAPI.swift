import AppStoreServerAPI
import AppStoreSimulator
import EntitledConfig
import EntitledCrypto
import Foundation
import HTTPClient
import Synchronization

/// `entitled dev`'s App Store Server API: the simulator's fake (``FakeServerAPI``) on the control
/// port, and the app's `serverAPI` pointing at it with a key made for this run, so the console's
/// order-id search and support actions work against the simulated store.
///
/// The server's client is built before the control port is bound (the simulator needs the
/// server's address first), so it is given a placeholder base URL and ``Redirect`` sends its
/// requests to the control server once that listens.
struct DevServerAPI {
    static let keyId = "DEVKEY0001"
    static let issuerId = "6a5c0f3e-0000-4000-8000-00000000de00"
    /// Never contacted: ``Redirect`` replaces its scheme, host and port.
    static let placeholder = URL(string: "http://127.0.0.1:9")!

    let key: P256PrivateKey
    let redirect = Redirect()

    init() throws {
        key = try P256PrivateKey()
    }

    /// The app's `serverAPI` for this run.
    func settings() throws -> ServerAPISettings {
        ServerAPISettings(keyId: Self.keyId, issuerId: Self.issuerId, privateKeyPEM: try key.pkcs8PEM(), baseURL: Self.placeholder)
    }

    /// The key the fake accepts.
    func acceptedKey() throws -> AppStoreSimulator.APIKey {
        AppStoreSimulator.APIKey(keyId: Self.keyId, issuerId: Self.issuerId, publicKey: try key.publicKey)
    }

    /// Sends the client's requests to `target` (the control server) instead of the placeholder;
    /// before ``point(at:)`` they fail as a refused connection would. Requests to any other
    /// address (the webhook dispatcher shares the outbound client) are sent unchanged.
    final class Redirect: OutboundHTTP {
        private let placeholder = DevServerAPI.placeholder
        private let target = Mutex<URLComponents?>(nil)
        private let http = CurlHTTP()

        func point(at url: URL) {
            target.withLock { $0 = URLComponents(url: url, resolvingAgainstBaseURL: false) }
        }

        func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
            // Everything else (webhook deliveries) goes where it was addressed.
            guard request.url.host == placeholder.host, request.url.port == placeholder.port else { return try await http.send(request) }
            guard let base = target.withLock({ $0 }), var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
            else { throw OutboundHTTPError(message: "the simulator's Server API is not listening yet") }
            components.scheme = base.scheme
            components.host = base.host
            components.port = base.port
            guard let url = components.url else { throw OutboundHTTPError(message: "cannot redirect \(request.url)") }
            var redirected = request
            redirected.url = url
            return try await http.send(redirected)
        }
    }
}
