extension Fact {
    /// What makes an unsigned fact the same fact when it comes again, or nil for a signed one.
    ///
    /// Promotional grants are the operator's, unsigned: their identity is their fields too.
    ///
    /// Signed facts (transactions, renewal infos, V2 notifications, app transactions) are the same
    /// fact when their signed content is; Apple signed that. V1 notifications and receipt data have
    /// no signed form, and keying them on their JSON made any change to the encoder or to a fact's
    /// fields turn a replayed delivery into new facts. Their identity is this text instead: the kind
    /// and the fields, listed here one by one in a fixed order, that say which fact it is and what
    /// it states (ids, dates, flags, environment). A field added to a fact type later does not
    /// change it; an old delivery replayed after an upgrade is recognised.
    ///
    /// The text is `kind` then `|`-separated parts: strings length-prefixed (`5:hello`), numbers in
    /// decimal, booleans `1`/`0`, absent values `-`. The `v1` after the kind versions the format.
    public var identity: String? {
        switch self {
        case .transaction, .renewalInfo, .notification, .appTransaction:
            return nil
        case .receiptEntry(let f):
            return Self.identity(
                "receiptEntry",
                [
                    .text(f.environment.rawValue), .text(f.transactionId), .text(f.originalTransactionId),
                    .text(f.webOrderLineItemId), .text(f.productId), .text(f.subscriptionGroupId),
                    .number(f.purchaseDate), .number(f.originalPurchaseDate), .number(f.expiresDate),
                    .number(f.cancellationDate), .number(f.cancellationReason.map(Int64.init)),
                    .flag(f.isTrialPeriod), .flag(f.isInIntroOfferPeriod), .flag(f.isUpgraded),
                    .text(f.ownership.rawValue), .text(f.promotionalOfferId), .text(f.offerCodeRefName),
                    .number(Int64(f.quantity)), .text(f.appAccountToken), .number(f.receiptDate),
                ])
        case .pendingRenewal(let f):
            return Self.identity(
                "pendingRenewal",
                [
                    .text(f.environment.rawValue), .text(f.originalTransactionId), .text(f.productId),
                    .text(f.autoRenewProductId), .flag(f.autoRenewStatus), .number(f.expirationIntent.map(Int64.init)),
                    .flag(f.isInBillingRetryPeriod), .number(f.gracePeriodExpiresDate),
                    .number(f.priceConsentStatus.map(Int64.init)), .number(f.priceIncreaseStatus.map(Int64.init)),
                    .text(f.promotionalOfferId), .text(f.offerCodeRefName), .number(f.receiptDate),
                ])
        case .v1Notification(let f):
            return Self.identity(
                "v1Notification",
                [
                    .text(f.environment.rawValue), .text(f.type.rawValue), .number(f.date),
                    .text(f.originalTransactionId), .text(f.transactionId), .text(f.productId), .flag(f.autoRenewStatus),
                ])
        case .promotionalGrant(let f):
            return Self.identity(
                "promotionalGrant",
                [
                    .text(f.grantId), .text(f.entitlement), .number(f.grantedAt), .number(f.expiresDate), .text(f.reason),
                    .text(f.grantedBy), .text(f.appAccountToken),
                ])
        case .promotionalGrantEnd(let f):
            return Self.identity(
                "promotionalGrantEnd", [.text(f.grantId), .number(f.endedAt), .text(f.endedBy), .text(f.appAccountToken)])
        case .consumableSpend(let f):
            // The customer and the app's key alone: the same key sent again (with any content) is
            // the same spend, so storage finds it and compares instead of spending twice.
            return Self.identity("consumableSpend", [.text(f.appAccountToken.lowercased()), .text(f.idempotencyKey)])
        case .playSubscription(let f):
            // Google signs nothing the server keeps: a snapshot is what the Developer API answered
            // at `observedAt`, and the same answer at another time is another fact (the state may
            // have gone and come back in between).
            return Self.identity(
                "playSubscription",
                [
                    .text(f.environment.rawValue), .text(f.purchaseToken), .text(f.linkedPurchaseToken), .text(f.packageName),
                    .text(f.productId), .text(f.basePlanId), .text(f.offerId), .text(f.state.rawValue),
                    .number(f.startTime), .number(f.expiryTime), .flag(f.autoRenewEnabled), .text(f.renewsTo),
                    .number(f.autoResumeTime), .text(f.latestOrderId), .flag(f.acknowledged),
                    .text(f.obfuscatedExternalAccountId), .text(f.regionCode), .number(f.observedAt),
                ])
        case .playProduct(let f):
            // `refundableQuantity` only when Google gave it: identities stored without it stay the same.
            return Self.identity(
                "playProduct",
                [
                    .text(f.environment.rawValue), .text(f.purchaseToken), .text(f.packageName), .text(f.productId),
                    .text(f.orderId), .number(Int64(f.purchaseState)), .number(Int64(f.quantity)), .number(f.purchaseTime),
                    .flag(f.consumed), .flag(f.acknowledged), .text(f.obfuscatedExternalAccountId), .text(f.regionCode),
                    .number(f.observedAt),
                ] + (f.refundableQuantity.map { [.number(Int64($0))] } ?? []))
        case .playVoided(let f):
            // One voiding of one order, however often Google reports it (a partial refund's units
            // only when it names them, so that facts stored before they were read keep their identity).
            return Self.identity(
                "playVoided",
                [.text(f.environment.rawValue), .text(f.purchaseToken), .text(f.orderId), .number(f.voidedTime)]
                    + (f.voidedQuantity.map { [.number(Int64($0))] } ?? []))
        case .playOrder(let f):
            // One price of one order, however often the Orders API is asked (a run whose success
            // was lost asks again): the same answer later is the same fact.
            return Self.identity(
                "playOrder",
                [.text(f.environment.rawValue), .text(f.purchaseToken), .text(f.orderId), .number(f.price), .text(f.currency)])
        }
    }

    private enum IdentityPart {
        case text(String?)
        case number(Int64?)
        case flag(Bool?)

        var rendered: String {
            switch self {
            case .text(let value): value.map { "\($0.utf8.count):\($0)" } ?? "-"
            case .number(let value): value.map(String.init) ?? "-"
            case .flag(let value): value.map { $0 ? "1" : "0" } ?? "-"
            }
        }
    }

    private static func identity(_ kind: String, _ parts: [IdentityPart]) -> String {
        ([kind, "v1"] + parts.map(\.rendered)).joined(separator: "|")
    }
}
