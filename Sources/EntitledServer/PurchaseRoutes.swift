import AppStore
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// Purchases an app posts for its customer (`write` scope, or the customer's own token): StoreKit 2
/// signed transactions and app transactions, and StoreKit 1 receipts. Each answers the customer's
/// new state.
struct PurchaseRoutes: Sendable {
    let gate: AccessGate
    let ingest: Ingest
    let refusals: Refusals
    let budget: RejectionBudget
    let answers: CustomerAnswers
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        // Credentials are checked when the headers are in, so a bad key never gets its body read.
        router.post("/v1/customers/{appUserId}/transactions", admit: { _ = try routes.gate.authenticate($0) }) {
            try await routes.postTransaction($0)
        }
        router.post("/v1/customers/{appUserId}/receipts", admit: { _ = try routes.gate.authenticate($0) }) {
            try await routes.postReceipt($0)
        }
    }

    /// The body of `POST /v1/customers/{appUserId}/transactions`: exactly one of the two.
    struct PostedTransaction: Decodable {
        var signedTransaction: String?
        var signedAppTransaction: String?
    }

    /// `POST /v1/customers/{appUserId}/transactions`: verify, link, apply, answer the new state.
    func postTransaction(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .write, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        guard request.body.count <= API.maxNotificationBytes else { throw HTTPError.payloadTooLarge(limit: API.maxNotificationBytes) }
        let posted = try RequestInput.decode(PostedTransaction.self, request)
        guard budget.allows(request.remoteAddress, .clientSignature) else { throw RejectionBudget.exhausted }
        let signed: Ingest.PostedSignedData
        switch (posted.signedTransaction, posted.signedAppTransaction) {
        case (let jws?, nil): signed = .transaction(jws)
        case (nil, let jws?): signed = .appTransaction(jws)
        default: throw HTTPError(.invalidRequest, "send exactly one of signedTransaction and signedAppTransaction")
        }
        do throws(IngestError) {
            try await ingest.posted(signed, appUserId: appUserId, now: now)
        } catch {
            throw await refusals.answer(error, .clientSignature, source: .client, request: request, now: now)
        }
        // The answer a plain GET gives next: the grant environments merged.
        return try await answers.written(appUserId: appUserId, context: answers.merged(now: now))
    }

    /// The body of `POST /v1/customers/{appUserId}/receipts`: the base64 receipt, and for a legacy
    /// transaction receipt (which names no app) the app's bundleId when more than one app is configured.
    struct PostedReceipt: Decodable {
        var receiptData: String?
        var bundleId: String?
    }

    /// `POST /v1/customers/{appUserId}/receipts`: StoreKit 1 app receipts (and legacy transaction
    /// receipts), verified and applied as posted transactions are.
    func postReceipt(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .write, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        guard request.body.count <= API.maxReceiptBodyBytes else { throw HTTPError.payloadTooLarge(limit: API.maxReceiptBodyBytes) }
        let posted = try RequestInput.decode(PostedReceipt.self, request)
        guard let text = posted.receiptData, !text.isEmpty else {
            throw HTTPError(.invalidRequest, "receiptData (the base64 app receipt) is required")
        }
        guard budget.allows(request.remoteAddress, .clientSignature) else { throw RejectionBudget.exhausted }
        let environment: Environment
        do throws(IngestError) {
            environment = try await ingest.receipt(text, bundleId: posted.bundleId, appUserId: appUserId, now: now)
        } catch {
            throw await refusals.answer(
                error, .clientSignature, source: .client, request: request, now: now, body: ingest.storedReceiptBody(text))
        }
        let context = EvaluationContext(policy: answers.policy, environment: environment, now: now)
        return try await answers.written(appUserId: appUserId, context: context)
    }
}
