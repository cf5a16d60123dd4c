import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The app-key flow (docs/app-keys.md): creates the anonymous customer once, keeps its token
/// fresh, logs in and out. The app key is sent on `POST /v1/customers/anonymous` only.
actor AppKeySession {
    let baseURL: URL
    let appKey: String
    let store: any IdentityStore
    let configuration: EntitledClient.Configuration
    /// A token closer than this to its expiry is refreshed before use.
    let refreshMargin: TimeInterval = 300
    private var identity: StoredIdentity?
    private var loaded = false
    /// The creation or refresh in flight: concurrent callers share it (one anonymous customer per install).
    private var pending: Task<StoredIdentity, any Error>?

    init(baseURL: URL, appKey: String, store: any IdentityStore, configuration: EntitledClient.Configuration) {
        self.baseURL = baseURL
        self.appKey = appKey
        self.store = store
        self.configuration = configuration
    }

    /// The identity to call as, created or refreshed as needed.
    func current() async throws -> StoredIdentity {
        if let pending { return try await pending.value }
        if !loaded {
            identity = store.load()
            loaded = true
        }
        let now = configuration.wallClock.now()
        if let identity, now < identity.renewsAt(margin: refreshMargin) { return identity }
        let previous = identity
        let task = Task { () throws -> StoredIdentity in
            if let previous, now < previous.expiresAt {
                return try await self.refreshed(previous)
            }
            if let previous, !previous.anonymous {
                throw EntitledError.credentials("the token for \(previous.appUserId) expired: log in again")
            }
            return try await self.createAnonymous()
        }
        pending = task
        defer { pending = nil }
        let fresh = try await task.value
        adopt(fresh)
        return fresh
    }

    /// A token for `appUserId`, or an error when the session has moved on to another customer.
    func token(for appUserId: String) async throws -> String {
        let identity = try await current()
        guard identity.appUserId == appUserId else {
            throw EntitledError.credentials("\(appUserId) is no longer the logged-in customer")
        }
        return identity.token
    }

    /// Merges the current anonymous customer into `appUserId` (`token`: one the app's backend
    /// minted for it; nil only where the server allows app-key logins); answers the merged customer.
    func logIn(_ appUserId: String, token: String?) async throws -> CustomerAnswer {
        let anonymous = try await current()
        var request = URLRequest(url: url("/v1/customers/\(EntitledClient.escape(anonymous.appUserId))/login"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        var body = ["appUserId": appUserId]
        body["token"] = token
        request.httpBody = try JSONEncoder().encode(body)
        let (data, _) = try await EntitledClient.send(request, bearer: anonymous.token, configuration: configuration)
        struct LoginResult: Decodable {
            var appUserId: String
            var token: String
            var expiresAt: Date
            var customer: CustomerAnswer
        }
        let result: LoginResult
        do { result = try JSONDecoder.entitled.decode(LoginResult.self, from: data) } catch {
            throw EntitledError.invalidResponse("login: \(error)")
        }
        adopt(
            StoredIdentity(
                appUserId: result.appUserId, token: result.token, expiresAt: result.expiresAt, anonymous: false,
                receivedAt: configuration.wallClock.now()))
        return result.customer
    }

    /// Forgets the identity: the next call creates a new anonymous customer.
    func logOut() {
        pending?.cancel()
        pending = nil
        adopt(nil)
    }

    private func adopt(_ identity: StoredIdentity?) {
        self.identity = identity
        loaded = true
        store.save(identity)
    }

    private struct MintedToken: Decodable {
        var appUserId: String
        var token: String
        var expiresAt: Date
    }

    private func createAnonymous() async throws -> StoredIdentity {
        var request = URLRequest(url: url("/v1/customers/anonymous"))
        request.httpMethod = "POST"
        let minted = try await mint(request, bearer: appKey)
        return StoredIdentity(
            appUserId: minted.appUserId, token: minted.token, expiresAt: minted.expiresAt, anonymous: true,
            receivedAt: configuration.wallClock.now())
    }

    private func refreshed(_ identity: StoredIdentity) async throws -> StoredIdentity {
        var request = URLRequest(url: url("/v1/customers/\(EntitledClient.escape(identity.appUserId))/token"))
        request.httpMethod = "POST"
        let minted = try await mint(request, bearer: identity.token)
        return StoredIdentity(
            appUserId: identity.appUserId, token: minted.token, expiresAt: minted.expiresAt, anonymous: identity.anonymous,
            receivedAt: configuration.wallClock.now())
    }

    private func mint(_ request: URLRequest, bearer: String) async throws -> MintedToken {
        let (data, _) = try await EntitledClient.send(request, bearer: bearer, configuration: configuration)
        do { return try JSONDecoder.entitled.decode(MintedToken.self, from: data) } catch {
            throw EntitledError.invalidResponse("customer token: \(error)")
        }
    }

    private func url(_ escapedPath: String) -> URL { EntitledClient.url(baseURL, escapedPath) }
}
