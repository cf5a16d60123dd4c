import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import Testing

/// A Server API host (or whatever answers in its place) that redirects: the client keeps Apple's
/// token to itself.
@Suite(.serialized) struct ServerAPIRedirectTests {
    /// A loopback server answering every `GET /inApps/v1/transactions/{id}` with `answer`, and
    /// recording each request's `Authorization` header.
    final class Host: Sendable {
        let server: HTTPServer
        private let authorizations: Authorizations

        /// The `Authorization` header of each request (nil when it had none).
        final class Authorizations: Sendable {
            let values = Mutex<[String?]>([])
        }

        init(_ answer: @escaping @Sendable (Request) -> Response) throws {
            let authorizations = Authorizations()
            var routes = Router()
            routes.get("/inApps/v1/transactions/{id}") { request in
                authorizations.values.withLock { $0.append(request.headers["authorization"]) }
                return answer(request)
            }
            var settings = HTTPServer.Configuration()
            (settings.host, settings.port, settings.accessLog, settings.errorLog) = ("127.0.0.1", 0, nil, nil)
            server = HTTPServer(configuration: settings, router: routes)
            try server.start()
            self.authorizations = authorizations
        }

        var seen: [String?] { authorizations.values.withLock { $0 } }
        var base: URL { URL(string: "http://127.0.0.1:\(server.port)")! }
    }

    @Test(arguments: [302, 307, 308])
    func aCrossOriginRedirectIsNotFollowedAndTheTokenStaysHome(status: Int) async throws {
        let elsewhere = try Host { _ in Response(status: 200, body: Array("{}".utf8)) }
        let target = elsewhere.base
        let origin = try Host { request in Response(status: status, headers: ["Location": target.absoluteString + request.path]) }
        let fixture = try Fixture()
        let client = fixture.client(CurlHTTP(), settings: .init(environment: .production, baseURL: origin.base, timeoutSeconds: 5))
        let error = await apiError { _ = try await client.transactionInfo("1") }
        #expect(error?.code == "APPLE_INVALID_RESPONSE")
        #expect(error?.description.contains("redirect (\(status)) not followed") == true, "\(String(describing: error))")
        #expect(origin.seen.count == 1 && origin.seen.first??.hasPrefix("Bearer ") == true, "one call, not retried")
        #expect(elsewhere.seen.isEmpty, "nothing, and no Authorization header, reached the other origin")
        await origin.server.shutdown()
        await elsewhere.server.shutdown()
    }
}
