import Foundation

/// One StoreKit transaction, as ``Purchases`` needs it. StoreKit's `Transaction` in the app
/// (``StoreKitGateway``), a fake in tests.
public protocol StoreTransaction: Sendable {
    var transactionID: String { get }
    var productID: String { get }
    /// The signed transaction (StoreKit's `VerificationResult.jwsRepresentation`), posted to the server.
    var jwsRepresentation: String { get }
    /// Tells the store the app has delivered the purchase (StoreKit's `Transaction.finish()`).
    func finish() async
}

/// How a purchase sheet ended.
public enum StorePurchaseResult: Sendable {
    case purchased(any StoreTransaction)
    /// Waiting for approval (Ask to Buy, SCA): the transaction arrives later through ``StoreGateway/updates()``.
    case pending
    case cancelled
}

/// The store calls the portable core makes; StoreKit 2 implements it in ``StoreKitGateway``.
public protocol StoreGateway: Sendable {
    /// Shows the purchase sheet for `productID`, tagging the purchase with `appAccountToken` and
    /// applying `offer` (signed by the server) when given.
    func purchase(productID: String, appAccountToken: UUID, offer: SignedPurchaseOffer?) async throws -> StorePurchaseResult
    /// Transactions not yet finished (StoreKit's `Transaction.unfinished`).
    func unfinished() async -> [any StoreTransaction]
    /// The customer's current entitlements (StoreKit's `Transaction.currentEntitlements`).
    func currentEntitlements() async -> [any StoreTransaction]
    /// The signed app transaction (StoreKit's `AppTransaction.shared`), nil when there is none.
    func appTransaction() async throws -> String?
    /// Transactions made or changed outside the app's own purchase calls (StoreKit's `Transaction.updates`).
    func updates() -> AsyncStream<any StoreTransaction>
    /// The App Store storefront's ISO 3166-1 alpha-3 code (StoreKit's `Storefront.current`).
    func storefront() async -> String?
    /// The store's products of `ids` it knows, for the paywall (StoreKit's `Product.products(for:)`).
    func products(for ids: [String]) async throws -> [StoreProduct]
}

/// What a purchase came to.
public enum PurchaseOutcome: Sendable {
    /// Recorded by the server and finished: the new answer.
    case purchased(CustomerAnswer)
    case pending
    case cancelled
    /// The server's catalog does not sell the product in the customer's storefront.
    case notSoldInStorefront
}

/// What the launch-time restore found: ``CustomerAnswer/state`` tells the app which screen to show.
public struct RestoreOutcome: Sendable {
    public var kind: CustomerKind { answer.state }
    public var answer: CustomerAnswer
    /// Transactions posted (unfinished ones, then current entitlements) and the ones that failed (left unfinished).
    public var posted: Int
    public var failed: Int
}

