/// The body of Send Consumption Information (v2):
/// `PUT /inApps/v2/transactions/consumption/{transactionId}`, the reply to `CONSUMPTION_REQUEST`.
///
/// Apple replaced the v1 body (``ConsumptionRequest``, numeric codes) with these five fields in 2025.
public struct ConsumptionRequestV2: Sendable, Hashable, Codable {
    /// Required: whether the customer consented to sharing consumption data. Apple rejects false.
    public var customerConsented: Bool?
    /// Required: whether the app delivered the purchase and it works.
    public var deliveryStatus: DeliveryStatusV2?
    /// Required: whether a free sample or trial of the content was provided.
    public var sampleContentProvided: Bool?
    /// How much was consumed, in thousandths of a percent (0 to 100000).
    public var consumptionPercentage: Int32?
    /// The developer's preferred outcome of the refund request.
    public var refundPreference: RefundPreferenceV2?

    /// Every field defaults to nil (absent).
    public init(
        customerConsented: Bool? = nil,
        deliveryStatus: DeliveryStatusV2? = nil,
        sampleContentProvided: Bool? = nil,
        consumptionPercentage: Int32? = nil,
        refundPreference: RefundPreferenceV2? = nil
    ) {
        self.customerConsented = customerConsented
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}

/// Whether an in-app purchase was delivered and works (Send Consumption Information v2).
public struct DeliveryStatusV2: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let delivered = DeliveryStatusV2(rawValue: "DELIVERED")
    public static let undeliveredQualityIssue = DeliveryStatusV2(rawValue: "UNDELIVERED_QUALITY_ISSUE")
    public static let undeliveredWrongItem = DeliveryStatusV2(rawValue: "UNDELIVERED_WRONG_ITEM")
    public static let undeliveredServerOutage = DeliveryStatusV2(rawValue: "UNDELIVERED_SERVER_OUTAGE")
    public static let undeliveredOther = DeliveryStatusV2(rawValue: "UNDELIVERED_OTHER")

    public static let known: [DeliveryStatusV2] = [
        .delivered, .undeliveredQualityIssue, .undeliveredWrongItem, .undeliveredServerOutage, .undeliveredOther,
    ]
}

/// The refund outcome the developer prefers (Send Consumption Information v2).
public struct RefundPreferenceV2: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let decline = RefundPreferenceV2(rawValue: "DECLINE")
    public static let grantFull = RefundPreferenceV2(rawValue: "GRANT_FULL")
    public static let grantProrated = RefundPreferenceV2(rawValue: "GRANT_PRORATED")

    public static let known: [RefundPreferenceV2] = [.decline, .grantFull, .grantProrated]
}
