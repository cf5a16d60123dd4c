import EntitledCrypto
import Foundation
import GooglePlay
import HTTPServer
import Synchronization

/// The fake Google served over HTTP on loopback (a free port), with a service account it trusts,
/// for tests and `entitled dev`.
public final class FakeGoogleServer: Sendable {
    public let google: FakeGoogle
    public let server: HTTPServer
    /// `http://127.0.0.1:{port}`: the Developer API base URL.
    public let baseURL: URL
    /// The token endpoint, also the `aud` assertions must carry.
    public var tokenURI: URL { baseURL.appendingPathComponent(String(FakeGoogle.tokenPath.dropFirst())) }
    /// The JWKS URL (the configuration's `certsURL`).
    public var certsURL: URL { URL(string: baseURL.absoluteString + FakeGoogle.certsPath)! }

    /// Starts serving `google`.
    public init(google: FakeGoogle) throws {
        self.google = google
        let port = PortBox()
        var router = Router()
        google.register(on: &router) { "http://127.0.0.1:\(port.value)" + FakeGoogle.tokenPath }
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        configuration.accessLog = nil
        configuration.errorLog = nil
        server = HTTPServer(configuration: configuration, router: router)
        try server.start()
        port.set(server.port)
        baseURL = URL(string: "http://127.0.0.1:\(server.port)")!
    }

    /// A service-account key file (JSON) whose `token_uri` is this server, trusted by the fake;
    /// its key is `key`, or a new one (generating an RSA key takes a noticeable fraction of a second).
    public func serviceAccountKeyFile(
        email: String = "entitled@fake-project.iam.gserviceaccount.com", key given: RSAPrivateKey? = nil
    ) throws -> [UInt8] {
        let key = try given ?? RSAPrivateKey()
        google.register(serviceAccount: email, publicKey: try key.publicKey)
        return PlayJSON.encode(
            ServiceAccountKey.KeyFile(
                project_id: "fake-project", private_key_id: "fake-key-1", private_key: try key.pkcs8PEM(), client_email: email,
                token_uri: tokenURI.absoluteString))
    }

    public func shutdown() async { await server.shutdown() }
}

/// The port, known only after the server started; read by the token endpoint's audience check.
final class PortBox: Sendable {
    private let storage = Atomic<Int>(0)
    func set(_ value: Int) { storage.store(value, ordering: .relaxed) }
    var value: Int { storage.load(ordering: .relaxed) }
}
