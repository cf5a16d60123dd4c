import AppStore
import Entitlements
import HTTPServer
import Storage

/// Google Play: the Pub/Sub push endpoint (authenticated by Google's OIDC token, not by an API
/// key) and the purchase tokens an app posts for its customer.
struct GooglePlayRoutes: Sendable {
    let gate: AccessGate
    let play: PlayIngest
    let refusals: Refusals
    let budget: RejectionBudget
    let answers: CustomerAnswers
    let clock: any EpochClock

    /// The largest push or posted body read.
    static let maxBodyBytes = 64 * 1024

    func register(on router: inout Router) {
        let routes = self
        router.post("/v1/google/notifications") { try await routes.postNotification($0) }
        router.post("/v1/customers/{appUserId}/google/purchases", admit: { _ = try routes.gate.authenticate($0) }) {
            try await routes.postPurchase($0)
        }
    }

    /// `POST /v1/google/notifications`: 200 only once the facts the push led to are committed (or
    /// it was a duplicate, or carried nothing to store); anything else makes Pub/Sub retry. A push
    /// that fails authentication is 401 and changes nothing.
    func postNotification(_ request: Request) async throws -> Response {
        let now = clock.nowMilliseconds()
        guard request.body.count <= Self.maxBodyBytes else { throw HTTPError.payloadTooLarge(limit: Self.maxBodyBytes) }
        guard budget.allows(request.remoteAddress, .googlePush) else { throw RejectionBudget.exhausted }
        do throws(IngestError) {
            _ = try await play.push(authorization: request.headers["authorization"], body: request.body, now: now)
        } catch {
            throw await answer(error, request: request, now: now, record: true)
        }
        return Response(status: 200)
    }

    /// The body of `POST /v1/customers/{appUserId}/google/purchases`.
    struct PostedPurchase: Decodable {
        var packageName: String?
        var productId: String?
        var purchaseToken: String?
    }

    /// `POST /v1/customers/{appUserId}/google/purchases`: ask Google, store, link, answer the customer.
    func postPurchase(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .write, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        guard request.body.count <= Self.maxBodyBytes else { throw HTTPError.payloadTooLarge(limit: Self.maxBodyBytes) }
        let posted = try RequestInput.decode(PostedPurchase.self, request)
        guard let packageName = posted.packageName, !packageName.isEmpty, let productId = posted.productId, !productId.isEmpty,
            let token = posted.purchaseToken, !token.isEmpty
        else { throw HTTPError(.invalidRequest, "packageName, productId and purchaseToken are required") }
        guard token.utf8.count <= 4096, productId.utf8.count <= 256, packageName.utf8.count <= 255 else {
            throw HTTPError(.invalidRequest, "packageName, productId or purchaseToken is too long")
        }
        do throws(IngestError) {
            try await play.posted(
                packageName: packageName, productId: productId, purchaseToken: token, appUserId: appUserId, body: request.body, now: now)
        } catch {
            throw await answer(error, request: request, now: now, record: false)
        }
        return try await answers.written(appUserId: appUserId, context: answers.merged(now: now))
    }

    /// The problem for a failed ingest. A refused push charges its sender's budget; one refused for
    /// what it is (after its authentication, which any stranger can fail) is recorded as rejected.
    /// Google or storage unavailable is neither: Pub/Sub retries.
    private func answer(_ error: IngestError, request: Request, now: Int64, record: Bool) async -> HTTPError {
        switch error {
        case .storage(let storage):
            return Problems.storage(storage)
        case .rejected(let rejection):
            let status = rejection.code.status
            guard record, status == 400 || status == 401 else { return Problems.rejected(rejection) }
            refusals.noteRejected(request, source: .googlePlay, code: rejection.code.rawValue)
            guard budget.charge(request.remoteAddress, .googlePush) else { return RejectionBudget.exhausted }
            if status == 400 {
                await play.ingest.recordRejected(rejection, source: .googlePlay, body: request.body, now: now)
            }
            return Problems.rejected(rejection)
        }
    }
}
