import AppStore
import AppStoreServerAPI
import EntitledConfig
import EntitledCrypto
import Entitlements
import Foundation
import HTTPServer
import Storage

/// `POST /v1/customers/{appUserId}/receipts`: StoreKit 1 app receipts (and legacy transaction
/// receipts), verified and applied as posted transactions are.
extension API {
    /// Largest receipt body accepted (receipts of apps with long histories reach a few hundred KiB).
    public static let maxReceiptBodyBytes = 1024 * 1024

    /// The body: the base64 receipt, and for a legacy transaction receipt (which names no app) the
    /// app's bundleId when more than one app is configured.
    struct PostedReceipt: Decodable {
        var receiptData: String?
        var bundleId: String?
    }

    /// What a receipt yields: the app, the facts to apply (empty when history replaces them), and
    /// the transaction ids to look up at Apple when the app has `serverAPI`.
    struct ReceiptContent {
        var app: App
        var facts: [Fact]
        var transactionIds: [String]
        var environment: Environment
    }

    func postReceipt(_ request: Request) async throws -> Response {
        let appUserId = try Self.appUserId(request)
        try authorize(request, scope: .write, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        guard request.body.count <= Self.maxReceiptBodyBytes else { throw HTTPError.payloadTooLarge(limit: Self.maxReceiptBodyBytes) }
        let posted = try decodeBody(PostedReceipt.self, request)
        guard let text = posted.receiptData, !text.isEmpty else {
            throw HTTPError(.invalidRequest, "receiptData (the base64 app receipt) is required")
        }
        guard budget.allows(request.remoteAddress, .clientSignature) else { throw RejectionBudget.exhausted }
        do {
            let content = try receiptContent(text, bundleId: posted.bundleId, now: now)
            let claim = Claim(appUserId: appUserId, behaviour: content.app.restoreBehavior)
            var environment = content.environment
            if let client = serverAPI[content.app.bundleId], let first = content.transactionIds.first {
                // Apple's migration path: the receipt only names the purchases; the full signed
                // history is what is applied (each transaction as a posted one would be).
                environment = try await applyHistory(client, transactionId: first, app: content.app, claim: claim, now: now)
                    ?? environment
            } else {
                let message = ReceivedMessage(
                    notificationUUID: nil, source: .client, body: storedReceiptBody(text), receivedAt: now,
                    bundleId: content.app.bundleId)
                // Receipt facts have no signed form of their own (as V1's): their identity keys them.
                _ = try await store { () async throws(StorageError) in
                    try await ledger.ingest(message, facts: content.facts.map { ($0, nil) }, claim: claim)
                }
            }
            let context = EvaluationContext(policy: customerPolicy, environment: environment, now: now)
            var response = Response.json(bytes: try await customerAnswer(appUserId: appUserId, context: context).body)
            response.headers.set("Cache-Control", "no-store")
            return response
        } catch let error as VerificationError {
            throw await reject(Rejection(error), .clientSignature, request: request, now: now, redactedBody: storedReceiptBody(text))
        } catch let rejection as Rejection {
            throw await reject(rejection, .clientSignature, request: request, now: now, redactedBody: storedReceiptBody(text))
        }
    }

    /// The receipt verified and mapped: an app receipt's in-app records through the verifyReceipt
    /// mapping (``EntitledConfig/App/facts(fromReceipt:)``), or a legacy transaction receipt's id.
    func receiptContent(_ text: String, bundleId: String?, now: Int64) throws -> ReceiptContent {
        let bytes = try ReceiptVerifier.decodeBase64(text)
        if LegacyTransactionReceipt.looksLikePlist(bytes) {
            guard let id = LegacyTransactionReceipt.transactionId(decoded: bytes) else {
                throw VerificationError(.invalidReceipt, "the transaction receipt has no transaction-id")
            }
            // It names no app and carries nothing Apple signed that we can check: only Apple's
            // history, fetched with an app's Server API key, can say what it bought.
            let withServerAPI = configuration.apps.filter { $0.serverAPI != nil }
            guard !withServerAPI.isEmpty else {
                throw VerificationError(.invalidReceipt, "a legacy transaction receipt is applied only for apps with serverAPI")
            }
            let app = try self.app(bundleId ?? (withServerAPI.count == 1 ? withServerAPI[0].bundleId : nil))
            guard app.serverAPI != nil else {
                throw VerificationError(.invalidReceipt, "a legacy transaction receipt is applied only for apps with serverAPI")
            }
            return ReceiptContent(app: app, facts: [], transactionIds: [id], environment: .production)
        }
        let decoded = try ReceiptVerifier.decode(der: bytes)
        guard let claimed = decoded.receipt.bundleId, let app = configuration.app(bundleId: claimed) else {
            throw VerificationError(.receiptWrongBundle, "the receipt is not for a configured app")
        }
        let receipt = try verifier.verifyReceipt(decoded, app: app, now: now)
        let response = receipt.verifyReceiptResponse
        let facts = app.facts(fromReceipt: response)
        do {
            for fact in facts { try fact.checkDates() }
        } catch {
            throw Self.rejection(error)
        }
        return ReceiptContent(
            app: app, facts: facts, transactionIds: receipt.transactionIds,
            environment: Environment(response.environment?.appStoreEnvironment))
    }

    /// Fetches the customer's whole signed history from Apple and applies each transaction as a
    /// posted one; returns the environment Apple answered from (nil when the history was empty).
    func applyHistory(
        _ client: AppStoreServerAPIClient, transactionId: String, app: App, claim: Claim, now: Int64
    ) async throws -> Environment? {
        let history: [Signed<JWSTransactionDecodedPayload>]
        do {
            history = try await client.transactionHistoryAllPages(transactionId)
        } catch {
            throw Rejection(.retryableVerificationFailure, "Apple's transaction history is unavailable: \(error)")
        }
        var environment: Environment?
        for signed in history {
            let fact: TransactionFact
            do { fact = try app.transaction(signed.payload) } catch { throw Self.rejection(error) }
            environment = fact.environment
            let message = ReceivedMessage(
                notificationUUID: nil, source: .client, body: Self.storedBody("signedTransaction", signed.jws, codec: codec), receivedAt: now,
                bundleId: app.bundleId)
            _ = try await ingestRecordingUnknown(message, facts: [(.transaction(fact), signed.jws, signed.unknownMembers)], claim: claim)
        }
        return environment
    }

    /// A receipt as the ledger keeps it: its digest, not its bytes (receipts are large and
    /// repeat the customer's whole purchase list at every post).
    func storedReceiptBody(_ text: String) -> [UInt8] {
        Self.storedBody("receiptSHA256", Hex.encode(Digests.hash(Array(text.utf8))), codec: codec)
    }
}
