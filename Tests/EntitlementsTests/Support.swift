import Entitlements
import Testing

// Fact builders shared by the tests. Every lifecycle starts at T0 and uses calendar months.

let day = Time.day
let hour = Time.hour
let T0 = Time.millis(year: 2026, month: 1, day: 15, hour: 9)
let oneMonth = ISODuration(months: 1)

/// `k` calendar months after `start`.
func months(_ k: Int, after start: Int64 = T0) -> Int64 { ISODuration(months: k).added(to: start) }

/// The policy every test uses.
let policy = Policy(
    products: [
        "monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium", level: 2),
        "yearly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium", level: 2),
        "monthly.plus": ProductPolicy(
            type: .autoRenewable, entitlements: ["pro", "plus"], subscriptionGroup: "premium", level: 1),
        "basic.monthly": ProductPolicy(
            type: .autoRenewable, entitlements: ["basic"], subscriptionGroup: "premium", level: 3),
        "magazine": ProductPolicy(type: .autoRenewable, entitlements: ["magazine"], subscriptionGroup: "reading"),
        "lifetime": ProductPolicy(type: .nonConsumable, entitlements: ["pro"]),
        "pass.month": ProductPolicy(
            type: .nonRenewing, entitlements: ["pass"], subscriptionGroup: "pass", duration: ISODuration(parsing: "P1M")),
        "pass.year": ProductPolicy(
            type: .nonRenewing, entitlements: ["pass"], subscriptionGroup: "pass", duration: ISODuration(parsing: "P1Y")),
        "coins": ProductPolicy(type: .consumable),
    ],
    fallbackGraceDays: 16)

/// A transaction version.
func tx(
    _ id: String, otid: String = "o1", product: String = "monthly", purchase: Int64, expires: Int64? = nil,
    signed: Int64? = nil, type: ProductType = .autoRenewable, ownership: Ownership = .purchased,
    revoked: Int64? = nil, revocationType: RevocationType? = nil, upgraded: Bool = false,
    offer: OfferType? = nil, discount: OfferDiscountType? = nil, quantity: Int = 1, price: Int64? = 9_990,
    environment: Environment = .production
) -> Fact {
    .transaction(
        TransactionFact(
            transactionId: id, originalTransactionId: otid, webOrderLineItemId: type == .autoRenewable ? "w-\(id)" : nil,
            productId: product, subscriptionGroupId: type == .autoRenewable ? "20000001" : nil, purchaseDate: purchase,
            originalPurchaseDate: nil, expiresDate: expires, quantity: quantity, productType: type,
            ownership: ownership, signedDate: signed ?? purchase, revocationDate: revoked,
            revocationReason: revoked == nil || upgraded ? nil : 0, revocationType: revocationType,
            isUpgraded: upgraded, offerType: offer, offerDiscountType: discount, environment: environment,
            transactionReason: .purchase, price: price, currency: "USD"))
}

/// A renewal-info version.
func renewal(
    otid: String = "o1", product: String = "monthly", next: String? = nil, autoRenew: Bool = true,
    retry: Bool? = false, grace: Int64? = nil, intent: Int? = nil, priceIncrease: Int? = nil,
    offer: OfferType? = nil, winBack: [String] = [], signed: Int64, environment: Environment = .production
) -> Fact {
    .renewalInfo(
        RenewalInfoFact(
            originalTransactionId: otid, productId: product, autoRenewProductId: next ?? product,
            autoRenewStatus: autoRenew, expirationIntent: intent, isInBillingRetryPeriod: retry,
            gracePeriodExpiresDate: grace, priceIncreaseStatus: priceIncrease, offerType: offer,
            signedDate: signed, eligibleWinBackOfferIds: winBack, environment: environment))
}

/// A V2 notification's metadata.
func note(
    _ type: NotificationType, _ subtype: NotificationSubtype? = nil, at date: Int64, otid: String? = "o1",
    txn: String? = nil, environment: Environment = .production
) -> Fact {
    .notification(
        NotificationFact(
            type: type, subtype: subtype, notificationUUID: "\(type.rawValue)-\(subtype?.rawValue ?? "")-\(date)-\(txn ?? "")",
            signedDate: date, environment: environment, originalTransactionId: otid, transactionId: txn))
}

/// A V1 receipt entry.
func entry(
    _ id: String, otid: String = "o1", product: String = "monthly", purchase: Int64, expires: Int64? = nil,
    receipt: Int64? = nil, cancelled: Int64? = nil, upgraded: Bool = false, trial: Bool = false,
    ownership: Ownership = .purchased
) -> Fact {
    .receiptEntry(
        ReceiptEntryFact(
            transactionId: id, originalTransactionId: otid, productId: product, subscriptionGroupId: "20000001",
            purchaseDate: purchase, expiresDate: expires, cancellationDate: cancelled,
            cancellationReason: cancelled == nil ? nil : 0, isTrialPeriod: trial, isUpgraded: upgraded,
            ownership: ownership, receiptDate: receipt ?? purchase))
}

