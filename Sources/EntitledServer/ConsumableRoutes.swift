import AppStore
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// Spending consumables (`write` scope, or the customer's own token).
struct ConsumableRoutes: Sendable {
    /// Spend request bodies are small; larger ones get 413.
    static let maxSpendRequestBytes = 4096
    /// The most units one spend may take.
    static let maxSpendQuantity = 1_000_000
    /// The longest `idempotencyKey` (UTF-8 bytes).
    static let maxIdempotencyKeyBytes = 128

    let gate: AccessGate
    let ledger: FactLedger
    let configuration: Configuration
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.post("/v1/customers/{appUserId}/consumables/{productId}/spend", admit: { _ = try routes.gate.authenticate($0) }) {
            try await routes.spendConsumable($0)
        }
    }

    struct SpendRequestBody: Decodable {
        var quantity: Int
        var idempotencyKey: String
    }

    /// The answer of a spend, the same however often its key is sent.
    struct SpendBody: Encodable, Equatable {
        var appUserId: String
        var productId: String
        var quantity: Int
        var idempotencyKey: String
        var environment: String
        var spentAt: Int64
        /// The product's balance right after this spend.
        var balance: Int

        enum Key: String, CodingKey { case appUserId, productId, quantity, idempotencyKey, environment, spentAt, balance }

        func encode(to encoder: any Encoder) throws {
            var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
            try c.put(appUserId, .appUserId)
            try c.put(productId, .productId)
            try c.put(quantity, .quantity)
            try c.put(idempotencyKey, .idempotencyKey)
            try c.put(environment, .environment)
            try c.date(spentAt, .spentAt)
            try c.put(balance, .balance)
        }
    }

    /// `POST /v1/customers/{appUserId}/consumables/{productId}/spend` `{"quantity": n, "idempotencyKey": "…"}`.
    func spendConsumable(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .write, appUserId: appUserId)
        let productId = try request.parameter("productId")
        guard request.body.count <= Self.maxSpendRequestBytes else {
            throw HTTPError.payloadTooLarge(limit: Self.maxSpendRequestBytes)
        }
        let body = try RequestInput.decode(SpendRequestBody.self, request)
        try Self.checkSpend(productId: productId, body)
        if let product = configuration.apps.lazy.flatMap(\.products).first(where: { $0.productId == productId }),
            product.type != .consumable
        {
            throw HTTPError(.productNotFound, "productId is configured, but not as a consumable")
        }
        let now = clock.nowMilliseconds()
        let outcome = try await Problems.store { () async throws(StorageError) in
            try await ledger.spend(
                appUserId: appUserId, productId: productId, quantity: body.quantity, idempotencyKey: body.idempotencyKey,
                now: now)
        }
        switch outcome {
        case .spent(let spend), .replayed(let spend):
            return try .json(
                SpendBody(
                    appUserId: appUserId, productId: spend.productId, quantity: spend.quantity,
                    idempotencyKey: spend.idempotencyKey, environment: spend.environment.rawValue, spentAt: spend.spentAt,
                    balance: spend.balanceAfter))
        case .keyReused(let earlier):
            throw HTTPError(
                .idempotencyKeyReused,
                "this idempotencyKey already spent \(earlier.quantity) of \(earlier.productId); use a new key for another spend")
        case .insufficient(let balance):
            throw HTTPError(.insufficientBalance, "the balance (\(max(0, balance))) is below the quantity (\(body.quantity))")
        case .customerNotFound:
            throw HTTPError(.customerNotFound, "no such customer")
        }
    }

    /// 400 `INVALID_REQUEST` unless the quantity and key are within bounds.
    static func checkSpend(productId: String, _ body: SpendRequestBody) throws(HTTPError) {
        guard (1...maxSpendQuantity).contains(body.quantity) else {
            throw HTTPError(.invalidRequest, "quantity must be 1…\(maxSpendQuantity)")
        }
        let key = body.idempotencyKey
        guard !key.isEmpty, key.utf8.count <= maxIdempotencyKeyBytes,
            key.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        else {
            throw HTTPError(.invalidRequest, "idempotencyKey must be 1…\(maxIdempotencyKeyBytes) bytes without control characters")
        }
        guard productId.utf8.count <= OfferRoutes.maxOfferFieldBytes else {
            throw HTTPError(.invalidRequest, "productId is longer than \(OfferRoutes.maxOfferFieldBytes) bytes")
        }
    }
}

