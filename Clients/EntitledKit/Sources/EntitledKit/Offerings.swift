import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Free JSON: an offering's `metadata` (the paywall's copy and layout, as the server stores it).
public enum JSONValue: Sendable, Codable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object (nil otherwise).
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, when this is one.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}

/// The offering the server chose for the customer now (`GET /v1/customers/{appUserId}/offerings`):
/// what the paywall sells, in order, with its copy and each package's offer eligibility.
public struct Offering: Sendable, Codable, Hashable {
    public struct Products: Sendable, Codable, Hashable {
        public var appStore: String?
        public var playStore: String?
    }

    /// The offers of the package's App Store product the customer may be given now.
    public struct Eligibility: Sendable, Codable, Hashable {
        /// The product's subscription group was never subscribed to (whether the product has an
        /// introductory offer is App Store Connect's: see ``StoreProduct/introductoryOffer``).
        public var introductoryOffer: Bool
        /// Configured win-back offers whose window the customer is in now.
        public var winBackOfferIds: [String]
    }

    public struct Package: Sendable, Codable, Hashable {
        /// `$monthly`, `$annual`, `$lifetime`, … or the app's own.
        public var id: String
        public var products: Products
        public var eligibility: Eligibility
    }

    /// The experiment variant the customer sees, when an experiment chose the offering.
    public struct Experiment: Sendable, Codable, Hashable {
        public var id: String
        public var variant: Int
    }

    public var appUserId: String
    /// The version of the offerings and rules the choice was made from.
    public var version: Int64
    public var offeringId: String
    /// The version of the offering's last change.
    public var offeringVersion: Int64
    /// The targeting rule that chose it; nil: the current offering (or an experiment).
    public var ruleId: String?
    public var experiment: Experiment?
    public var description: String?
    public var metadata: JSONValue
    /// In the order the paywall shows them.
    public var packages: [Package]
    /// The customer's states as targeting saw them (`new`, `active`, `inactive`, `trialUsed`, `billingRetry`).
    public var states: [String]
}

/// What the app tells the server when it asks for the customer's offering: each one wins over the
/// customer attribute of the same meaning (`$storefront`, `$appVersion`, `$locale`).
public struct OfferingContext: Sendable, Hashable {
    /// `ios`, `macos`, `tvos`, `watchos`, `visionos`, …
    public var platform: String?
    /// `CFBundleShortVersionString`.
    public var appVersion: String?
    /// A locale identifier (`fr_FR`).
    public var locale: String?
    /// ISO 3166-1 alpha-3 (StoreKit's `Storefront.countryCode`).
    public var storefront: String?

    public init(platform: String? = nil, appVersion: String? = nil, locale: String? = nil, storefront: String? = nil) {
        self.platform = platform
        self.appVersion = appVersion
        self.locale = locale
        self.storefront = storefront
    }

    var queryItems: [URLQueryItem] {
        [("platform", platform), ("appVersion", appVersion), ("locale", locale), ("storefront", storefront)]
            .compactMap { name, value in value.map { URLQueryItem(name: name, value: $0) } }
    }
}

extension EntitledClient {
    /// The offering the customer should see now. Ask when the paywall is about to be shown, not
    /// ahead of time: the server records the customer's exposure to an experiment on this read.
    /// Never cached (the server may change the paywall at any time).
    public func offering(_ context: OfferingContext = OfferingContext(), appUserId: String? = nil) async throws -> Offering {
        let id = try resolve(appUserId)
        var components = URLComponents(url: customerURL(id, "/offerings", query: false), resolvingAgainstBaseURL: false)!
        let items = context.queryItems
        if !items.isEmpty { components.queryItems = items }
        let (data, _) = try await send(URLRequest(url: components.url!))
        do { return try JSONDecoder().decode(Offering.self, from: data) } catch {
            throw EntitledError.invalidResponse("offering: \(error)")
        }
    }
}

/// A store product as a paywall shows it: StoreKit's `Product` in the app (``StoreKitGateway``),
/// portable so that the paywall's logic can be tested anywhere.
public struct StoreProduct: Sendable, Hashable {
    /// A subscription period: `value` × `unit`.
    public struct Period: Sendable, Hashable {
        public enum Unit: String, Sendable, Hashable { case day, week, month, year }
        public var value: Int
        public var unit: Unit

