import Entitlements
import Foundation
import GooglePlay

/// An `apps[]` entry with `packageName` instead of `bundleId`: an Android app sold through Google Play.
public struct PlayApp: Sendable, Equatable {
    /// The app's package name, e.g. `com.example.app`.
    public var packageName: String
    /// How the server talks to Google (`googlePlay`).
    public var googlePlay: GooglePlaySettings
    public var products: [PlayProduct]

    public init(packageName: String, googlePlay: GooglePlaySettings, products: [PlayProduct] = []) {
        self.packageName = packageName
        self.googlePlay = googlePlay
        self.products = products
    }
}

/// `apps[].googlePlay`: the service account, the Developer API and the Pub/Sub push subscription.
public struct GooglePlaySettings: Sendable, Equatable {
    /// The service-account key file (JSON), absolute; checked at load.
    public var serviceAccountKeyFile: String
    /// The Developer API's scheme, host and port.
    public var apiBaseURL: URL
    public var pubsub: PubSubSettings
    /// Acknowledge each purchase once it is stored (Google refunds purchases not acknowledged within three days).
    public var acknowledge: Bool
    /// How often the voided-purchases list is polled as a backstop for missed notifications.
    public var voidedPurchasesPollMinutes: Int
    /// How pending refund reviews are answered (`refundReviews`).
    public var refundReviews: RefundReviewSettings
    /// Ask the Orders API what an order was charged when the purchase does not say (an
    /// introductory phase, a one-time product), so that it counts in revenue (`orderPrices`).
    public var orderPrices: Bool

    public static let defaultAPIBaseURL = URL(string: "https://androidpublisher.googleapis.com")!
    /// Allowed `voidedPurchasesPollMinutes`: at least every 5 minutes, at most daily.
    public static let voidedPurchasesPollMinutesRange = 5...1440

    public init(
        serviceAccountKeyFile: String, apiBaseURL: URL = GooglePlaySettings.defaultAPIBaseURL, pubsub: PubSubSettings,
        acknowledge: Bool = true, voidedPurchasesPollMinutes: Int = 60, refundReviews: RefundReviewSettings = RefundReviewSettings(),
        orderPrices: Bool = true
    ) {
        self.refundReviews = refundReviews
        self.orderPrices = orderPrices
        self.serviceAccountKeyFile = serviceAccountKeyFile
        self.apiBaseURL = apiBaseURL
        self.pubsub = pubsub
        self.acknowledge = acknowledge
        self.voidedPurchasesPollMinutes = voidedPurchasesPollMinutes
    }
}

/// `apps[].googlePlay.refundReviews`: whether the server answers Google's pending refund reviews
/// itself, from the ledger, and with what.
public struct RefundReviewSettings: Sendable, Equatable {
    /// Answer each review from the ledger (once, as a durable job); without it the backend gets a
    /// `refund_review.requested` event and answers itself.
    public var autoRespond: Bool
    /// Whether a free sample, trial or description of the functionality was given before purchase.
    public var sampleContentProvided: Bool
    /// The preference sent; nil: computed from the ledger (``RefundReview``).
    public var refundPreference: RefundPreference?

    public init(autoRespond: Bool = false, sampleContentProvided: Bool = false, refundPreference: RefundPreference? = nil) {
        self.autoRespond = autoRespond
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
    }
}

/// `apps[].googlePlay.pubsub`: what an authenticated push must carry.
public struct PubSubSettings: Sendable, Equatable {
    /// The push subscription's audience (`aud` of its OIDC token).
    public var audience: String
    /// The service account the push subscription authenticates as (`email` of its token).
    public var serviceAccountEmail: String
    /// Google's signing keys (JWKS).
    public var certsURL: URL

    public static let defaultCertsURL = URL(string: "https://www.googleapis.com/oauth2/v3/certs")!

    public init(audience: String, serviceAccountEmail: String, certsURL: URL = PubSubSettings.defaultCertsURL) {
        self.audience = audience
        self.serviceAccountEmail = serviceAccountEmail
        self.certsURL = certsURL
    }
}

/// A product in a Play app's catalog.
public struct PlayProduct: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case autoRenewable, nonConsumable, consumable
    }

    /// The subscription's or one-time product's id in Play Console.
    public var productId: String
    public var type: Kind
    /// For subscriptions: the base plans that grant; nil: every base plan.
    public var basePlans: [String]?
    /// Subscriptions in one group replace each other (upgrades, downgrades).
    public var subscriptionGroup: String?
    public var entitlements: [String]

    public init(productId: String, type: Kind, basePlans: [String]? = nil, subscriptionGroup: String? = nil, entitlements: [String] = []) {
        self.productId = productId
        self.type = type
        self.basePlans = basePlans
        self.subscriptionGroup = subscriptionGroup
        self.entitlements = entitlements
    }
}

