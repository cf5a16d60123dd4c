import AppStore
import EntitledConfig
import Foundation
import HTTPServer
import Storage

/// The event feed (`read` or `admin` API keys): every customer's events in commit order, with
/// long polling.
struct EventRoutes: Sendable {
    let gate: AccessGate
    let ledger: FactLedger

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/events") { try await routes.events($0) }
    }

    /// Feed page size when `limit` is absent, and its maximum; longest long-poll (s).
    static let defaultFeedLimit = 100
    static let maxFeedLimit = 1000
    static let maxFeedWaitSeconds = 30

    /// The scopes whose keys read the event feed: a backend's (`read`) and an operator's (`admin`).
    /// Not `console`: the console shows no feed, and the feed carries every customer's ids and
    /// answers, which a console key reads only one customer at a time.
    static let feedScopes: Set<APIKey.Scope> = [.read, .admin]

    /// `GET /v1/events?after=<cursor>&limit=100&wait=30` (an API key with `read` or `admin`): the
    /// events after `after` in commit order; with `wait`, an empty page waits up to that long for
    /// the next commit (and ends at once when the server stops).
    func events(_ request: Request) async throws -> Response {
        let principal = try gate.authenticate(request)
        guard case .apiKey(_, let scopes) = principal else { throw AuthError.forbidden("the event feed needs an API key") }
        guard !Self.feedScopes.isDisjoint(with: scopes) else {
            throw AuthError.forbidden("the event feed needs an API key with the 'read' or 'admin' scope")
        }
        var limit = Self.defaultFeedLimit
        if let text = request.query["limit"] {
            guard let value = Int(text), (1...Self.maxFeedLimit).contains(value) else {
                throw HTTPError(.invalidLimit, "limit must be 1…\(Self.maxFeedLimit)")
            }
            limit = value
        }
        var after: Int64 = 0
        if let text = request.query["after"], !text.isEmpty {
            guard text.count <= 19, let value = Int64(text), value >= 0 else { throw API.invalidCursor }
            after = value
        }
        var wait = 0
        if let text = request.query["wait"] {
            guard let value = Int(text), (0...Self.maxFeedWaitSeconds).contains(value) else {
                throw HTTPError(.invalidRequest, "wait must be 0…\(Self.maxFeedWaitSeconds) seconds")
            }
            wait = value
        }
        let feed = ledger.store
        let deadline = ContinuousClock.now + .seconds(wait)
        var events = try await Problems.storeAny { try await feed.events(after: after, limit: limit) }
        while events.isEmpty, ContinuousClock.now < deadline, !ledger.events.isClosed, !Task.isCancelled {
            // Woken by a commit of this process; another server's commits are seen within a second.
            await ledger.events.wait(timeout: min(.seconds(1), deadline - ContinuousClock.now))
            events = try await Problems.storeAny { try await feed.events(after: after, limit: limit) }
        }
        var body = Array(#"{"events":["#.utf8)
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += EventJSON.render(event)
        }
        body += Array(#"],"nextCursor":""#.utf8) + Array(String(events.last?.sequence ?? after).utf8) + Array(#""}"#.utf8)
        return .json(bytes: body)
    }
}
