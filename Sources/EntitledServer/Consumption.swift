import AppStore
import AppStoreServerAPI
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// Apple's `CONSUMPTION_REQUEST` (a customer asked for a refund of a consumable or subscription):
/// each one becomes a durable job; with `apps[].consumption.autoRespond` the server answers Apple
/// from what the ledger knows, else the app's backend answers through
/// `POST /v1/transactions/{transactionId}/consumption`.
extension Ingest {
    /// Creates the answer job of a `CONSUMPTION_REQUEST` (once per notification) before the
    /// notification is stored, so a crash in between loses nothing.
    func enqueueConsumptionRequest(
        app: App, _ payload: ResponseBodyV2DecodedPayload, transactionId: String?, now: Int64
    ) async throws(IngestError) {
        guard payload.notificationType == .consumptionRequest, serverAPI[app.bundleId] != nil,
            let uuid = payload.notificationUUID, let transactionId, !transactionId.isEmpty
        else { return }
        try await enqueue(
            kind: ConsumptionResponder.jobKind, key: app.bundleId + " " + uuid, app: app, subject: transactionId, now: now,
            unlessFactsOf: nil)
    }
}

extension SupportRoutes {
    /// The body of `PUT /v1/customers/{appUserId}/consent`.
    struct ConsentBody: Codable {
        var consented: Bool
    }

    /// `PUT /v1/customers/{appUserId}/consent` (write): whether the customer consented to sharing
    /// consumption data with Apple.
    func putConsent(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .write, appUserId: appUserId)
        let body = try RequestInput.decode(ConsentBody.self, request)
        do {
            try await consents.recordConsent(appUserId: appUserId, consented: body.consented, now: clock.nowMilliseconds())
        } catch {
            throw Problems.unavailable
        }
        return try .json(body)
    }
}

/// Answers a `CONSUMPTION_REQUEST` with what the ledger knows of the customer: delivery (the
/// ledger holds the transaction and it is not refunded), refunds and purchases in USD as Apple's
/// lifetime bands, how long the customer has been one, and `customerConsented` — sent only when
/// the app recorded the customer's consent (Apple refuses an answer without it).
struct ConsumptionResponder: Sendable {
    /// The job kind that answers a `CONSUMPTION_REQUEST`.
    static let jobKind = "consumption"

    let configuration: Configuration
    let serverAPI: [String: AppStoreServerAPIClient]
    let ledger: FactLedger
    let clock: any EpochClock

    /// Consent as the backend recorded it.
    var consents: any ConsentStore { ledger.store }

    func run(_ job: DurableJob) async throws(JobFailure) {
        guard let app = configuration.app(bundleId: job.bundleId), app.consumptionAutoRespond else { return }
        guard let client = serverAPI[job.bundleId] else { throw JobFailure(retryable: false, "app \(job.bundleId) has no serverAPI") }
        let transaction: JWSTransactionDecodedPayload
        do {
            transaction = try await client.transactionInfo(job.subject).payload
        } catch {
            throw JobFailure(retryable: error.isRetryable, "\(error.code): \(error.description)")
        }
        guard let request = try await answer(transaction) else { return }
        do {
            try await client.sendConsumptionInformationV1(transactionId: job.subject, request)
        } catch {
            throw JobFailure(retryable: error.isRetryable, "\(error.code): \(error.description)")
        }
    }

    /// The answer, or nil when the customer is unknown or has not consented (nothing is sent).
    func answer(_ transaction: JWSTransactionDecodedPayload) async throws(JobFailure) -> ConsumptionRequest? {
        do {
            guard let otid = transaction.originalTransactionId,
                let owned = try await ledger.store.subscription(originalTransactionId: otid),
                let customer = try await ledger.store.customer(appUserId: owned.appUserId),
                try await consents.consent(appUserId: customer.appUserId) == true
            else { return nil }
            let facts = try await ledger.store.facts(appUserId: customer.appUserId, projector: ledger.projector).compactMap { stored -> TransactionFact? in
                if case .transaction(let fact) = stored.fact { fact } else { nil }
            }
            let now = clock.nowMilliseconds()
            let delivered = facts.contains { $0.transactionId == transaction.transactionId && $0.revocationDate == nil }
            var request = ConsumptionRequest()
            request.customerConsented = true
            request.consumptionStatus = .undeclared
            request.platform = .apple
            request.sampleContentProvided = facts.contains { $0.offerType == OfferType.introductory }
            request.deliveryStatus = delivered ? .deliveredAndWorkingProperly : .didNotDeliverDueToServerOutage
            request.appAccountToken = customer.appAccountToken
            request.accountTenure = Self.tenure(days: (now - customer.createdAt) / 86_400_000)
            request.playTime = .undeclared
            request.lifetimeDollarsPurchased = LifetimeDollarsPurchased(rawValue: Self.band(usd: facts, refunded: false))
            request.lifetimeDollarsRefunded = LifetimeDollarsRefunded(rawValue: Self.band(usd: facts, refunded: true))
            request.userStatus = .undeclared
            return request
        } catch {
            throw JobFailure(retryable: true, "storage: \(error)")
        }
    }

    /// Apple's `accountTenure` band (1: 0–3 days … 7: over 365).
    static func tenure(days: Int64) -> AccountTenure {
        let bounds: [Int64] = [3, 10, 30, 90, 180, 365]
        return AccountTenure(rawValue: Int32((bounds.firstIndex { days < $0 } ?? bounds.count) + 1))
    }

    /// Apple's lifetime-dollars band (1: 0 USD, 2: 0.01–49.99, 3: 50–99.99, 4: 100–499.99,
    /// 5: 500–999.99, 6: 1000–1999.99, 7: 2000 or more) of the USD prices (milliunits) of the
    /// purchases, or of the refunded ones; 0 (undeclared) when some are in another currency.
    static func band(usd facts: [TransactionFact], refunded: Bool) -> Int32 {
        let counted = facts.filter { !refunded || $0.revocationDate != nil }
        guard counted.allSatisfy({ $0.currency == nil || $0.currency == "USD" }) else { return 0 }
        let cents = counted.reduce(Int64(0)) { $0 + ($1.price ?? 0) } / 10
        guard cents > 0 else { return 1 }
        let bounds: [Int64] = [5_000, 10_000, 50_000, 100_000, 200_000]
        return Int32((bounds.firstIndex { cents < $0 } ?? bounds.count) + 2)
    }
}
