import Foundation

/// Which screen a customer belongs on: never subscribed (`new`), entitled now (`active`), or
/// subscribed before and not now (`inactive`). The server's `state` member.
public enum CustomerKind: String, Sendable, Codable, Hashable {
    case new, active, inactive
}

/// The server's answer to `GET /v1/customers/{appUserId}` (and to a posted transaction): what the
/// customer is entitled to, as of ``serverTime``. Members the client does not model are ignored,
/// so a newer server's additions do not break an older app.
public struct CustomerAnswer: Sendable, Codable, Hashable {
    /// One entitlement's grant (the server's `Grant`).
    public struct Grant: Sendable, Codable, Hashable {
        /// Whether it grants access now (at the answer's ``CustomerAnswer/serverTime``).
        public var active: Bool
        /// `active`, `gracePeriod`, `billingRetry`, `expired`, `revoked` or `refunded`.
        public var status: String
        public var productId: String
        /// `autoRenewable`, `nonConsumable`, `consumable` or `nonRenewing`.
        public var productType: String
        public var transactionId: String
        public var originalTransactionId: String
        public var purchaseDate: Date
        public var expiresAt: Date?
        public var gracePeriodExpiresAt: Date?
        public var willRenew: Bool?
        public var renewsTo: String?
        public var subscriptionGroup: String?
        /// The App Store environment the grant comes from (`Production`, `Sandbox`, …).
        public var environment: String?
        /// Entitlements only: `purchase`, or `grant` for an operator's promotional grant (then
        /// ``grantId`` names it and `productId` is empty); nil from an older server.
        public var source: String?
        /// Entitlements only: the promotional grant that gives it.
        public var grantId: String?
        /// The store the purchase was made in: `appStore`, or `playStore` for a Google Play
        /// purchase; nil from an older server and for a promotional grant.
        public var store: String?

        /// The last instant at which this grant gives access: its grace end, else its expiry
        /// (nil: it does not lapse with time, e.g. a non-consumable).
        public var accessEndsAt: Date? { gracePeriodExpiresAt ?? expiresAt }
    }

    /// A subscription group's current subscription (the server's `Subscription`).
    public struct Subscription: Sendable, Codable, Hashable {
        public var subscriptionGroup: String
        /// The environment of its current subscription (a server merging environments may list a
        /// group once per environment).
        public var environment: String?
        public var state: CustomerKind
        public var current: Grant?
        /// `upgrade`, `downgrade` or `crossgrade` waiting for the next renewal.
        public var pendingChange: String?
        /// The win-back offers Apple's renewal info says the customer may redeem in this group.
        public var winBackOfferIds: [String]?
    }

    /// A non-consumable, a (stacked) non-renewing subscription or a consumable's balance (the
    /// server's `NonSubscription`).
    public struct NonSubscription: Sendable, Codable, Hashable {
        /// `nonConsumable`, `nonRenewing` or `consumable`.
        public var kind: String
        /// The productId, or the group of stacked non-renewing purchases.
        public var id: String
        public var active: Bool
        public var expiresAt: Date?
        /// A consumable's balance: ``purchased`` − ``refunded`` − ``spent``.
        public var balance: Int?
        /// A consumable's units bought, refunded and spent (servers before answer format 4 send none).
        public var purchased: Int?
        public var refunded: Int?
        public var spent: Int?
        public var transactionIds: [String]
    }

    /// Whether the app was pre-ordered (the server's `preorder`).
    public struct Preorder: Sendable, Codable, Hashable {
        public var isPreordered: Bool
        public var preorderDate: Date?
        public var appOriginalPurchaseDate: Date?
    }

    /// An offer of a product (the server's `OfferReference`).
    public struct Offer: Sendable, Codable, Hashable {
        public var productId: String
        public var offerId: String

        public init(productId: String, offerId: String) {
            self.productId = productId
            self.offerId = offerId
        }
    }

    /// The configured offers the customer is eligible for now (the server's `offers`).
    public struct Offers: Sendable, Codable, Hashable {
        /// Products whose introductory offer the customer may still take (never subscribed in their group).
        public var introductory: [String]
        /// Win-back offers whose lapse window the customer is in.
        public var winBack: [Offer]
        /// Promotional offers for the groups the customer subscribed to; ask the server to sign one.
        public var promotional: [Offer]

        public init(introductory: [String], winBack: [Offer], promotional: [Offer]) {
            self.introductory = introductory
            self.winBack = winBack
            self.promotional = promotional
        }
    }

    public var appUserId: String
    /// The customer's other ids (aliases the server merged with ``appUserId``); nil from an older server.
    public var aliases: [String]?
    /// The UUID to pass to StoreKit as `appAccountToken` for this customer's purchases.
    public var appAccountToken: UUID
    /// The answer's environment: the one asked for, else (a server merging environments) its primary one.
    public var environment: String?
    public var state: CustomerKind
    /// The server's clock when it answered: the client's trusted time is anchored on it.
    public var serverTime: Date
    /// By entitlement id; an entitlement the customer never had is absent.
    public var entitlements: [String: Grant]
    public var subscriptions: [Subscription]
    public var nonSubscriptions: [NonSubscription]?
    public var offers: Offers
    public var preorder: Preorder?
    /// The storefront (ISO 3166-1 alpha-3) and Apple's storefront id of the customer's latest
    /// transaction, when the server knows it.
    public var storefront: String?
    public var storefrontId: String?
    /// The next instant at which time alone changes this answer (an expiry or grace end).
    public var nextChangeAt: Date?

    /// Whether the answer grants `entitlement` at its own ``serverTime``.
    public func grants(_ entitlement: String) -> Bool { entitlements[entitlement]?.active == true }

    /// The last instant this answer may be relied on without asking the server again:
    /// ``nextChangeAt`` and every active grant's end, whichever comes first (nil: never lapses).
    public var validUntil: Date? {
        let ends =
            entitlements.values.filter(\.active).compactMap(\.accessEndsAt)
            + (nonSubscriptions ?? []).filter(\.active).compactMap(\.expiresAt) + [nextChangeAt].compactMap { $0 }
        return ends.min()
    }

    /// Decodes the server's JSON (ISO 8601 UTC dates with or without milliseconds).
    public static func decode(_ data: Data) throws -> CustomerAnswer {
        try JSONDecoder.entitled.decode(CustomerAnswer.self, from: data)
    }
}

extension JSONDecoder {
    /// The server's dates: `2026-11-29T12:00:00.000Z`.
    static var entitled: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
                return date
            }
            if let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(text)")
        }
        return decoder
    }
}
