import AppStore
import struct Entitlements.OfferDiscountType
import Foundation

/// What kind of in-app purchase a product is.
public enum ProductKind: String, Sendable, Codable, Hashable {
    case autoRenewable, nonConsumable, consumable, nonRenewing

    /// The `type` the App Store writes in a transaction.
    public var productType: ProductType {
        switch self {
        case .autoRenewable: .autoRenewableSubscription
        case .nonConsumable: .nonConsumable
        case .consumable: .consumable
        case .nonRenewing: .nonRenewingSubscription
        }
    }
}

/// A subscription offer: introductory, promotional, offer code or win-back.
public struct SubscriptionOffer: Sendable, Codable, Hashable {
    /// The offer identifier (promotional, offer-code and win-back offers; nil for introductory offers).
    public var id: String?
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO` or `PAY_UP_FRONT`.
    public var discountType: OfferDiscountType
    /// The length of one offer period, e.g. `P1W` for a one-week trial.
    public var period: ISODuration
    /// How many offer periods (pay-as-you-go bills each one; pay-up-front and free trials run them as one).
    public var periods: Int
    /// The price per billed offer period, in milli-units of the product's currency.
    public var price: Int64

    /// An offer with these terms.
    public init(id: String? = nil, discountType: OfferDiscountType, period: ISODuration, periods: Int = 1, price: Int64 = 0) {
        self.id = id
        self.discountType = discountType
        self.period = period
        self.periods = max(1, periods)
        self.price = price
    }
}

/// One product of the catalog.
public struct SimulatedProduct: Sendable, Codable, Hashable {
    /// The product identifier.
    public var id: String
    /// What kind of product this is.
    public var kind: ProductKind
    /// The subscription group identifier (auto-renewables only).
    public var group: String?
    /// Service level within the group: 1 is the highest (Xcode's `groupNumber`).
    public var level: Int?
    /// The renewal period of an auto-renewable (`P1M`, `P1Y` …) or the length of a non-renewing subscription.
    public var period: ISODuration?
    /// Price in milli-units of `currency` (9990 = 9.99).
    public var price: Int64
    /// ISO 4217 currency code.
    public var currency: String
    /// Whether Family Sharing can share it.
    public var familyShareable: Bool
    /// The introductory offer, if any.
    public var introductoryOffer: SubscriptionOffer?
    /// Promotional offers (for previous subscribers).
    public var promotionalOffers: [SubscriptionOffer]
    /// Offer-code offers.
    public var offerCodes: [SubscriptionOffer]
    /// Win-back offers (for expired subscribers).
    public var winBackOffers: [SubscriptionOffer]
    /// False once removed from sale: subscriptions to it expire at renewal (`EXPIRED`/`PRODUCT_NOT_FOR_SALE`).
    public var availableForSale: Bool = true

    /// A product with these properties.
    public init(
        id: String, kind: ProductKind, group: String? = nil, level: Int? = nil, period: ISODuration? = nil,
        price: Int64, currency: String = "USD", familyShareable: Bool = false,
        introductoryOffer: SubscriptionOffer? = nil, promotionalOffers: [SubscriptionOffer] = [],
        offerCodes: [SubscriptionOffer] = [], winBackOffers: [SubscriptionOffer] = []
    ) {
        self.id = id
        self.kind = kind
        self.group = group
        self.level = level
        self.period = period
        self.price = price
        self.currency = currency
        self.familyShareable = familyShareable
        self.introductoryOffer = introductoryOffer
        self.promotionalOffers = promotionalOffers
        self.offerCodes = offerCodes
        self.winBackOffers = winBackOffers
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, group, level, period, price, currency, familyShareable, introductoryOffer, promotionalOffers
        case offerCodes, winBackOffers, availableForSale
    }

    /// Decodes the simulator's catalog JSON; the offer lists and `familyShareable` are optional.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decode(String.self, forKey: .id), kind: try c.decode(ProductKind.self, forKey: .kind),
            group: try c.decodeIfPresent(String.self, forKey: .group), level: try c.decodeIfPresent(Int.self, forKey: .level),
            period: try c.decodeIfPresent(ISODuration.self, forKey: .period), price: try c.decode(Int64.self, forKey: .price),
            currency: try c.decodeIfPresent(String.self, forKey: .currency) ?? "USD",
            familyShareable: try c.decodeIfPresent(Bool.self, forKey: .familyShareable) ?? false,
            introductoryOffer: try c.decodeIfPresent(SubscriptionOffer.self, forKey: .introductoryOffer),
            promotionalOffers: try c.decodeIfPresent([SubscriptionOffer].self, forKey: .promotionalOffers) ?? [],
            offerCodes: try c.decodeIfPresent([SubscriptionOffer].self, forKey: .offerCodes) ?? [],
            winBackOffers: try c.decodeIfPresent([SubscriptionOffer].self, forKey: .winBackOffers) ?? [])
        availableForSale = try c.decodeIfPresent(Bool.self, forKey: .availableForSale) ?? true
    }
}

/// The app and its products.
///
/// JSON form (the simulator's own):
/// `{"bundleId": "com.example.app", "appAppleId": 1234, "gracePeriodDays": 16, "products": [ … ]}`.
public struct Catalog: Sendable, Codable, Hashable {
    /// The app's bundle identifier.
    public var bundleId: String
    /// The app's Apple ID (sent in Production notifications only).
    public var appAppleId: Int64
    /// Billing grace period in days (Apple offers 3, 16 or 28); nil or 0 means no grace period.
    public var gracePeriodDays: Int?
    /// The products on sale (and off sale).
    public var products: [SimulatedProduct]

    /// A catalog with these products.
    public init(bundleId: String, appAppleId: Int64 = 1_234_567_890, gracePeriodDays: Int? = nil, products: [SimulatedProduct]) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.gracePeriodDays = gracePeriodDays
        self.products = products
    }

    /// The product called `id`.
    public func product(_ id: String) -> SimulatedProduct? { products.first { $0.id == id } }

    /// Decodes the simulator's own catalog JSON.
    public static func load(json: Data) throws -> Catalog {
        try JSONDecoder().decode(Catalog.self, from: json)
    }

    /// Reads an Xcode StoreKit configuration file (`.storekit`, JSON): `products` (consumables and
    /// non-consumables), `nonRenewingSubscriptions`, and `subscriptionGroups[].subscriptions[]` with
    /// `recurringSubscriptionPeriod`, `groupNumber`, `introductoryOffer`, `subscriptionOffers`
    /// (promotional), `codeOffers` and `winbackOffers`. Prices come from `displayPrice`.
    public static func load(storeKit json: Data, bundleId: String, appAppleId: Int64 = 1_234_567_890, currency: String = "USD")
        throws -> Catalog
    {
        let file = try JSONDecoder().decode(StoreKitFile.self, from: json)
        var products: [SimulatedProduct] = []
        for item in (file.products ?? []) + (file.nonRenewingSubscriptions ?? []) {
            let kind: ProductKind
            switch item.type {
            case "Consumable": kind = .consumable
            case "NonConsumable": kind = .nonConsumable
            case "NonRenewingSubscription": kind = .nonRenewing
            default: throw SimulatorError.invalidCatalog("unknown product type \(item.type ?? "none") for \(item.productID)")
            }
            products.append(
                SimulatedProduct(
                    id: item.productID, kind: kind, period: kind == .nonRenewing ? ISODuration("P1Y") : nil,
                    price: milliUnits(item.displayPrice), currency: currency, familyShareable: item.familyShareable ?? false))
        }
        for group in file.subscriptionGroups ?? [] {
            for sub in group.subscriptions ?? [] {
                guard let period = sub.recurringSubscriptionPeriod.flatMap(ISODuration.init) else {
                    throw SimulatorError.invalidCatalog("\(sub.productID) has no recurringSubscriptionPeriod")
                }
                func offer(_ o: StoreKitFile.Offer?) -> SubscriptionOffer? {
                    guard let o else { return nil }
                    let discount: OfferDiscountType
                    switch o.paymentMode {
                    case "free": discount = .freeTrial
                    case "payAsYouGo": discount = .payAsYouGo
                    default: discount = .payUpFront
                    }
                    return SubscriptionOffer(
                        id: o.offerID, discountType: discount, period: o.subscriptionPeriod.flatMap(ISODuration.init) ?? period,
                        periods: o.numberOfPeriods ?? 1, price: discount == .freeTrial ? 0 : milliUnits(o.displayPrice))
                }
                products.append(
                    SimulatedProduct(
                        id: sub.productID, kind: .autoRenewable, group: sub.subscriptionGroupID ?? group.id ?? group.name,
                        level: sub.groupNumber, period: period, price: milliUnits(sub.displayPrice), currency: currency,
                        familyShareable: sub.familyShareable ?? false, introductoryOffer: offer(sub.introductoryOffer),
                        promotionalOffers: (sub.subscriptionOffers ?? sub.adHocOffers ?? []).compactMap(offer),
                        offerCodes: (sub.codeOffers ?? []).compactMap(offer),
                        winBackOffers: (sub.winbackOffers ?? []).compactMap(offer)))
            }
        }
        return Catalog(bundleId: bundleId, appAppleId: appAppleId, products: products)
    }

    /// "9.99" → 9990.
    static func milliUnits(_ text: String?) -> Int64 {
        guard let text, let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return 0 }
        return NSDecimalNumber(decimal: value * 1000).int64Value
    }
}

/// The parts of Xcode's `.storekit` JSON the simulator reads.
struct StoreKitFile: Decodable {
    struct Offer: Decodable {
        var offerID: String?
        var paymentMode: String?
        var subscriptionPeriod: String?
        var numberOfPeriods: Int?
        var displayPrice: String?
    }
    struct Product: Decodable {
        var productID: String
        var type: String?
        var displayPrice: String?
        var familyShareable: Bool?
        var groupNumber: Int?
        var recurringSubscriptionPeriod: String?
        var subscriptionGroupID: String?
        var introductoryOffer: Offer?
        var subscriptionOffers: [Offer]?
        var adHocOffers: [Offer]?
        var codeOffers: [Offer]?
        var winbackOffers: [Offer]?
    }
    struct Group: Decodable {
        var id: String?
        var name: String?
        var subscriptions: [Product]?
    }
    var products: [Product]?
    var nonRenewingSubscriptions: [Product]?
    var subscriptionGroups: [Group]?
}

/// A simulator action that cannot be carried out, or bad input.
public struct SimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A short machine-readable code (`UNKNOWN_CUSTOMER`, `INVALID_ACTION` …).
    public var code: String
    /// A human-readable explanation.
    public var message: String
    /// The HTTP status the control API and the dev dashboard answer it with: 404 for a name the
    /// simulator does not know, else 400. Set where the error is made, never derived from ``code``.
    public var status: Int
    /// An error with a machine-readable `code` and a message, answered with `status`.
    public init(code: String, _ message: String, status: Int = 400) {
        self.code = code
        self.message = message
        self.status = status
    }
    public var description: String { "\(code): \(message)" }

    static func invalidCatalog(_ message: String) -> SimulatorError { SimulatorError(code: "INVALID_CATALOG", message) }
    static func invalid(_ message: String) -> SimulatorError { SimulatorError(code: "INVALID_ACTION", message) }
    static func unknown(_ what: String, _ id: String) -> SimulatorError {
        SimulatorError(code: "UNKNOWN_\(what.uppercased())", "no \(what) '\(id)'", status: 404)
    }
}

extension Catalog {
    /// A small catalog for demos and `entitled simulate` without `--catalog`: a "pro" group with monthly
    /// (one-week free trial, a promotional and a win-back offer) and yearly plans, a basic monthly plan,
    /// coins (consumable) and a lifetime unlock (non-consumable, family-shareable).
    public static var demo: Catalog {
        let month = ISODuration("P1M")!
        return Catalog(
            bundleId: "com.example.app", appAppleId: 1_234_567_890, gracePeriodDays: nil,
            products: [
                SimulatedProduct(
                    id: "pro.monthly", kind: .autoRenewable, group: "pro", level: 2, period: month, price: 9990,
                    familyShareable: true,
                    introductoryOffer: SubscriptionOffer(discountType: .freeTrial, period: ISODuration("P1W")!),
                    promotionalOffers: [SubscriptionOffer(id: "comeback", discountType: .payAsYouGo, period: month, periods: 3, price: 4990)],
                    winBackOffers: [SubscriptionOffer(id: "winback", discountType: .payAsYouGo, period: month, periods: 1, price: 1990)]),
                SimulatedProduct(
                    id: "pro.yearly", kind: .autoRenewable, group: "pro", level: 1, period: ISODuration("P1Y")!, price: 99990,
                    familyShareable: true),
                SimulatedProduct(id: "basic.monthly", kind: .autoRenewable, group: "pro", level: 3, period: month, price: 4990),
                SimulatedProduct(id: "coins", kind: .consumable, price: 990),
                SimulatedProduct(id: "lifetime", kind: .nonConsumable, price: 199_990, familyShareable: true),
            ])
    }
}