        public init(value: Int, unit: Unit) {
            self.value = value
            self.unit = unit
        }
    }

    /// A subscription's introductory offer as App Store Connect defines it.
    public struct IntroductoryOffer: Sendable, Hashable {
        /// `freeTrial`, `payAsYouGo` or `payUpFront`.
        public var paymentMode: String
        public var price: Decimal
        public var displayPrice: String
        public var period: Period
        public var periodCount: Int

        public init(paymentMode: String, price: Decimal, displayPrice: String, period: Period, periodCount: Int) {
            self.paymentMode = paymentMode
            self.price = price
            self.displayPrice = displayPrice
            self.period = period
            self.periodCount = periodCount
        }
    }

    public var id: String
    public var displayName: String
    public var description: String
    public var price: Decimal
    /// The price formatted for the customer's storefront (StoreKit's `displayPrice`).
    public var displayPrice: String
    /// Nil for a product that is not a subscription.
    public var subscriptionPeriod: Period?
    public var introductoryOffer: IntroductoryOffer?

    public init(
        id: String, displayName: String, description: String = "", price: Decimal, displayPrice: String,
        subscriptionPeriod: Period? = nil, introductoryOffer: IntroductoryOffer? = nil
    ) {
        self.id = id
        self.displayName = displayName
        self.description = description
        self.price = price
        self.displayPrice = displayPrice
        self.subscriptionPeriod = subscriptionPeriod
        self.introductoryOffer = introductoryOffer
    }
}

/// An offering with its packages' App Store products resolved by the store, ready to draw.
public struct ResolvedOffering: Sendable, Hashable {
    /// One package with its product.
    public struct Package: Sendable, Hashable {
        public var package: Offering.Package
        public var product: StoreProduct

        public var id: String { package.id }

        /// The introductory offer to show: the product has one and the customer may take it.
        public var introductoryOffer: StoreProduct.IntroductoryOffer? {
            package.eligibility.introductoryOffer ? product.introductoryOffer : nil
        }

        /// The offers the customer may take on this package, for ``Purchases/purchase(package:offer:)``.
        public var offers: [PurchaseOffer] {
            (introductoryOffer == nil ? [] : [.introductory]) + package.eligibility.winBackOfferIds.map { .winBack($0) }
        }
    }

    public var offering: Offering
    /// The packages the store sells, in the paywall's order.
    public var packages: [Package]
    /// The packages left out: no App Store product, or one the store does not know (a product
    /// not yet approved, another storefront).
    public var unavailable: [String]

    /// `offering`'s packages matched with `products` by App Store product id.
    public init(offering: Offering, products: [StoreProduct]) {
        let byId = Dictionary(products.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var packages: [Package] = []
        var unavailable: [String] = []
        for package in offering.packages {
            if let id = package.products.appStore, let product = byId[id] {
                packages.append(Package(package: package, product: product))
            } else {
                unavailable.append(package.id)
            }
        }
        self.offering = offering
        self.packages = packages
        self.unavailable = unavailable
    }
}

extension Purchases {
    /// The customer's offering with its products from the store (price, period, introductory
    /// offer). Call it when the paywall is shown: that read records the customer's exposure to an
    /// experiment (``EntitledClient/offering(_:appUserId:)``). `context.storefront` defaults to
    /// the store's.
    public func offerings(_ context: OfferingContext = OfferingContext()) async throws -> ResolvedOffering {
        var context = context
        if context.storefront == nil { context.storefront = await store.storefront() }
        let offering = try await client.offering(context)
        let ids = offering.packages.compactMap(\.products.appStore)
        let products = ids.isEmpty ? [] : try await store.products(for: ids)
        return ResolvedOffering(offering: offering, products: products)
    }

    /// Buys `package`'s product (``purchase(productID:offer:)``), with `offer` (one of the
    /// package's ``ResolvedOffering/Package/offers``) when given.
    public func purchase(package: ResolvedOffering.Package, offer: PurchaseOffer? = nil) async throws -> PurchaseOutcome {
        try await purchase(productID: package.product.id, offer: offer)
    }
}
