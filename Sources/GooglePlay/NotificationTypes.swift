/// `SubscriptionNotification.notificationType`.
public struct SubscriptionNotificationType: IntegerToken {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let recovered = Self(rawValue: 1)
    public static let renewed = Self(rawValue: 2)
    public static let canceled = Self(rawValue: 3)
    public static let purchased = Self(rawValue: 4)
    public static let onHold = Self(rawValue: 5)
    public static let inGracePeriod = Self(rawValue: 6)
    public static let restarted = Self(rawValue: 7)
    /// Deprecated by Google (replaced by ``priceChangeUpdated``), still decoded.
    public static let priceChangeConfirmed = Self(rawValue: 8)
    public static let deferred = Self(rawValue: 9)
    public static let paused = Self(rawValue: 10)
    public static let pauseScheduleChanged = Self(rawValue: 11)
    public static let revoked = Self(rawValue: 12)
    public static let expired = Self(rawValue: 13)
    public static let itemsChanged = Self(rawValue: 17)
    public static let cancellationScheduled = Self(rawValue: 18)
    public static let priceChangeUpdated = Self(rawValue: 19)
    public static let pendingPurchaseCanceled = Self(rawValue: 20)
    public static let priceStepUpConsentUpdated = Self(rawValue: 22)

    static let names: [Int: String] = [
        1: "SUBSCRIPTION_RECOVERED", 2: "SUBSCRIPTION_RENEWED", 3: "SUBSCRIPTION_CANCELED", 4: "SUBSCRIPTION_PURCHASED",
        5: "SUBSCRIPTION_ON_HOLD", 6: "SUBSCRIPTION_IN_GRACE_PERIOD", 7: "SUBSCRIPTION_RESTARTED",
        8: "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED", 9: "SUBSCRIPTION_DEFERRED", 10: "SUBSCRIPTION_PAUSED",
        11: "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED", 12: "SUBSCRIPTION_REVOKED", 13: "SUBSCRIPTION_EXPIRED",
        17: "SUBSCRIPTION_ITEMS_CHANGED", 18: "SUBSCRIPTION_CANCELLATION_SCHEDULED", 19: "SUBSCRIPTION_PRICE_CHANGE_UPDATED",
        20: "SUBSCRIPTION_PENDING_PURCHASE_CANCELED", 22: "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED",
    ]
    public var name: String? { Self.names[rawValue] }
}

/// `OneTimeProductNotification.notificationType`.
public struct OneTimeProductNotificationType: IntegerToken {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let purchased = Self(rawValue: 1)
    public static let canceled = Self(rawValue: 2)

    public var name: String? {
        switch rawValue {
        case 1: "ONE_TIME_PRODUCT_PURCHASED"
        case 2: "ONE_TIME_PRODUCT_CANCELED"
        default: nil
        }
    }
}

/// `VoidedPurchaseNotification.productType`.
public struct VoidedProductType: IntegerToken {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let subscription = Self(rawValue: 1)
    public static let oneTime = Self(rawValue: 2)

    public var name: String? {
        switch rawValue {
        case 1: "PRODUCT_TYPE_SUBSCRIPTION"
        case 2: "PRODUCT_TYPE_ONE_TIME"
        default: nil
        }
    }
}

/// `refundType` of a voided purchase (notification and `voidedpurchases.list`).
public struct RefundType: IntegerToken {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let fullRefund = Self(rawValue: 1)
    public static let quantityBasedPartialRefund = Self(rawValue: 2)

    public var name: String? {
        switch rawValue {
        case 1: "REFUND_TYPE_FULL_REFUND"
        case 2: "REFUND_TYPE_QUANTITY_BASED_PARTIAL_REFUND"
        default: nil
        }
    }
}
