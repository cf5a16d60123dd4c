import EntitledKit
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The app-key endpoints played in memory (no sockets): it mints numbered tokens, answers
/// customers, logins and offer signatures, and records every request as sent.
final class ScriptedServer: HTTPTransport {
    struct Sent {
        var method: String
        var path: String
        var authorization: String?
        var body: [String: String]
        var cachePolicy: URLRequest.CachePolicy
    }

    struct State {
        var sent: [Sent] = []
        var tokens = 0
        var anonymous = 0
        /// The token each customer holds now (the server accepts only it).
        var valid: [String: String] = [:]
        var offers = #"{"introductory":["pro.monthly"],"winBack":[{"productId":"pro.monthly","offerId":"back"}],"promotional":[{"productId":"pro.monthly","offerId":"half"}]}"#
    }

    let state = Mutex(State())
    let clock: FakeWall
    init(clock: FakeWall) { self.clock = clock }

    var sent: [Sent] { state.withLock { $0.sent } }
    func sent(_ method: String, _ suffix: String) -> [Sent] { sent.filter { $0.method == method && $0.path.hasSuffix(suffix) } }

    static func iso(_ date: Date) -> String { date.formatted(Date.ISO8601FormatStyle()) }

    private func answer(_ id: String, _ offers: String) -> String {
         #"{"appUserId":"\#(id)","appAccountToken":"9f1c4e4e-8a0e-4d3b-9c39-0b8b5f6c1d2e","state":"new","#
            + #""serverTime":"\#(Self.iso(clock.now()))","entitlements":{},"subscriptions":[],"offers":\#(offers)}"#
    }

    private func mint(_ id: String, _ state: inout State) -> String {
        state.tokens += 1
        let token = "token-\(state.tokens)"
        state.valid[id] = token
        return #""appUserId":"\#(id)","token":"\#(token)","expiresAt":"\#(Self.iso(clock.now().addingTimeInterval(3600)))""#
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let method = request.httpMethod ?? "GET"
        let path = request.url!.path
        let body = request.httpBody.flatMap { try? JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
        let authorization = request.value(forHTTPHeaderField: "Authorization")
        let bearer = authorization.map { String($0.dropFirst("Bearer ".count)) } ?? ""
        let (status, json): (Int, String) = state.withLock { state in
            state.sent.append(Sent(method: method, path: path, authorization: authorization, body: body, cachePolicy: request.cachePolicy))
            let parts = path.split(separator: "/").map(String.init)  // v1 customers {id} [suffix]
            if method == "POST", path == "/v1/customers/anonymous" {
                guard bearer.hasPrefix("app_") else { return (401, #"{"code":"UNAUTHORIZED"}"#) }
                state.anonymous += 1
                let id = "$anon:\(state.anonymous)"
                return (201, #"{\#(mint(id, &state)),"appAccountToken":"9f1c4e4e-8a0e-4d3b-9c39-0b8b5f6c1d2e"}"#)
            }
            guard parts.count >= 3, state.valid[parts[2]] == bearer else { return (403, #"{"code":"FORBIDDEN"}"#) }
            let id = parts[2]
            switch (method, parts.count > 3 ? parts[3] : "") {
            case ("GET", ""): return (200, answer(id, state.offers))
            case ("POST", "token"): return (200, "{\(mint(id, &state))}")
            case ("POST", "login"):
                guard let known = body["appUserId"], body["token"] == "minted-for-\(known)" else {
                    return (403, #"{"code":"INVALID_LOGIN_TOKEN"}"#)
                }
                return (200, #"{\#(mint(known, &state)),"customer":\#(answer(known, state.offers))}"#)
            case ("POST", "transactions"): return (200, answer(id, state.offers))
            case ("POST", "offers"):
                return (200, #"{"keyId":"KEY1","nonce":"5c0f0d7e-1111-4a2b-9c39-0b8b5f6c1d2e","timestamp":1800000000000,"signature":"MEUCIQ=="}"#)
            default: return (404, #"{"code":"NOT_FOUND"}"#)
            }
        }
        let response = HTTPURLResponse(
            url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Cache-Control": "max-age=60"])!
        return (Data(json.utf8), response)
    }

    /// An app-key `Entitled` on this server, with `store` for the identity.
    func entitled(_ identities: any IdentityStore, store: (any StoreGateway)? = nil) -> Entitled {
        var configuration = EntitledClient.Configuration(
            retry: RetryPolicy(maxAttempts: 1), transport: self, sleeper: RecordingSleeper(), monotonicClock: FakeMonotonic(),
            wallClock: clock)
        configuration.environment = nil
        return Entitled(
            baseURL: URL(string: "https://entitled.test")!, appKey: "app_0123456789abcdef01234567", bundleId: "com.example.app",
            store: store, identityStore: identities, configuration: configuration)
    }
}
