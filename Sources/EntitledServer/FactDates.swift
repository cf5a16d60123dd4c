import Entitlements

extension Fact {
    /// Dates a fact may carry (epoch ms): 2000-01-01T00:00:00Z up to, not including,
    /// 2200-01-01T00:00:00Z. Apple's payloads are far inside; anything outside is a forged or broken
    /// payload whose dates would only feed overflowing arithmetic downstream, so ingest refuses it
    /// (`INVALID_DATE`) before it becomes a fact. The one place this range is defined.
    public static let acceptedDates: Range<Int64> = 946_684_800_000..<7_258_118_400_000

    /// Every date this fact carries, named as on the wire, for ``checkDates()``.
    var wireDates: (model: String, dates: KeyValuePairs<String, Int64?>) {
        switch self {
        case .transaction(let f):
            ("JWSTransactionDecodedPayload", [
                "purchaseDate": f.purchaseDate, "originalPurchaseDate": f.originalPurchaseDate,
                "expiresDate": f.expiresDate, "signedDate": f.signedDate, "revocationDate": f.revocationDate,
            ])
        case .renewalInfo(let f):
            ("JWSRenewalInfoDecodedPayload", [
                "gracePeriodExpiresDate": f.gracePeriodExpiresDate, "signedDate": f.signedDate,
                "renewalDate": f.renewalDate, "recentSubscriptionStartDate": f.recentSubscriptionStartDate,
            ])
        case .notification(let f):
            ("ResponseBodyV2DecodedPayload", ["signedDate": f.signedDate])
        case .appTransaction(let f):
            ("AppTransaction", [
                "originalPurchaseDate": f.originalPurchaseDate, "preorderDate": f.preorderDate,
                "receiptCreationDate": f.signedDate,
            ])
        case .receiptEntry(let f):
            ("latest_receipt_info", [
                "purchase_date_ms": f.purchaseDate, "original_purchase_date_ms": f.originalPurchaseDate,
                "expires_date_ms": f.expiresDate, "cancellation_date_ms": f.cancellationDate,
                "receipt date": f.receiptDate,
            ])
        case .pendingRenewal(let f):
            ("pending_renewal_info", ["grace_period_expires_date_ms": f.gracePeriodExpiresDate, "receipt date": f.receiptDate])
        case .v1Notification(let f):
            ("ResponseBodyV1", ["date": f.date])
        case .promotionalGrant(let f):
            ("grant", ["grantedAt": f.grantedAt, "until": f.expiresDate])
        case .promotionalGrantEnd(let f):
            ("grant end", ["endedAt": f.endedAt])
        case .consumableSpend(let f):
            ("consumable spend", ["spentAt": f.spentAt])
        case .playSubscription(let f):
            ("SubscriptionPurchaseV2", ["startTime": f.startTime, "expiryTime": f.expiryTime, "autoResumeTime": f.autoResumeTime])
        case .playProduct(let f):
            ("ProductPurchase", ["purchaseTimeMillis": f.purchaseTime])
        case .playVoided(let f):
            ("VoidedPurchase", ["voidedTimeMillis": f.voidedTime])
        case .playOrder(let f):
            ("Order", ["purchaseTime": f.purchaseTime, "observedAt": f.observedAt])
        }
    }

    /// Throws ``MappingError/Reason/dateOutOfRange`` naming the first date of this fact outside
    /// ``acceptedDates``. Every mapping from wire models to facts ends here.
    func checkDates() throws(MappingError) {
        let (model, dates) = wireDates
        for (field, date) in dates {
            if let date, !Self.acceptedDates.contains(date) {
                throw MappingError(model: model, field: field, reason: .dateOutOfRange)
            }
        }
    }

    /// `fact` when all its dates are accepted (see ``checkDates()``).
    static func checked<F>(_ fact: F, _ wrap: (F) -> Fact) throws(MappingError) -> F {
        try wrap(fact).checkDates()
        return fact
    }
}
