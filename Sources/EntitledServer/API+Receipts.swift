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
        let environment: Environment
        do throws(IngestError) {
            environment = try await ingest.receipt(text, bundleId: posted.bundleId, appUserId: appUserId, now: now)
        } catch {
            throw await answer(error, .clientSignature, source: .client, request: request, now: now, body: ingest.storedReceiptBody(text))
        }
        let context = EvaluationContext(policy: customerPolicy, environment: environment, now: now)
        var response = Response.json(bytes: try await customerAnswer(appUserId: appUserId, context: context).body)
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}
