import AppStore
import EntitledCrypto
import struct Entitlements.V1NotificationType
import Foundation

/// Which notification format the simulated app is configured for in App Store Connect.
public enum NotificationVersion: String, Sendable, Codable, Hashable {
    /// App Store Server Notifications V2 (signed JWS).
    case v2
    /// The deprecated V1 format (unsigned JSON with the shared secret as `password`).
    case v1
}

/// Builds the V1 notification(s) Apple would send instead of a V2 one, for apps configured for V1.
///
/// V1 notifies auto-renewable subscriptions only. Mapping: `SUBSCRIBED`/`INITIAL_BUY` → `INITIAL_BUY`;
/// `RESUBSCRIBE` → `INTERACTIVE_RENEWAL`; `DID_RENEW` → `DID_RENEW` (`BILLING_RECOVERY` → `DID_RECOVER`);
/// `DID_CHANGE_RENEWAL_STATUS`, `DID_FAIL_TO_RENEW`, `CONSUMPTION_REQUEST`, `REVOKE` → the same name;
/// `DID_CHANGE_RENEWAL_PREF` → the same, except `UPGRADE` → `CANCEL` (old product) then
/// `INTERACTIVE_RENEWAL` (new); a subscription `REFUND` → `CANCEL`, a one-time `REFUND` → `REFUND`;
/// `PRICE_INCREASE`/`PENDING` → `PRICE_INCREASE_CONSENT`. Everything else (`EXPIRED`,
/// `GRACE_PERIOD_EXPIRED`, `TEST`, `ONE_TIME_CHARGE`, extensions, offers) has no V1 counterpart.
public struct V1NotificationBuilder: Sendable {
    /// The app's shared secret (V1 `password`).
    public var sharedSecret: String
    /// The app's bundle identifier.
    public var bundleId: String
    /// The `bvrs` written in bodies.
    public var bundleVersion: String
    /// `Sandbox` or `Production`.
    public var environment: AppStoreEnvironment

    /// Builds V1 bodies with `sharedSecret` as `password` for the app `bundleId` in `environment`.
    public init(sharedSecret: String, bundleId: String, bundleVersion: String = "1.0", environment: AppStoreEnvironment) {
        self.sharedSecret = sharedSecret
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.environment = environment
    }

    /// The V1 bodies for `pending`, given the store's state after the event.
    public func bodies(for pending: PendingNotification, store: SimulatedStore) -> [ResponseBodyV1] {
        let isSubscription = pending.transaction?.type == .autoRenewableSubscription
        let types: [V1NotificationType]
        switch (pending.type, pending.subtype) {
        case (.subscribed, .initialBuy?): types = [.initialBuy]
        case (.subscribed, .resubscribe?): types = [.interactiveRenewal]
        case (.didRenew, .billingRecovery?): types = [.didRecover]
        case (.didRenew, _): types = [.didRenew]
        case (.didChangeRenewalStatus, _): types = [.didChangeRenewalStatus]
        case (.didChangeRenewalPref, .upgrade?): types = [.cancel, .interactiveRenewal]
        case (.didChangeRenewalPref, _): types = [.didChangeRenewalPref]
        case (.didFailToRenew, _): types = [.didFailToRenew]
        case (.refund, _): types = [isSubscription ? .cancel : .refund]
        case (.consumptionRequest, _): types = [.consumptionRequest]
        case (.revoke, _): types = [.revoke]
        case (.priceIncrease, .pending?): types = [.priceIncreaseConsent]
        default: types = []
        }
        guard !types.isEmpty, let transaction = pending.transaction else { return [] }
        let renewal = pending.renewalInfo
        return types.map { type in
            var body = ResponseBodyV1(
                notificationType: type, password: sharedSecret,
                environment: environment == .production ? .prod : .sandbox, bid: bundleId, bvrs: bundleVersion)
            if let renewal {
                body.autoRenewStatus = renewal.autoRenewStatus == .on ? "true" : "false"
                body.autoRenewProductId = renewal.autoRenewProductId
                if type == .didChangeRenewalStatus { body.autoRenewStatusChangeDateMs = String(pending.date) }
                body.expirationIntent = renewal.expirationIntent.map { LegacyText(String($0.rawValue)) }
            }
            body.unifiedReceipt = receipt(for: transaction, renewal: renewal, store: store, customerId: pending.customerId)
            return body
        }
    }

