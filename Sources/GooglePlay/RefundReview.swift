/// The body of `orders.reviewrefund`: the developer's answer to a pending refund review. Google
/// records the first answer to a review and ignores later ones (still answering OK).
public struct ReviewRefundRequest: Sendable, Hashable, Codable {
    /// The review's token, from ``PendingRefundReviewNotification/pendingRefundToken``.
    public var pendingRefundToken: String
    /// Whether a free sample, trial or description of the functionality was given before purchase.
    public var sampleContentProvided: Bool
    /// `APPROVE`, `DECLINE` or `NEUTRAL`.
    public var refundPreference: String
    /// How much of the purchase was consumed, 0 to 100 000 (thousandths of a percent).
    public var consumptionPercentageMilliunits: Int?
    /// What the customer did with the purchase, at most ``maximumUsageEvents``.
    public var consumptionUsageEvents: [ConsumptionUsageEvent]?

    public init(
        pendingRefundToken: String, sampleContentProvided: Bool, refundPreference: String, consumptionPercentageMilliunits: Int? = nil,
        consumptionUsageEvents: [ConsumptionUsageEvent]? = nil
    ) {
        self.pendingRefundToken = pendingRefundToken
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
        self.consumptionPercentageMilliunits = consumptionPercentageMilliunits
        self.consumptionUsageEvents = consumptionUsageEvents
    }

    /// The preferences Google accepts.
    public static let refundPreferences: Set<String> = ["APPROVE", "DECLINE", "NEUTRAL"]
    /// The range of ``consumptionPercentageMilliunits``.
    public static let consumptionRange = 0...100_000
    public static let maximumUsageEvents = 1000
    public static let maximumItemDescriptionCharacters = 5000
    /// The largest body accepted (1000 usage events of a few hundred bytes, and descriptions).
    public static let maximumBytes = 8 * 1024 * 1024

    /// The first rule the body breaks, as Google checks it; nil when it is acceptable.
    public var problem: String? {
        if pendingRefundToken.isEmpty { return "pendingRefundToken is required" }
        if !Self.refundPreferences.contains(refundPreference) { return "refundPreference must be APPROVE, DECLINE or NEUTRAL" }
        if let share = consumptionPercentageMilliunits, !Self.consumptionRange.contains(share) {
            return "consumptionPercentageMilliunits must be 0 to 100000"
        }
        if let events = consumptionUsageEvents {
            if events.count > Self.maximumUsageEvents { return "at most \(Self.maximumUsageEvents) consumptionUsageEvents" }
            if events.contains(where: { ($0.consumptionItemDescription?.count ?? 0) > Self.maximumItemDescriptionCharacters }) {
                return "consumptionItemDescription is longer than \(Self.maximumItemDescriptionCharacters) characters"
            }
        }
        return nil
    }
}

/// One use of the purchase the answer reports.
public struct ConsumptionUsageEvent: Sendable, Hashable, Codable {
    public var obfuscatedAccountId: String?
    public var obfuscatedProfileId: String?
    public var consumptionTime: GoogleTimestamp?
    public var consumptionItemDescription: String?
    public var ipAddress: String?
    public var location: String?

    public init(
        obfuscatedAccountId: String? = nil, obfuscatedProfileId: String? = nil, consumptionTime: GoogleTimestamp? = nil,
        consumptionItemDescription: String? = nil, ipAddress: String? = nil, location: String? = nil
    ) {
        self.obfuscatedAccountId = obfuscatedAccountId
        self.obfuscatedProfileId = obfuscatedProfileId
        self.consumptionTime = consumptionTime
        self.consumptionItemDescription = consumptionItemDescription
        self.ipAddress = ipAddress
        self.location = location
    }
}

extension DeveloperAPIClient {
    /// `orders.reviewrefund`: `POST …/applications/{packageName}/orders/{orderId}:reviewrefund`.
    /// A body Google would refuse is refused here first (``ReviewRefundRequest/problem``).
    public func reviewRefund(packageName: String, orderId: String, _ answer: ReviewRefundRequest) async throws(GooglePlayError) {
        if let problem = answer.problem { throw GooglePlayError(.invalidRequest, problem) }
        let path = "/androidpublisher/v3/applications/" + (try Self.segment(packageName, name: "packageName")) + "/orders/"
            + (try Self.segment(orderId, name: "orderId", maxBytes: PendingRefundReviewNotification.maximumOrderIdBytes)) + ":reviewrefund"
        _ = try await send("POST", path, body: PlayJSON.encode(answer))
    }
}
