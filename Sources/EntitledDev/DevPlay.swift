import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledCrypto
import EntitledServer
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import Synchronization

/// `entitled dev`'s Google Play: the fake Google (token endpoint, Developer API, JWKS) on loopback,
/// one Play app configured against it, and the dashboard's Play lifecycle actions. Each change is
/// pushed to the server's `/v1/google/notifications` with an OIDC token signed by the fake's key,
/// as an authenticated Pub/Sub push subscription would: the server verifies it, asks the fake's
/// Developer API for the purchase and commits it, exactly as against Google.
///
/// A push the server does not accept is pushed again (same `messageId`) after the next action or
/// virtual day, as Pub/Sub redelivers. Purchases are linked by the customer's `appAccountToken`
/// (`obfuscatedExternalAccountId`), as an app calling `setObfuscatedAccountId` does. They are not
/// license-tester purchases: a voided-purchase notification names no environment, so the server
/// files it under Production, where only a production purchase's refund applies.
final class DevPlay: Sendable {
    /// The demo Play app's package name (the demo App Store app is `com.example.app`).
    static let demoPackageName = "com.example.android"
    /// The push subscription's audience and service account in this mode.
    static let audience = "entitled-dev-play-push"
    static let pushAccount = "play-push@entitled-dev.iam.gserviceaccount.com"
    static let month: Int64 = 30 * 86_400
    /// Failed pushes kept for redelivery; older ones are dropped (Pub/Sub too gives up eventually).
    static let maximumPending = 1000

    /// The demo Play app's products: the demo App Store catalog's, granting the same entitlements.
    static let demoProducts: [PlayProduct] = [
        PlayProduct(productId: "pro.monthly", type: .autoRenewable, basePlans: nil, subscriptionGroup: "pro", entitlements: ["pro"]),
        PlayProduct(productId: "pro.yearly", type: .autoRenewable, basePlans: nil, subscriptionGroup: "pro", entitlements: ["pro"]),
        PlayProduct(productId: "basic.monthly", type: .autoRenewable, basePlans: nil, subscriptionGroup: "pro", entitlements: ["basic"]),
        PlayProduct(productId: "lifetime", type: .nonConsumable, entitlements: ["pro"]),
    ]

    /// A purchase the dashboard made, by customer.
    struct Purchase: Sendable, Codable, Equatable {
        var customer: String
        var productId: String
        var token: String
    }

    /// What a restart continues from (``DevState/play``).
    struct Saved: Sendable, Codable, Equatable {
        var google: FakeGoogle.Saved
        var purchases: [Purchase]
        var messages: Int
    }

    /// A Play action of the dashboard (`POST /dev/play/actions`).
    struct ActionRequest: Sendable, Codable, Equatable {
        /// `buy`, `renew`, `fail` (into grace), `hold`, `recover`, `pause`, `cancel`, `expire`, `refund`,
        /// `refund_units` (a quantity-based partial refund of a one-time purchase), `refund_review`
        /// (Google asks the developer's view on a refund request of the purchase's order) or `upgrade`.
        var action: String
        var customer: String
        /// The product bought, or whose latest purchase the action applies to.
        var product: String
        /// `upgrade`: the product replacing `product` (a new token linked to the old one).
        var to: String?
        /// `buy`, `upgrade`: the base plan (the product's first when absent).
        var basePlan: String?
        /// `pause`: days until the subscription resumes (30 when absent).
        var days: Int?
        /// `buy` of a one-time product: units bought; `refund_units`: units refunded (1 when absent).
        var quantity: Int?
    }

    /// One push to the server.
    struct Push: Sendable, Encodable {
        var messageId: String
        var notificationType: String
        var purchaseToken: String
        /// The server's status; nil when no answer arrived.
        var status: Int?
        var delivered: Bool
    }

    struct Counts: Sendable {
        var sent = 0
        var accepted = 0
    }

    private struct State: Sendable {
        var purchases: [Purchase] = []
        var pending: [(messageId: String, notification: DeveloperNotification)] = []
        var messages = 0
        var counts = Counts()
    }

    let google: FakeGoogle
    let server: FakeGoogleServer
    /// The app the fake sells, its `googlePlay` pointing at the fake.
    let app: PlayApp
    private let pusher = Mutex<FakePubSubPusher?>(nil)
    private let state = Mutex(State())
    private let transport: any OutboundHTTP = CurlHTTP()
    /// Makes this run's `messageId`s unlike any earlier run's, which the server would take for redeliveries.
    private let run = String(UInt64.random(in: 1...UInt64.max), radix: 36)

    /// The fake's signing key and the service account's, made once per process: an RSA key takes
    /// a noticeable fraction of a second of CPU to generate, and the tests start `entitled dev`
    /// many times in one process.
    private static let keys = Result { (google: try RSAPrivateKey(), serviceAccount: try RSAPrivateKey()) }