    private func receipt(
        for transaction: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?, store: SimulatedStore,
        customerId: String?
    ) -> UnifiedReceipt {
        // The newest 100 transactions of the same original transaction, newest first.
        let related = store.transactionOrder.reversed().compactMap { store.transactions[$0] }
            .filter { $0.originalTransactionId == transaction.originalTransactionId }.prefix(100)
        let info = related.map(Self.legacyInfo)
        let pendingRenewal = renewal.map { [Self.legacyPending($0)] } ?? []
        let latestReceipt = SimulatedReceipt(environment: environment, customerId: customerId ?? "").encoded
        return UnifiedReceipt(
            environment: environment == .production ? .production : .sandbox, status: 0, latestReceipt: latestReceipt,
            latestReceiptInfo: Array(info), pendingRenewalInfo: pendingRenewal)
    }
}

extension V1NotificationBuilder {
    /// A transaction in the legacy receipt form (strings of epoch milliseconds, flags as text).
    public static func legacyInfo(_ tx: JWSTransactionDecodedPayload) -> LatestReceiptInfo {
        LatestReceiptInfo(
            quantity: String(tx.quantity ?? 1), productId: tx.productId, transactionId: tx.transactionId,
            originalTransactionId: tx.originalTransactionId, webOrderLineItemId: tx.webOrderLineItemId,
            subscriptionGroupIdentifier: tx.subscriptionGroupIdentifier, purchaseDateMs: tx.purchaseDate.map(String.init),
            originalPurchaseDateMs: tx.originalPurchaseDate.map(String.init), expiresDateMs: tx.expiresDate.map(String.init),
            cancellationDateMs: tx.revocationDate.map(String.init),
            cancellationReason: tx.revocationReason.map { String($0.rawValue) },
            isTrialPeriod: tx.offerDiscountType == .freeTrial ? "true" : "false",
            isInIntroOfferPeriod: tx.offerType == .introductoryOffer && tx.offerDiscountType != .freeTrial ? "true" : "false",
            isUpgraded: tx.isUpgraded == true ? "true" : nil, inAppOwnershipType: tx.inAppOwnershipType,
            promotionalOfferId: tx.offerType == .promotionalOffer ? tx.offerIdentifier : nil,
            offerCodeRefName: tx.offerType == .offerCode ? tx.offerIdentifier : nil, appAccountToken: tx.appAccountToken)
    }

    /// Renewal info in the legacy `pending_renewal_info` form.
    public static func legacyPending(_ renewal: JWSRenewalInfoDecodedPayload) -> PendingRenewalInfo {
        PendingRenewalInfo(
            originalTransactionId: renewal.originalTransactionId, productId: renewal.productId,
            autoRenewProductId: renewal.autoRenewProductId, autoRenewStatus: renewal.autoRenewStatus == .on ? "1" : "0",
            expirationIntent: renewal.expirationIntent.map { String($0.rawValue) },
            isInBillingRetryPeriod: renewal.isInBillingRetryPeriod == true ? "1" : "0",
            gracePeriodExpiresDateMs: renewal.gracePeriodExpiresDate.map(String.init),
            priceConsentStatus: renewal.priceIncreaseStatus.map { String($0.rawValue) },
            priceIncreaseStatus: renewal.priceIncreaseStatus.map { String($0.rawValue) })
    }
}

/// The simulator's stand-in for an app receipt: base64 of `entitled-simulated-receipt:<Environment>:<customer>`.
/// Real receipts are PKCS#7 containers the simulator does not build; this one names whose purchases it holds.
public struct SimulatedReceipt: Sendable, Hashable {
    /// `Sandbox` or `Production`.
    public var environment: AppStoreEnvironment
    /// The customer whose purchases the receipt holds.
    public var customerId: String
    static let prefix = "entitled-simulated-receipt:"

    /// The receipt of `customerId` in `environment`.
    public init(environment: AppStoreEnvironment, customerId: String) {
        self.environment = environment
        self.customerId = customerId
    }

    /// Reads `receipt-data`; nil when it is not a simulated receipt.
    public init?(encoded: String) {
        guard let bytes = Base64.decode(encoded), let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix(Self.prefix)
        else { return nil }
        let parts = text.dropFirst(Self.prefix.count).split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        environment = AppStoreEnvironment(rawValue: parts[0])
        customerId = parts[1]
    }

    /// The base64 text, as `latest_receipt` and `receipt-data` carry it.
    public var encoded: String { Base64.encode(Array("\(Self.prefix)\(environment.rawValue):\(customerId)".utf8)) }
}
