import AppStore
import Foundation
import HTTPServer

/// A fake legacy `verifyReceipt` endpoint backed by a ``Simulator``, for ``SimulatedReceipt``s:
///
/// - `POST /verifyReceipt` answers as the simulator's own environment's endpoint;
/// - `POST /production/verifyReceipt` and `POST /sandbox/verifyReceipt` answer as Apple's production and
///   sandbox endpoints, so a client's 21007 fallback (sandbox receipt sent to production) can be tested.
///
/// Statuses: 0 valid; 21000 not a POST; 21002 malformed body or receipt; 21004 shared secret mismatch
/// (when a secret is configured); 21007 sandbox receipt at production; 21008 production receipt at
/// sandbox; 21010 unknown customer. A valid answer has `receipt` (`in_app`: every transaction, oldest
/// first), `latest_receipt`, `latest_receipt_info` (auto-renewables, newest first; with
/// `exclude-old-transactions` only the latest of each subscription) and `pending_renewal_info`.
/// Answers are always HTTP 200, as Apple's.
public enum FakeVerifyReceipt {
    /// Adds the three endpoints.
    public static func register(_ simulator: Simulator, sharedSecret: String?, on router: inout Router) {
        for (path, endpoint) in [
            ("/verifyReceipt", nil), ("/production/verifyReceipt", AppStoreEnvironment.production),
            ("/sandbox/verifyReceipt", AppStoreEnvironment.sandbox),
        ] {
            router.post(path) { request in
                let environment = endpoint ?? simulator.environment
                let response = await simulator.verifyReceipt(request.body, endpoint: environment, sharedSecret: sharedSecret)
                return try .json(response)
            }
            router.get(path) { _ in try .json(VerifyReceiptResponse(status: VerifyReceiptStatus.badRequestMethod.rawValue)) }
        }
    }
}

extension Simulator {
    /// The store's environment.
    public nonisolated var environment: AppStoreEnvironment { signer.environment }

    /// Answers a verifyReceipt body at the `endpoint` environment's URL.
    public func verifyReceipt(_ body: [UInt8], endpoint: AppStoreEnvironment, sharedSecret: String?) -> VerifyReceiptResponse {
        func status(_ value: VerifyReceiptStatus) -> VerifyReceiptResponse {
            VerifyReceiptResponse(status: value.rawValue, environment: endpoint == .production ? .production : .sandbox)
        }
        guard let request = try? JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(body)),
            let data = request.receiptData, let receipt = SimulatedReceipt(encoded: data)
        else { return status(.malformedReceiptData) }
        if receipt.environment == .sandbox && endpoint == .production { return status(.sandboxReceiptSentToProduction) }
        if receipt.environment == .production && endpoint == .sandbox { return status(.productionReceiptSentToSandbox) }
        guard receipt.environment == store.environment else { return status(.malformedReceiptData) }
        if let sharedSecret, let password = request.password, password != sharedSecret { return status(.sharedSecretMismatch) }
        guard store.customers[receipt.customerId] != nil else { return status(.accountNotFound) }

        let owned = store.transactionOrder.compactMap { store.transactions[$0] }.filter { tx in
            if let originalId = tx.originalTransactionId, let sub = store.subscriptions[originalId] {
                return sub.customerId == receipt.customerId
            }
            return store.oneTimeCustomer[tx.transactionId ?? ""] == receipt.customerId
        }
        var latest = owned.filter { $0.type == .autoRenewableSubscription }.reversed().map { $0 }
        if request.excludeOldTransactions == true {
            var seen: Set<String> = []
            latest = latest.filter { seen.insert($0.originalTransactionId ?? "").inserted }
        }
        let pending = store.subscriptions.values.filter { $0.customerId == receipt.customerId }
            .sorted { $0.originalTransactionId < $1.originalTransactionId }
            .compactMap { store.renewalInfo($0.originalTransactionId) }.map(V1NotificationBuilder.legacyPending)
        let legacyEnvironment: LegacyEnvironment = store.environment == .production ? .production : .sandbox
        var legacyReceipt = LegacyReceipt()
        legacyReceipt.receiptType = store.environment == .production ? "Production" : "ProductionSandbox"
        legacyReceipt.bundleId = bundleId
        legacyReceipt.applicationVersion = signer.bundleVersion
        legacyReceipt.originalApplicationVersion = signer.bundleVersion
        legacyReceipt.receiptCreationDateMs = String(now)
        legacyReceipt.requestDateMs = String(now)
        legacyReceipt.inApp = owned.map(V1NotificationBuilder.legacyInfo)
        var response = VerifyReceiptResponse(status: 0, environment: legacyEnvironment)
        response.receipt = legacyReceipt
        response.latestReceipt = receipt.encoded
        response.latestReceiptInfo = latest.prefix(100).map(V1NotificationBuilder.legacyInfo)
        response.pendingRenewalInfo = pending
        return response
    }

    /// The simulated receipt of `customerId` (what an app would send as `receipt-data`).
    public func receipt(for customerId: String) -> String {
        SimulatedReceipt(environment: store.environment, customerId: customerId).encoded
    }
}
