import Entitlements

// The customer answer's members (`GET /v1/customers/{appUserId}`), declared once: their names are
// the coding keys the Foundation encoders in APIModels.swift write, their types are below. Tests
// hold the fast writer (`AnswerJSON`), EntitledKit's `CustomerAnswer` and docs/openapi.yaml's
// `Customer` schema to this list.

/// The JSON type of a member of the customer answer.
public indirect enum AnswerType: Hashable, Sendable {
    case string, integer, number, boolean
    /// An instant as an ISO 8601 UTC string with milliseconds.
    case timestamp
    case array(AnswerType)
    /// An object of one of the answer's shapes.
    case object(AnswerShape)
    /// An object whose members, under any names, all have one shape (`entitlements`).
    case map(AnswerShape)
    /// The type, or `null`.
    case nullable(AnswerType)
}

/// The objects a customer answer is made of.
public enum AnswerShape: String, CaseIterable, Hashable, Sendable {
    case customer, entitlement, grant, subscription, nonSubscription, offers, offer, preorder

    /// The shape's members: JSON name and type, each written by every encoder of the answer.
    public var members: [(name: String, type: AnswerType)] {
        switch self {
        case .customer: CustomerBody.Key.allCases.map { ($0.stringValue, $0.type) }
        case .entitlement: EntitlementBody.Key.allCases.map { ($0.stringValue, $0.type) }
        case .grant: EntitlementBody.Key.allCases.filter { !$0.isEntitlementOnly }.map { ($0.stringValue, $0.type) }
        case .subscription: SubscriptionBody.Key.allCases.map { ($0.stringValue, $0.type) }
        case .nonSubscription: NonSubscriptionBody.Key.allCases.map { ($0.stringValue, $0.type) }
        case .offers: OffersKey.allCases.map { ($0.rawValue, $0.type) }
        case .offer: OfferKey.allCases.map { ($0.rawValue, $0.type) }
        case .preorder: CustomerBody.PreorderKey.allCases.map { ($0.stringValue, $0.type) }
        }
    }
}

extension CustomerBody.Key {
    var type: AnswerType {
        switch self {
        // Null only in the answer an event of an unlinked subscription carries.
        case .appUserId, .appAccountToken: .nullable(.string)
        case .aliases: .array(.string)
        case .environment, .state: .string
        case .serverTime: .timestamp
        case .entitlements: .map(.entitlement)
        case .subscriptions: .array(.object(.subscription))
        case .nonSubscriptions: .array(.object(.nonSubscription))
        case .offers: .object(.offers)
        case .preorder: .object(.preorder)
        case .storefront, .storefrontId: .nullable(.string)
        case .nextChangeAt: .nullable(.timestamp)
        }
    }
}

extension EntitlementBody.Key {
    /// `source` and `grantId` say where an entitlement's access comes from; a grant has neither.
    var isEntitlementOnly: Bool { self == .source || self == .grantId }

    var type: AnswerType {
        switch self {
        case .active: .boolean
        case .status, .productId, .productType, .transactionId, .originalTransactionId, .ownership, .periodType: .string
        case .environment, .source: .string
        case .purchaseDate: .timestamp
        case .originalPurchaseDate, .expiresAt, .gracePeriodExpiresAt, .billingIssueDetectedAt, .unsubscribeDetectedAt:
            .nullable(.timestamp)
        case .willRenew: .nullable(.boolean)
        // `store`: null only for an entitlement a promotional grant gives.
        case .renewsTo, .priceIncrease, .subscriptionGroup, .grantId, .store: .nullable(.string)
        }
    }
}

extension SubscriptionBody.Key {
    var type: AnswerType {
        switch self {
        case .subscriptionGroup, .state: .string
        // Answers list only groups with a current subscription.
        case .current: .object(.grant)
        case .pendingChange, .environment: .nullable(.string)
        case .paidServiceDays: .integer
        case .proceedsRate: .number
        case .winBackOfferIds: .array(.string)
        }
    }
}

extension NonSubscriptionBody.Key {
    var type: AnswerType {
        switch self {
        case .kind, .id: .string
        case .active: .boolean
        case .expiresAt: .nullable(.timestamp)
        case .balance, .purchased, .refunded, .spent: .nullable(.integer)
        case .transactionIds: .array(.string)
        case .grant: .nullable(.object(.grant))
        }
    }
}

extension CustomerBody.PreorderKey {
    var type: AnswerType {
        switch self {
        case .isPreordered: .boolean
        case .preorderDate, .appOriginalPurchaseDate: .nullable(.timestamp)
        }
    }
}

/// `offers`: the engine's `EligibleOffers`, encoded as it declares itself.
enum OffersKey: String, CaseIterable {
    case introductory, winBack, promotional

    var type: AnswerType { self == .introductory ? .array(.string) : .array(.object(.offer)) }
}

/// An offer of `offers`: the engine's `OfferReference`.
enum OfferKey: String, CaseIterable {
    case productId, offerId

    var type: AnswerType { .string }
}