/// The purchase rules, all in one place so that the StoreKit layer stays a thin adapter:
/// a transaction is finished **only after** the server answered 200 for it; one that could not be
/// posted stays unfinished, so StoreKit hands it back at the next launch (``launch()``).
public actor Purchases {
    public nonisolated let client: EntitledClient
    public nonisolated let store: any StoreGateway
    public nonisolated let bundleId: String
    private var deliveries: [String: Task<CustomerAnswer, any Error>] = [:]
    private var listener: Task<Void, Never>?
    private var catalogs: [String: Catalog] = [:]

    public init(client: EntitledClient, store: any StoreGateway, bundleId: String) {
        self.client = client
        self.store = store
        self.bundleId = bundleId
    }

    /// Buys `productID` for the client's customer: checks the storefront, has the server sign
    /// `offer`, passes the customer's `appAccountToken` (from the answer), posts the transaction,
    /// finishes it after the 200. `.introductory` throws ``OfferNotEligible`` unless the answer's
    /// ``CustomerAnswer/Offers/introductory`` lists the product; the server refuses (409
    /// `OFFER_NOT_ELIGIBLE`) a promotional or win-back offer the customer may not take.
    public func purchase(productID: String, offer: PurchaseOffer? = nil) async throws -> PurchaseOutcome {
        if let storefront = await store.storefront(), !(await shouldContinue(productID: productID, storefront: storefront)) {
            return .notSoldInStorefront
        }
        let answer = try await client.customer()
        let signed = try await sign(offer, productID: productID, answer: answer)
        switch try await store.purchase(productID: productID, appAccountToken: answer.appAccountToken, offer: signed) {
        case .purchased(let transaction): return .purchased(try await deliver(transaction))
        case .pending: return .pending
        case .cancelled: return .cancelled
        }
    }

    private func sign(_ offer: PurchaseOffer?, productID: String, answer: CustomerAnswer) async throws -> SignedPurchaseOffer? {
        guard let offer else { return nil }
        let signed: SignedOffer
        switch offer {
        case .promotional(let id): signed = try await client.signOffer(productID: productID, kind: .promotional, offerId: id, format: .v1)
        case .winBack(let id): signed = try await client.signOffer(productID: productID, kind: .winBack, offerId: id, format: .v1)
        case .introductory:
            guard answer.offers.introductory.contains(productID) else { throw OfferNotEligible(productID: productID, offer: offer) }
            signed = try await client.signOffer(productID: productID, kind: .introductoryEligibility, offerId: nil, format: .jws)
        }
        return SignedPurchaseOffer(offer: offer, signed: signed)
    }

    /// Posts `transaction`, then finishes it; a failed post throws and leaves it unfinished. One
    /// delivery per transaction at a time (a purchase and `updates` may hand over the same one).
    @discardableResult
    public func deliver(_ transaction: any StoreTransaction) async throws -> CustomerAnswer {
        if let running = deliveries[transaction.transactionID] { return try await running.value }
        let client = client
        let task = Task {
            let answer = try await client.post(signedTransaction: transaction.jwsRepresentation)
            await transaction.finish()
            return answer
        }
        deliveries[transaction.transactionID] = task
        defer { deliveries[transaction.transactionID] = nil }
        return try await task.value
    }

    /// At launch: delivers what an earlier launch could not, starts listening to updates, and
    /// restores proactively (``restore()``).
    public func launch() async throws -> RestoreOutcome {
        startListening()
        return try await restore()
    }

    /// Proactive restore: posts every unfinished transaction (finishing each after its 200), the
    /// app transaction and the current entitlements, then answers the customer's state. A failed
    /// post is counted, not thrown; the answer is the server's latest (or the cached one offline).
    public func restore() async throws -> RestoreOutcome {
        var posted = 0
        var failed = 0
        var latest: CustomerAnswer?
        for transaction in await store.unfinished() {
            do { latest = try await deliver(transaction); posted += 1 } catch { failed += 1 }
        }
        if let jws = try? await store.appTransaction() {
            do { latest = try await client.post(appTransaction: jws); posted += 1 } catch { failed += 1 }
        }
        for transaction in await store.currentEntitlements() {
            do { latest = try await client.post(signedTransaction: transaction.jwsRepresentation); posted += 1 } catch {
                failed += 1
            }
        }
        let answer: CustomerAnswer
        if let latest { answer = latest } else { answer = try await client.customer() }
        return RestoreOutcome(answer: answer, posted: posted, failed: failed)
    }

    /// Delivers each transaction `updates` hands over (renewals, Ask to Buy approvals, purchases
    /// on other devices, refunds). Failures stay unfinished for the next launch.
    public func startListening() {
        guard listener == nil else { return }
        let updates = store.updates()
        listener = Task { [weak self] in
            for await transaction in updates {
                guard let self else { return }
                _ = try? await self.deliver(transaction)
            }
        }
    }

    public func stopListening() {
        listener?.cancel()
        listener = nil
    }

    /// Whether a purchase of `productID` should go on in `storefront` (StoreKit's alpha-3 code): no
    /// when the server's catalog for that storefront does not sell it. When the catalog cannot be
    /// fetched the purchase goes on: the App Store itself refuses what it does not sell.
    public func shouldContinue(productID: String, storefront: String) async -> Bool {
        let key = storefront.uppercased()
        if let catalog = catalogs[key] { return catalog.sells(productID) }
        guard let catalog = try? await client.catalog(bundleId: bundleId, storefront: key) else { return true }
        catalogs[key] = catalog
        return catalog.sells(productID)
    }
}
