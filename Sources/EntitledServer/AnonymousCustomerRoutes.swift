import AppStore
import EntitledConfig
import Entitlements
import Foundation
import HTTPServer
import Storage

/// Anonymous customers for apps without a backend (docs/app-keys.md): created with an app key,
/// then acting only through their own customer token.
struct AnonymousCustomerRoutes: Sendable {
    let gate: AccessGate
    /// App keys, the token minter and their rate limits.
    let appKeys: AppKeyGate
    let budget: RejectionBudget
    let ledger: FactLedger
    let answers: CustomerAnswers
    let aliases: AliasMerger
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.post("/v1/customers/anonymous") { try await routes.createAnonymous($0) }
        router.post("/v1/customers/{appUserId}/token") { try await routes.refreshToken($0) }
        router.post("/v1/customers/{appUserId}/login") { try await routes.logIn($0) }
    }

    /// `POST /v1/customers/anonymous` with `Authorization: Bearer app_…`: a new anonymous customer
    /// and a token for it. 201.
    func createAnonymous(_ request: Request) async throws -> Response {
        guard let credential = AppKeyGate.bearer(request), let key = appKeys.match(credential) else {
            guard budget.charge(request.remoteAddress, .apiKey) else { throw RejectionBudget.exhausted }
            throw AuthError.unauthorized("expected 'Authorization: Bearer <app key>'")
        }
        try AppKeyGate.spend(appKeys.perAddress, "create " + request.remoteAddress, .addressRateLimited)
        try AppKeyGate.spend(appKeys.perKey, key.bundleId + " " + key.name, .appKeyRateLimited)
        let now = clock.nowMilliseconds()
        let appUserId = AppKeyGate.newAnonymousId()
        let context = answers.merged(now: now)
        let snapshot = try await Problems.store { () async throws(StorageError) in
            try await ledger.customer(appUserId: appUserId, context: context)
        }
        guard let minted = appKeys.mint(appUserId, now: now) else { throw Self.tokensNotConfigured }
        return try RequestInput.noStore(
            .json(
                MintedTokenBody(
                    appUserId: appUserId, appAccountToken: snapshot.customer.appAccountToken, token: minted.token,
                    expiresAt: ISO8601.format(milliseconds: minted.expiresAt)),
                status: 201))
    }

    /// `POST /v1/customers/{appUserId}/token` with that customer's token: a fresh token. Only for
    /// anonymous ids that have not logged in, unless an app allows app-key login (then every id is
    /// one login away anyway): a backend's token keeps the expiry its backend chose.
    func refreshToken(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try requireOwnToken(request, appUserId)
        guard AppKeyGate.isAnonymous(appUserId) || appKeys.allowKeyLogin else {
            throw HTTPError(.forbidden, "only an anonymous customer's token is refreshed here; ask your backend for a new one")
        }
        try AppKeyGate.spend(appKeys.perAddress, "refresh " + request.remoteAddress, .addressRateLimited)
        let now = clock.nowMilliseconds()
        if !appKeys.allowKeyLogin {
            // Logged in, the anonymous id reads the known customer: refreshing it would outlive
            // the backend's token.
            let context = answers.merged(now: now)
            let snapshot = try await Problems.store { () async throws(StorageError) in
                try await ledger.customer(appUserId: appUserId, context: context)
            }
            guard snapshot.customer.aliases.isEmpty else {
                throw HTTPError(.forbidden, "this anonymous customer has logged in; use a token for the id it logged in to")
            }
        }
        guard let minted = appKeys.mint(appUserId, now: now) else { throw Self.tokensNotConfigured }
        return try RequestInput.noStore(
            .json(MintedTokenBody(appUserId: appUserId, token: minted.token, expiresAt: ISO8601.format(milliseconds: minted.expiresAt))))
    }

    struct LoginRequest: Decodable {
        var appUserId: String?
        var token: String?
    }

    /// `POST /v1/customers/{anonymousId}/login` `{"appUserId", "token"}` with the anonymous
    /// customer's token: `token` (minted by the app's backend for `appUserId`) proves the caller is
    /// that customer; the anonymous id becomes its alias. Answers a token for `appUserId` and the
    /// merged customer.
    func logIn(_ request: Request) async throws -> Response {
        let anonymousId = try RequestInput.appUserId(request)
        try requireOwnToken(request, anonymousId)
        guard AppKeyGate.isAnonymous(anonymousId) else {
            throw HTTPError(.invalidRequest, "only an anonymous customer (\(AppKeyGate.anonymousPrefix)…) logs in")
        }
        try AppKeyGate.spend(appKeys.perAddress, "login " + request.remoteAddress, .addressRateLimited)
        let body = try RequestInput.decode(LoginRequest.self, request)
        guard let target = body.appUserId else { throw HTTPError(.invalidRequest, "appUserId is required") }
        guard AppUserID.isValid(target) else { throw AppUserID.invalid }
        guard !AppKeyGate.isAnonymous(target) else {
            throw HTTPError(.invalidRequest, "an anonymous customer logs in to a known id, not another anonymous one")
        }
        let now = clock.nowMilliseconds()
        if let token = body.token {
            let subject = try? appKeys.tokens?.verify(token, now: now)
            guard let subject, AppUserID.same(subject, target) else {
                guard budget.charge(request.remoteAddress, .customerToken) else { throw RejectionBudget.exhausted }
                throw HTTPError(.invalidLoginToken, "token is not a valid customer token for appUserId")
            }
        } else if !appKeys.allowKeyLogin {
            throw HTTPError(.invalidLoginToken, "token is required: a customer token your backend minted for appUserId")
        }
        let customer = try await aliases.merge(anonymousId, into: target, actor: "login", now: now)
        guard let minted = appKeys.mint(target, now: now) else { throw Self.tokensNotConfigured }
        // The token's fields, then the merged customer as `GET` answers it.
        var bytes = Array(
            try JSONEncoder.entitledDefault.encode(
                MintedTokenBody(appUserId: target, token: minted.token, expiresAt: ISO8601.format(milliseconds: minted.expiresAt))))
        bytes.removeLast()
        bytes += Array(#","customer":"#.utf8) + customer + [UInt8(ascii: "}")]
        return RequestInput.noStore(.json(bytes: bytes))
    }

    /// A customer token for exactly `appUserId` (API keys are refused: they mint nothing).
    func requireOwnToken(_ request: Request, _ appUserId: String) throws {
        let principal = try gate.authenticate(request)
        guard case .customer = principal else {
            throw HTTPError(.forbidden, "this endpoint needs the customer's own token")
        }
        try gate.authenticator.authorize(principal, scope: .write, appUserId: appUserId)
    }

    /// Unreachable with a loaded configuration (app keys need `customerTokens`).
    static let tokensNotConfigured = HTTPError(.forbidden, "customer tokens are not configured")
}