    /// Starts the fake Google selling `configured` (the configuration's first Play app), else the
    /// demo app; writes its service-account key file to `keyFile`.
    init(configured: PlayApp?, clock: any EpochClock, keyFile: URL, saved: Saved?) throws(StartupError) {
        let products = configured?.products ?? Self.demoProducts
        do {
            let keys = try Self.keys.get()
            google = try FakeGoogle(products: products.map(Self.fake(_:)), clock: clock, signingKey: keys.google)
            server = try FakeGoogleServer(google: google)
            try Data(try server.serviceAccountKeyFile(key: keys.serviceAccount)).write(to: keyFile, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile.path)
        } catch {
            throw .runtime("the fake Google Play: \(error)")
        }
        app = PlayApp(
            packageName: configured?.packageName ?? Self.demoPackageName,
            googlePlay: GooglePlaySettings(
                serviceAccountKeyFile: keyFile.path, apiBaseURL: server.baseURL,
                pubsub: PubSubSettings(audience: Self.audience, serviceAccountEmail: Self.pushAccount, certsURL: server.certsURL),
                acknowledge: configured?.googlePlay.acknowledge ?? true,
                voidedPurchasesPollMinutes: configured?.googlePlay.voidedPurchasesPollMinutes ?? 60),
            products: products)
        if let saved {
            google.restore(saved.google)
            state.withLock {
                $0.purchases = saved.purchases
                $0.messages = saved.messages
            }
        }
    }

    /// The fake's product for a configured one: subscriptions renew monthly on their base plans
    /// (`monthly` when the configuration names none) at ``subscriptionPrice`` (a configuration has no prices).
    static func fake(_ product: PlayProduct) -> FakePlayProduct {
        switch product.type {
        case .autoRenewable:
            FakePlayProduct(
                productId: product.productId, kind: .subscription(basePlans: product.basePlans ?? ["monthly"], periodSeconds: month),
                price: subscriptionPrice)
        case .nonConsumable: FakePlayProduct(productId: product.productId, kind: .oneTime(consumable: false))
        case .consumable: FakePlayProduct(productId: product.productId, kind: .oneTime(consumable: true))
        }
    }

    /// What every simulated Play subscription period costs, so dev's Play purchases show in revenue and MRR.
    static let subscriptionPrice = Money(currencyCode: "USD", milliunits: 9990)

    /// The configuration's Play apps with the simulated one (the first, or the demo app added) pointing at the fake.
    func apps(_ configured: [PlayApp]) -> [PlayApp] {
        var apps = configured
        if let index = apps.firstIndex(where: { $0.packageName == app.packageName }) { apps[index] = app } else { apps.append(app) }
        return apps
    }

    /// Pushes go to `endpoint` from now on.
    func connect(endpoint: URL) {
        let pusher = FakePubSubPusher(
            google: google, endpoint: endpoint, identity: .init(audience: Self.audience, serviceAccountEmail: Self.pushAccount),
            transport: transport)
        self.pusher.withLock { $0 = pusher }
    }

    func shutdown() async { await server.shutdown() }

    // MARK: - Acting

    /// Performs `request` at the fake for the customer whose `appAccountToken` is `account`, then
    /// pushes what it queued (and any push not yet accepted).
    func act(_ request: ActionRequest, account: String) async throws(SimulatorError) -> [Push] {
        do throws(FakeGoogleError) {
            try perform(request, account: account)
        } catch {
            throw SimulatorError(code: "INVALID_ACTION", error.message)
        }
        return await deliver()
    }

    private func perform(_ request: ActionRequest, account: String) throws(FakeGoogleError) {
        let product = request.product
        if request.action == "buy" {
            let token: String
            switch google.products[product]?.kind {
            case .subscription?:
                token = try google.buySubscription(
                    packageName: app.packageName, productId: product, basePlanId: request.basePlan, obfuscatedAccountId: account)
            case .oneTime?:
                token = try google.buyProduct(
                    packageName: app.packageName, productId: product, quantity: max(1, min(request.quantity ?? 1, 100)),
                    obfuscatedAccountId: account)
            case nil:
                throw FakeGoogleError("no product '\(product)' in \(app.packageName)")
            }
            record(Purchase(customer: request.customer, productId: product, token: token))
            return
        }
        guard let token = latestToken(customer: request.customer, productId: product) else {
            throw FakeGoogleError("\(request.customer) has bought no '\(product)' on Google Play")
        }
        switch request.action {
        case "renew": try google.renew(token)
        case "fail": try google.failRenewal(token)
        case "hold": try google.putOnHold(token)
        case "recover": try google.recover(token)
        case "pause":
            let days = Int64(max(1, min(request.days ?? 30, 365)))
            try google.pause(token, resumeAtMillis: google.clock.nowMilliseconds() + days * 86_400_000)
        case "cancel": try google.cancel(token)
        case "expire": try google.expire(token)
        case "refund":
            if google.subscription(token) != nil { try google.revoke(token) } else { try google.refundProduct(token) }
        case "refund_units": try google.refundProductQuantity(token, quantity: request.quantity ?? 1)
        case "refund_review": _ = try google.requestRefundReview(token)
        case "upgrade":
            guard let target = request.to else { throw FakeGoogleError("upgrade needs 'to', the replacing product") }
            let fresh = try google.upgrade(token, to: target, basePlanId: request.basePlan)
            record(Purchase(customer: request.customer, productId: target, token: fresh))
        default:
            throw FakeGoogleError(
                "unknown Play action '\(request.action)': buy, renew, fail, hold, recover, pause, cancel, expire, refund, refund_units, refund_review or upgrade")
        }
    }