/// A V1 pending renewal entry.
func pending(
    otid: String = "o1", product: String = "monthly", next: String? = nil, autoRenew: Bool = true,
    retry: Bool? = false, grace: Int64? = nil, intent: Int? = nil, priceConsent: Int? = nil, receipt: Int64
) -> Fact {
    .pendingRenewal(
        PendingRenewalFact(
            originalTransactionId: otid, productId: product, autoRenewProductId: next ?? product,
            autoRenewStatus: autoRenew, expirationIntent: intent, isInBillingRetryPeriod: retry,
            gracePeriodExpiresDate: grace, priceConsentStatus: priceConsent, receiptDate: receipt))
}

/// A V1 notification's metadata.
func v1note(
    _ type: V1NotificationType, at date: Int64, otid: String? = "o1", txn: String? = nil, autoRenew: Bool? = nil
) -> Fact {
    .v1Notification(
        V1NotificationFact(
            type: type, date: date, originalTransactionId: otid, transactionId: txn, autoRenewStatus: autoRenew))
}

func state(_ facts: [Fact], at now: Int64, environment: Environment = .production) -> CustomerState {
    evaluate(facts: facts, policy: policy, now: now, environment: environment)
}

/// A seeded SplitMix64 generator, so that any failing shuffle can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Expectations a table row or lifecycle step checks on a state.
enum Check: Sendable {
    case status(String, EntitlementStatus?)  // nil: the entitlement is absent
    case active(String, Bool)
    case product(String, String)
    case transaction(String, String)
    case ownership(String, Ownership)
    case willRenew(String, Bool?)
    case renewsTo(String, String?)
    case period(String, PeriodType)
    case priceIncrease(String, PriceIncrease?)
    case expires(String, Int64?)
    case grace(String, Int64?)
    case billingIssue(String, Int64?)
    case unsubscribed(String, Int64?)
    case customer(CustomerClass)
    case groupClass(String, CustomerClass)
    case pendingChange(String, ProductChange?)
    case introEligible(String, Bool)
    case promoEligible(String, Bool)
    case winBack(String, [String])
    case owned(String, Bool)
    case balance(String, Int)
    case passExpires(String, Int64?)
    case passStatus(String, EntitlementStatus)
    case paidDays(String, Int)
    case groupStatus(String, EntitlementStatus?)
    case consumableCredited(String, Int)
    case rate(String, Double)  // a transaction's estimated proceeds rate
}

func verify(_ checks: [Check], _ s: CustomerState, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for check in checks {
        switch check {
        case .status(let id, let expected):
            #expect(s.entitlement(id)?.status == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .active(let id, let expected):
            #expect((s.entitlement(id)?.active ?? false) == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .product(let id, let expected):
            #expect(s.entitlement(id)?.productId == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .transaction(let id, let expected):
            #expect(s.entitlement(id)?.transactionId == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .ownership(let id, let expected):
            #expect(s.entitlement(id)?.ownership == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .willRenew(let id, let expected):
            #expect(s.entitlement(id)?.willRenew == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .renewsTo(let id, let expected):
            #expect(s.entitlement(id)?.renewsTo == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .period(let id, let expected):
            #expect(s.entitlement(id)?.periodType == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .priceIncrease(let id, let expected):
            #expect(s.entitlement(id)?.priceIncrease == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .expires(let id, let expected):
            #expect(s.entitlement(id)?.expiresAt == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .grace(let id, let expected):
            #expect(s.entitlement(id)?.gracePeriodExpiresAt == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .billingIssue(let id, let expected):
            #expect(s.entitlement(id)?.billingIssueDetectedAt == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .unsubscribed(let id, let expected):
            #expect(s.entitlement(id)?.unsubscribeDetectedAt == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .customer(let expected):
            #expect(s.customerClass == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .groupClass(let id, let expected):
            #expect(s.group(id)?.customerClass == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .pendingChange(let id, let expected):
            #expect(s.group(id)?.pendingChange == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .introEligible(let id, let expected):
            #expect(s.group(id)?.introOfferEligible == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .promoEligible(let id, let expected):
            #expect(s.group(id)?.promotionalOfferEligible == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .winBack(let id, let expected):
            #expect(s.group(id)?.winBackOfferIds == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .owned(let id, let expected):
            #expect((s.nonConsumable(id)?.owned ?? false) == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .balance(let id, let expected):
            #expect((s.consumable(id)?.balance ?? 0) == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .passExpires(let id, let expected):
            #expect(
                s.nonRenewingSubscriptions.first { $0.id == id }?.expiresAt == expected, "\(label): \(check)",
                sourceLocation: sourceLocation)
        case .passStatus(let id, let expected):
            #expect(
                s.nonRenewingSubscriptions.first { $0.id == id }?.grant.status == expected, "\(label): \(check)",
                sourceLocation: sourceLocation)
        case .paidDays(let id, let expected):
            #expect(s.group(id)?.paidServiceDays == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .groupStatus(let id, let expected):
            #expect(s.group(id)?.current?.status == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .consumableCredited(let id, let expected):
            #expect((s.consumable(id)?.credited ?? 0) == expected, "\(label): \(check)", sourceLocation: sourceLocation)
        case .rate(let id, let expected):
            #expect(
                s.proceeds.first { $0.transactionId == id }?.rate == expected, "\(label): \(check)",
                sourceLocation: sourceLocation)
        }
    }
}