extension ConfigurationLoader {
    /// Whether an `apps[]` entry describes a Play app (it names a `packageName`).
    static func isPlayApp(_ node: Node) -> Bool { (node.value as? [String: Any])?["packageName"] != nil }

    /// Parses a Play app; every problem is reported with its path.
    func playApp(_ node: Node, baseDirectory: String?, _ problems: Problems) throws(ConfigurationError) -> PlayApp? {
        var object = try node.object()
        if object.take("bundleId") != nil {
            throw ConfigurationError(path: node.path + ".bundleId", message: "an app has either bundleId (App Store) or packageName (Google Play)")
        }
        let nameNode = try object.require("packageName")
        let packageName = try nameNode.string()
        guard Self.isPackageName(packageName) else {
            throw ConfigurationError(path: nameNode.path, message: "'\(packageName)' is not an Android package name such as com.example.app")
        }
        var settings: GooglePlaySettings?
        let googlePlayNode = problems.check { () throws(ConfigurationError) in try object.require("googlePlay") }
        if let googlePlayNode {
            settings = problems.check { () throws(ConfigurationError) in try googlePlay(googlePlayNode, baseDirectory: baseDirectory, problems) } ?? nil
        }
        var products: [PlayProduct] = []
        object.read("products", problems) { value throws(ConfigurationError) in
            products = try value.array().compactMap { node in problems.check { () throws(ConfigurationError) in try playProduct(node, problems) } }
            var ids = Set<String>()
            for (index, product) in products.enumerated() where !ids.insert(product.productId).inserted {
                problems.record(ConfigurationError(path: "\(value.path)[\(index)].productId", message: "duplicate productId '\(product.productId)'"))
            }
        }
        object.finish(problems)
        guard let settings else { return nil }
        return PlayApp(packageName: packageName, googlePlay: settings, products: products)
    }

    /// Java package naming: two or more dot-separated segments of letters, digits and `_`, each starting with a letter.
    static func isPackageName(_ name: String) -> Bool {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        return name.utf8.count <= 255 && segments.count >= 2 && segments.allSatisfy { segment in
            guard let first = segment.first, first.isASCII, first.isLetter else { return false }
            return segment.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
        }
    }

    private func googlePlay(_ node: Node, baseDirectory: String?, _ problems: Problems) throws(ConfigurationError) -> GooglePlaySettings? {
        var object = try node.object()
        let keyFile = problems.check { () throws(ConfigurationError) -> String in
            let fileNode = try object.require("serviceAccountKeyFile")
            let raw = try fileNode.string()
            let resolved = Self.absolutePath(raw, relativeTo: baseDirectory)
            guard FileManager.default.isReadableFile(atPath: resolved) else {
                throw ConfigurationError(path: fileNode.path, message: "cannot read service account key file '\(raw)' \(Self.tried(resolved))")
            }
            do {
                _ = try ServiceAccountKey(contentsOf: resolved)
            } catch {
                throw ConfigurationError(path: fileNode.path, message: "'\(raw)' is not a usable service account key file: \((error as? GooglePlayError)?.message ?? "unreadable")")
            }
            return resolved
        }
        var apiBaseURL = GooglePlaySettings.defaultAPIBaseURL
        object.read("apiBaseURL", problems) { value throws(ConfigurationError) in apiBaseURL = try Self.httpURL(value) }
        var pubsub: PubSubSettings?
        let pubsubNode = problems.check { () throws(ConfigurationError) in try object.require("pubsub") }
        if let pubsubNode { pubsub = problems.check { () throws(ConfigurationError) in try self.pubsub(pubsubNode, problems) } ?? nil }
        var acknowledge = true
        object.read("acknowledge", problems) { value throws(ConfigurationError) in acknowledge = try value.bool() }
        var minutes = 60
        object.read("voidedPurchasesPollMinutes", problems) { value throws(ConfigurationError) in
            minutes = try Self.bounded(value, GooglePlaySettings.voidedPurchasesPollMinutesRange)
        }
        var refundReviews = RefundReviewSettings()
        object.read("refundReviews", problems) { value throws(ConfigurationError) in refundReviews = try self.refundReviews(value, problems) }
        var orderPrices = true
        object.read("orderPrices", problems) { value throws(ConfigurationError) in orderPrices = try value.bool() }
        object.finish(problems)
        guard let keyFile, let pubsub else { return nil }
        return GooglePlaySettings(
            serviceAccountKeyFile: keyFile, apiBaseURL: apiBaseURL, pubsub: pubsub, acknowledge: acknowledge, voidedPurchasesPollMinutes: minutes,
            refundReviews: refundReviews, orderPrices: orderPrices)
    }

