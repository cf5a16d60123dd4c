import AppStore
import Foundation
import HTTPServer

/// How the fake Server API misbehaves on request (tests of a client's retries).
struct ServerAPIThrottle: Sendable {
    /// Requests still to be answered 429.
    var remaining = 0
    /// The `Retry-After` seconds sent with them; nil sends none.
    var retryAfterSeconds: Int?
}

extension FakeServerAPI {
    /// Apple's 429 body.
    static func rateLimited(retryAfterSeconds: Int?) throws -> Response {
        var response = try Response.json(
            APIErrorResponse(errorCode: .rateLimitExceeded, errorMessage: "Rate limit exceeded."), status: 429)
        if let retryAfterSeconds { response.headers.set("Retry-After", String(retryAfterSeconds)) }
        return response
    }

    /// Get App Transaction Info, Send Consumption Information v2 and Finish Transaction.
    static func registerAppTransactionAndConsumptionV2(
        _ simulator: Simulator,
        _ route: (HTTPMethod, String, @escaping @Sendable (Request) async throws -> Response) -> Void
    ) {
        route(.get, "/inApps/v1/transactions/appTransactions/{transactionId}") { request in
            guard let signed = try await simulator.signedAppTransaction(ofTransaction: try request.parameter("transactionId")) else {
                throw Failure(status: 404, code: .appTransactionDoesNotExist, message: "No app transaction for this customer.")
            }
            return try .json(AppTransactionInfoResponse(signedAppTransactionInfo: signed))
        }
        route(.put, "/inApps/v2/transactions/consumption/{transactionId}") { request in
            let id = try request.parameter("transactionId")
            guard await simulator.store.transactions[id] != nil else {
                throw Failure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found.")
            }
            guard let body = try? JSONDecoder().decode(ConsumptionRequestV2.self, from: Data(request.body)),
                body.customerConsented == true, body.deliveryStatus != nil, body.sampleContentProvided != nil
            else {
                throw Failure(
                    status: 400, code: .generalBadRequest,
                    message: "customerConsented (true), deliveryStatus and sampleContentProvided are required.")
            }
            if let percentage = body.consumptionPercentage, !(0...100_000).contains(percentage) {
                throw Failure(status: 400, code: .generalBadRequest, message: "consumptionPercentage is 0 to 100000.")
            }
            await simulator.recordConsumptionInformation(id, body: request.body)
            return Response(status: 202)
        }
        route(.post, "/inApps/v1/transactions/{transactionId}/finish") { request in
            let id = try request.parameter("transactionId")
            guard await simulator.store.transactions[id] != nil else {
                throw Failure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found.")
            }
            await simulator.recordFinished(id)
            return Response(status: 200)
        }
    }
}

extension Simulator {
    /// Makes the fake Server API answer the next `requests` calls with 429 (Apple's `RateLimitExceededError`),
    /// with `Retry-After: retryAfterSeconds` when given.
    public func throttleServerAPI(requests: Int, retryAfterSeconds: Int? = nil) {
        serverAPIThrottle = ServerAPIThrottle(remaining: max(0, requests), retryAfterSeconds: retryAfterSeconds)
    }

    /// Counts a Server API call; returns the 429's `Retry-After` (0 for none) when this one is throttled.
    func takeServerAPIThrottle() -> Int?? {
        serverAPIRequests += 1
        guard serverAPIThrottle.remaining > 0 else { return nil }
        serverAPIThrottle.remaining -= 1
        return .some(serverAPIThrottle.retryAfterSeconds)
    }

    /// The customer's app transaction (one per customer: the app's first download), signed now; nil when
    /// transaction `id` is unknown.
    public func signedAppTransaction(ofTransaction id: String) throws -> String? {
        guard let customer = owner(ofTransaction: id) else { return nil }
        let first = store.transactionOrder.first { owner(ofTransaction: $0) == customer }
        let purchased = first.flatMap { store.transactions[$0]?.originalPurchaseDate } ?? now
        let appTransaction = AppTransaction(
            receiptType: store.environment, appAppleId: store.environment == .production ? store.catalog.appAppleId : nil,
            bundleId: bundleId, applicationVersion: "1", receiptCreationDate: now, originalPurchaseDate: purchased,
            originalApplicationVersion: "1", appTransactionId: "70" + (first ?? id),
            originalPlatform: .iOS)
        return try signer.signer.sign(appTransaction)
    }
}