/// `GET /v1/customers/{appUserId}/products`: what the customer's storefront sells, and for each
/// product whether a purchase may continue — the server's answer to StoreKit's
/// `paymentQueue(_:shouldContinue:in:)`, which the app caches because the delegate must answer at once.
public struct CustomerProductsBody: Encodable, Sendable, Equatable {
    public struct ProductBody: Encodable, Sendable, Equatable {
        public var productId: String
        public var type: String
        public var subscriptionGroup: String?
        /// Whether a purchase of it may continue in ``CustomerProductsBody/storefront``.
        public var shouldContinueTransaction: Bool
        /// Why not: `alreadyOwned` (a non-consumable the customer owns) or `alreadySubscribed` (the
        /// customer's current subscription in the group is this product and active); null when it may.
        public var reason: String?

        enum Key: String, CodingKey { case productId, type, subscriptionGroup, shouldContinueTransaction, reason }

        public func encode(to encoder: any Encoder) throws {
            var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
            try c.put(productId, .productId)
            try c.put(type, .type)
            try c.put(subscriptionGroup, .subscriptionGroup)
            try c.put(shouldContinueTransaction, .shouldContinueTransaction)
            try c.put(reason, .reason)
        }
    }

    public var appUserId: String
    public var bundleId: String
    /// The storefront asked for (`?storefront=`, the one StoreKit now reports), else the customer's
    /// (their latest transaction's); null when neither is known (then every product is listed).
    public var storefront: String?
    /// The customer's own storefront id, when the storefront is theirs.
    public var storefrontId: String?
    /// The app's products sold in ``storefront`` (configuration `products[].storefronts`).
    public var products: [ProductBody]
    /// The app's products not sold there: a purchase of them must not continue.
    public var notSold: [String]

    public init(app: App, appUserId: String, state: CustomerState, storefront asked: String?) {
        self.appUserId = appUserId
        bundleId = app.bundleId
        let own = state.storefront
        storefront = asked ?? own?.storefront.uppercased()
        storefrontId = asked == nil || asked == own?.storefront.uppercased() ? own?.storefrontId : nil
        let storefront = self.storefront
        let sold = app.products.filter { storefront == nil || $0.isSold(in: storefront!) }
        notSold = app.products.filter { storefront != nil && !$0.isSold(in: storefront!) }.map(\.productId)
        products = sold.map { product in
            let reason = Self.reason(product, state: state)
            return ProductBody(
                productId: product.productId, type: product.type.rawValue, subscriptionGroup: product.subscriptionGroup,
                shouldContinueTransaction: reason == nil, reason: reason)
        }
    }

    /// Why a purchase of a sold product should not continue, if it should not.
    static func reason(_ product: Product, state: CustomerState) -> String? {
        switch product.type {
        case .nonConsumable:
            return state.nonConsumable(product.productId)?.owned == true ? "alreadyOwned" : nil
        case .autoRenewable:
            let current = state.subscriptionGroups.compactMap(\.current)
            return current.contains { $0.productId == product.productId && $0.active } ? "alreadySubscribed" : nil
        case .consumable, .nonRenewing:
            return nil
        }
    }

    enum Key: String, CodingKey { case appUserId, bundleId, storefront, storefrontId, products, notSold }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(appUserId, .appUserId)
        try c.put(bundleId, .bundleId)
        try c.put(storefront, .storefront)
        try c.put(storefrontId, .storefrontId)
        try c.put(products, .products)
        try c.put(notSold, .notSold)
    }
}