    private func refundReviews(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> RefundReviewSettings {
        var object = try node.object()
        var settings = RefundReviewSettings()
        object.read("autoRespond", problems) { value throws(ConfigurationError) in settings.autoRespond = try value.bool() }
        object.read("sampleContentProvided", problems) { value throws(ConfigurationError) in settings.sampleContentProvided = try value.bool() }
        object.read("refundPreference", problems) { value throws(ConfigurationError) in
            let raw = try value.string()
            guard raw == "computed" || RefundPreference(rawValue: raw) != nil else {
                throw ConfigurationError(path: value.path, message: "unknown refundPreference '\(raw)' (computed, NEUTRAL, DECLINE, APPROVE)")
            }
            settings.refundPreference = RefundPreference(rawValue: raw)
        }
        object.finish(problems)
        return settings
    }

    private func pubsub(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> PubSubSettings? {
        var object = try node.object()
        let audience = problems.check { () throws(ConfigurationError) -> String in
            let value = try object.require("audience")
            let raw = try value.string()
            guard !raw.isEmpty, raw.utf8.count <= 1024 else { throw ConfigurationError(path: value.path, message: "must be 1 to 1024 characters") }
            return raw
        }
        let email = problems.check { () throws(ConfigurationError) -> String in
            let value = try object.require("serviceAccountEmail")
            let raw = try value.string()
            let parts = raw.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), raw.utf8.count <= 320 else {
                throw ConfigurationError(path: value.path, message: "'\(raw)' is not a service account email such as push@project.iam.gserviceaccount.com")
            }
            return raw
        }
        var certsURL = PubSubSettings.defaultCertsURL
        object.read("certsURL", problems) { value throws(ConfigurationError) in certsURL = try Self.httpURL(value) }
        object.finish(problems)
        guard let audience, let email else { return nil }
        return PubSubSettings(audience: audience, serviceAccountEmail: email, certsURL: certsURL)
    }

    private func playProduct(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> PlayProduct {
        var object = try node.object()
        let idNode = try object.require("productId")
        let productId = try idNode.string()
        guard !productId.isEmpty else { throw ConfigurationError(path: idNode.path, message: "must not be empty") }
        let typeNode = try object.require("type")
        let rawType = try typeNode.string()
        guard let type = PlayProduct.Kind(rawValue: rawType) else {
            throw ConfigurationError(
                path: typeNode.path, message: "unknown Google Play product type '\(rawType)' (autoRenewable, nonConsumable, consumable)")
        }
        var product = PlayProduct(productId: productId, type: type)
        object.read("basePlans", problems) { value throws(ConfigurationError) in
            guard type == .autoRenewable else { throw ConfigurationError(path: value.path, message: "basePlans are for autoRenewable products") }
            let plans = try value.array().compactMap { node in problems.check { () throws(ConfigurationError) in try node.string() } }
            guard !plans.isEmpty else { throw ConfigurationError(path: value.path, message: "list at least one base plan, or leave basePlans out") }
            product.basePlans = plans
        }
        object.read("subscriptionGroup", problems) { value throws(ConfigurationError) in
            guard type == .autoRenewable else {
                throw ConfigurationError(path: value.path, message: "subscriptionGroup is for autoRenewable products")
            }
            product.subscriptionGroup = try value.string()
        }
        object.read("entitlements", problems) { value throws(ConfigurationError) in
            product.entitlements = try value.array().compactMap { node in problems.check { () throws(ConfigurationError) in try node.string() } }
        }
        object.finish(problems)
        return product
    }

    /// An absolute http(s) URL without a query.
    static func httpURL(_ value: Node) throws(ConfigurationError) -> URL {
        let raw = try value.string()
        guard let url = URL(string: raw), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil, url.query == nil else {
            throw ConfigurationError(path: value.path, message: "'\(raw)' is not an http(s) URL")
        }
        return url
    }
}
