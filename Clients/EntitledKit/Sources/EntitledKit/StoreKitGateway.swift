#if canImport(StoreKit)
    import Foundation
    import StoreKit

    /// StoreKit 2 behind ``StoreGateway``: a thin adapter, every decision is ``Purchases``'.
    ///
    /// Signatures are not checked here: the server verifies each `jwsRepresentation` and answers
    /// 400 to a forged one, which then stays unfinished.
    ///
    /// Available at the package's floor (iOS 15, macOS 12, tvOS 15, watchOS 8, visionOS 1), StoreKit
    /// 2's own; newer calls (`AppTransaction`, win-back and introductory-eligibility options) are
    /// behind `#available` checks.
    public struct StoreKitGateway: StoreGateway {
        /// Runs StoreKit's purchase sheet. Default: `Product.purchase(options:)`; on visionOS (which
        /// needs a scene to present in) pass SwiftUI's `PurchaseAction` or
        /// `product.purchase(confirmIn:options:)`.
        public typealias PurchaseCall =
            @Sendable (Product, Set<Product.PurchaseOption>) async throws -> Product.PurchaseResult

        let purchaseCall: PurchaseCall

        #if os(visionOS)
            public init(purchase: @escaping PurchaseCall) { purchaseCall = purchase }
        #else
            public init(purchase: PurchaseCall? = nil) {
                purchaseCall = purchase ?? { product, options in try await product.purchase(options: options) }
            }
        #endif

        /// A verified-or-not StoreKit transaction with its signed form.
        struct Signed: StoreTransaction {
            let transaction: Transaction
            let jwsRepresentation: String
            var transactionID: String { String(transaction.id) }
            var productID: String { transaction.productID }
            func finish() async { await transaction.finish() }
        }

        static func signed(_ result: VerificationResult<Transaction>) -> Signed {
            Signed(transaction: result.unsafePayloadValue, jwsRepresentation: result.jwsRepresentation)
        }

        /// The product is not in the App Store's catalog for this app.
        public struct UnknownProduct: Error, Sendable { public var productID: String }

        public func purchase(productID: String, appAccountToken: UUID, offer: SignedPurchaseOffer?) async throws
            -> StorePurchaseResult
        {
            guard let product = try await Product.products(for: [productID]).first else {
                throw UnknownProduct(productID: productID)
            }
            var options: Set<Product.PurchaseOption> = [.appAccountToken(appAccountToken)]
            if let offer { options.formUnion(try Self.options(for: offer, product: product)) }
            switch try await purchaseCall(product, options) {
            case .success(let result): return .purchased(Self.signed(result))
            case .pending: return .pending
            case .userCancelled: return .cancelled
            @unknown default: return .cancelled
            }
        }

        /// The server's signature does not fit the offer (a server older or newer than this client).
        public struct UnusableSignature: Error, Sendable { public var offer: PurchaseOffer }

        /// The purchase options that carry the server's signature: `v1` for promotional (and, before
        /// StoreKit's own win-back option, win-back) offers; the eligibility JWS where StoreKit takes one.
        static func options(for offer: SignedPurchaseOffer, product: Product) throws -> Set<Product.PurchaseOption> {
            let signed = offer.signed
            switch offer.offer {
            case .introductory:
                if #available(iOS 18.4, macOS 15.4, tvOS 18.4, watchOS 11.4, visionOS 2.4, *), let jws = signed.jws {
                    return [.introductoryOfferEligibility(compactJWS: jws)]
                }
                return []  // StoreKit applies the introductory offer itself when Apple deems the customer eligible
            case .winBack(let id):
                if #available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *),
                    let winBack = product.subscription?.winBackOffers.first(where: { $0.id == id })
                {
                    return [.winBackOffer(winBack)]
                }
                return try promotional(id, signed, offer.offer)
            case .promotional(let id):
                return try promotional(id, signed, offer.offer)
            }
        }

        static func promotional(_ id: String, _ signed: SignedOffer, _ offer: PurchaseOffer) throws -> Set<Product.PurchaseOption> {
            guard let keyID = signed.keyId, let timestamp = signed.timestamp,
                let signature = signed.signature.flatMap({ Data(base64Encoded: $0) })
            else { throw UnusableSignature(offer: offer) }
            return [.promotionalOffer(offerID: id, keyID: keyID, nonce: signed.nonce, signature: signature, timestamp: Int(timestamp))]
        }

        public func unfinished() async -> [any StoreTransaction] {
            var out: [any StoreTransaction] = []
            for await result in Transaction.unfinished { out.append(Self.signed(result)) }
            return out
        }

        public func currentEntitlements() async -> [any StoreTransaction] {
            var out: [any StoreTransaction] = []
            for await result in Transaction.currentEntitlements { out.append(Self.signed(result)) }
            return out
        }

        /// Nil before iOS 16 / macOS 13 (no `AppTransaction` there): restores then post transactions only.
        public func appTransaction() async throws -> String? {
            if #available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *) {
                return try await AppTransaction.shared.jwsRepresentation
            }
            return nil
        }

        public func updates() -> AsyncStream<any StoreTransaction> {
            AsyncStream { continuation in
                let task = Task {
                    for await result in Transaction.updates { continuation.yield(Self.signed(result)) }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }

        public func storefront() async -> String? {
            await Storefront.current?.countryCode
        }

        public func products(for ids: [String]) async throws -> [StoreProduct] {
            try await Product.products(for: ids).map(Self.product)
        }

        /// StoreKit's product as the portable paywall model holds it.
        static func product(_ product: Product) -> StoreProduct {
            let subscription = product.subscription
            let intro = subscription?.introductoryOffer.map { offer in
                StoreProduct.IntroductoryOffer(
                    paymentMode: paymentMode(offer.paymentMode), price: offer.price, displayPrice: offer.displayPrice,
                    period: period(offer.period), periodCount: offer.periodCount)
            }
            return StoreProduct(
                id: product.id, displayName: product.displayName, description: product.description, price: product.price,
                displayPrice: product.displayPrice, subscriptionPeriod: subscription.map { period($0.subscriptionPeriod) },
                introductoryOffer: intro)
        }

        static func period(_ period: Product.SubscriptionPeriod) -> StoreProduct.Period {
            let unit: StoreProduct.Period.Unit =
                switch period.unit {
                case .day: .day
                case .week: .week
                case .month: .month
                case .year: .year
                @unknown default: .day
                }
            return StoreProduct.Period(value: period.value, unit: unit)
        }

        static func paymentMode(_ mode: Product.SubscriptionOffer.PaymentMode) -> String {
            switch mode {
            case .freeTrial: "freeTrial"
            case .payAsYouGo: "payAsYouGo"
            case .payUpFront: "payUpFront"
            default: mode.rawValue
            }
        }
    }
#endif
