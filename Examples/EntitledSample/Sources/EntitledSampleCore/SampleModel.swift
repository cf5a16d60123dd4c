import EntitledKit
import Foundation

#if canImport(Combine)
    import Combine
#endif

/// A product as the paywall offers it to this customer.
public struct PaywallItem: Sendable, Hashable, Identifiable {
    public var product: ProductInfo
    public var id: String { product.id }
    /// The server says the customer may still take the product's introductory offer: a plain
    /// purchase gets it (StoreKit applies it), so the paywall shows it next to the price.
    public var introductoryOfferEligible: Bool
    /// The promotional and win-back offers the server lists for the customer: each is a purchase
    /// with that offer, signed by the server.
    public var offers: [PurchaseOffer]
}

/// The sample's whole logic, for its SwiftUI views: the customer's answer (followed through
/// ``Entitled/customerUpdates``), the paywall's products and offers, purchase, restore, and the
/// gate. Views read its properties and call its methods; nothing here imports SwiftUI or StoreKit.
@MainActor
public final class SampleModel {
    /// The latest answer (nil until the first one arrives).
    public private(set) var answer: CustomerAnswer? {
        willSet { changing() }
    }
    /// The products StoreKit knows, in ``SampleSettings/productIDs``' order.
    public private(set) var products: [ProductInfo] = [] {
        willSet { changing() }
    }
    /// A call to the store or the server is running (the views disable their buttons).
    public private(set) var busy = false {
        willSet { changing() }
    }
    /// What the last action came to, for a banner (nil: nothing to say).
    public private(set) var message: String? {
        willSet { changing() }
    }

    public let settings: SampleSettings
    public let entitled: Entitled
    let productSource: any ProductSource
    /// Cancelled in `deinit`, which is nonisolated; written only on the main actor.
    nonisolated(unsafe) private var following: Task<Void, Never>?

    public init(entitled: Entitled, products: any ProductSource, settings: SampleSettings) {
        self.entitled = entitled
        productSource = products
        self.settings = settings
    }

    deinit { following?.cancel() }

    /// Whether the gated screen is open: the latest answer grants ``SampleSettings/entitlement``.
    public var isUnlocked: Bool { answer?.grants(settings.entitlement) ?? false }

    /// The paywall: each product with what the server lets this customer take on it.
    public var paywall: [PaywallItem] {
        products.map { product in
            let offers = answer?.offers.available(for: product.id) ?? []
            return PaywallItem(
                product: product, introductoryOfferEligible: offers.contains(.introductory),
                offers: offers.filter { $0 != .introductory })
        }
    }

    /// At launch: follows every answer, delivers what an earlier launch could not and restores
    /// (``Entitled/launch()``), and loads the products.
    public func start() async {
        if following == nil {
            let updates = entitled.customerUpdates
            following = Task { [weak self] in
                for await answer in updates { self?.accept(answer) }
            }
        }
        await run {
            let restored = try await self.entitled.launch()
            self.accept(restored.answer)
        }
        do {
            let known = try await productSource.products(for: settings.productIDs)
            products = settings.productIDs.compactMap { id in known.first { $0.id == id } }
        } catch {
            message = "Could not load the products: \(Self.describe(error))"
        }
    }

    /// Buys `productID`, with `offer` when given (a promotional or win-back offer from ``paywall``).
    public func purchase(_ productID: String, offer: PurchaseOffer? = nil) async {
        await run {
            switch try await self.entitled.purchase(productID: productID, offer: offer) {
            case .purchased(let answer):
                self.accept(answer)
                self.message = self.isUnlocked ? "Unlocked \(self.settings.entitlement)." : "Purchased."
            case .pending: self.message = "Waiting for approval (Ask to Buy)."
            case .cancelled: self.message = nil
            case .notSoldInStorefront: self.message = "Not sold in your storefront."
            }
        }
    }

    /// Restore Purchases: posts what the store holds for this Apple ID and shows the result.
    public func restore() async {
        await run {
            let restored = try await self.entitled.restore()
            self.accept(restored.answer)
            self.message = self.isUnlocked ? "Restored: \(self.settings.entitlement) is active." : "Nothing to restore."
        }
    }

    /// Asks the server again (pull to refresh).
    public func refresh() async {
        await run { self.accept(try await self.entitled.refresh()) }
    }

    /// Keeps `answer` unless a newer one of the same customer is already shown: the stream and a
    /// direct reply may arrive in either order.
    func accept(_ answer: CustomerAnswer) {
        if let current = self.answer, current.appUserId == answer.appUserId, current.serverTime > answer.serverTime { return }
        self.answer = answer
    }

    private func run(_ body: () async throws -> Void) async {
        busy = true
        defer { busy = false }
        do { try await body() } catch { message = Self.describe(error) }
    }

    /// A line for the banner: the server's stable problem code, or what went wrong.
    static func describe(_ error: any Error) -> String {
        switch error {
        case EntitledError.server(_, let code, let detail): return "The server refused (\(code))\(detail.map { ": \($0)" } ?? "")."
        case EntitledError.offline: return "The server cannot be reached; try again."
        case is OfferNotEligible: return "That offer is not available to you."
        default: return "\(error)"
        }
    }

    private func changing() {
        #if canImport(Combine)
            objectWillChange.send()
        #endif
    }
}

#if canImport(Combine)
    /// SwiftUI observes the model (`@StateObject`); `ObservableObject` is available at the whole floor.
    extension SampleModel: ObservableObject {}
#endif