    private func record(_ purchase: Purchase) { state.withLock { $0.purchases.append(purchase) } }

    func latestToken(customer: String, productId: String) -> String? {
        state.withLock { $0.purchases.last { $0.customer == customer && $0.productId == productId }?.token }
    }

    /// A virtual day passed: renewals, grace periods ending, holds and pauses, each pushed. The
    /// three-day refund of unacknowledged purchases is left out: virtual days can pass faster than
    /// the server's acknowledgement job runs (every few real seconds).
    func passTime() async -> [Push] {
        google.renewDue()
        google.sweep(refundingUnacknowledged: false)
        return await deliver()
    }

    /// Pushes the pending pushes, then the fake's new notifications, oldest first; keeps those not
    /// accepted for the next time.
    func deliver() async -> [Push] {
        guard let pusher = pusher.withLock({ $0 }) else { return [] }
        let queued = state.withLock { state in
            let fresh = google.takeNotifications().map { notification in
                state.messages += 1
                return (messageId: "dev-play-\(run)-\(state.messages)", notification: notification)
            }
            defer { state.pending.removeAll() }
            return state.pending + fresh
        }
        var pushes: [Push] = []
        var failed: [(messageId: String, notification: DeveloperNotification)] = []
        for (messageId, notification) in queued {
            var status: Int?
            if let request = try? pusher.request(for: notification, messageId: messageId) {
                status = try? await transport.send(request).status
            }
            let delivered = status.map { (200..<300).contains($0) } ?? false
            if !delivered { failed.append((messageId, notification)) }
            pushes.append(
                Push(
                    messageId: messageId, notificationType: Self.name(of: notification), purchaseToken: Self.token(of: notification),
                    status: status, delivered: delivered))
        }
        state.withLock { state in
            state.pending = Array((failed + state.pending).suffix(Self.maximumPending))
            state.counts.sent += pushes.count
            state.counts.accepted += pushes.count(where: \.delivered)
        }
        return pushes
    }

    static func name(of notification: DeveloperNotification) -> String {
        switch notification.kind {
        case .subscription(let n)?: n.notificationType.name ?? "SUBSCRIPTION_\(n.notificationType.rawValue)"
        case .oneTimeProduct(let n)?: n.notificationType.name ?? "ONE_TIME_PRODUCT_\(n.notificationType.rawValue)"
        case .voidedPurchase?: "VOIDED_PURCHASE"
        case .pendingRefundReview?: "PENDING_REFUND_REVIEW"
        case .test?: "TEST_NOTIFICATION"
        case nil: "UNKNOWN"
        }
    }

    static func token(of notification: DeveloperNotification) -> String {
        switch notification.kind {
        case .subscription(let n)?: n.purchaseToken
        case .oneTimeProduct(let n)?: n.purchaseToken
        case .voidedPurchase(let n)?: n.purchaseToken
        default: ""
        }
    }

    // MARK: - Reading

    /// Pushes sent (every attempt) and accepted so far this run.
    var counts: Counts { state.withLock { $0.counts } }

    /// The customers who bought on Google Play through the dashboard, in order of their first purchase.
    var customers: [String] {
        var seen: Set<String> = []
        return state.withLock { $0.purchases.map(\.customer) }.filter { seen.insert($0).inserted }
    }

    /// Every purchase the dashboard made, oldest first, with the fake's current state of it.
    func purchases() -> [(Purchase, FakeGoogle.PurchaseSummary?)] {
        state.withLock { $0.purchases }.map { ($0, google.summary(of: $0.token)) }
    }

    func saved() -> Saved {
        let (purchases, messages) = state.withLock { ($0.purchases, $0.messages) }
        return Saved(google: google.saved(), purchases: purchases, messages: messages)
    }
}
