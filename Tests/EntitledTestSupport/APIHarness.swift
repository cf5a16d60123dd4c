import AppStore
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Testing

/// A running API over loopback with the real ledger on `sqlite::memory:` and the stub verifier.
struct APIHarness {
    let port: Int
    let ledger: TestLedger
    let clock: VirtualClock
    let application: Application

    static let start: Int64 = 1_800_000_000_000  // 2027-01-15T08:00:00Z
    static let bundleId = "com.example.app"
    static let tokenSecret = String(repeating: "t", count: 40)
    static let reader = "Bearer reader-secret-0123456789"
    static let writer = "Bearer writer-secret-0123456789"
    static let admin = "Bearer admin-secret-0123456789"
    /// A console key's header, for the configurations that add that key (`console-secret-0123456789`).
    static let console = "Bearer console-secret-0123456789"

    static func configuration(restore: RestoreBehavior = .transfer) -> Configuration {
        var configuration = Configuration()
        configuration.apiKeys = [
            APIKey(name: "reader", secret: "reader-secret-0123456789", scopes: [.read]),
            APIKey(name: "writer", secret: "writer-secret-0123456789", scopes: [.read, .write]),
            APIKey(name: "admin", secret: "admin-secret-0123456789", scopes: [.admin]),
        ]
        configuration.customerTokens = CustomerTokenSettings(secret: tokenSecret)
        configuration.apps = [
            App(
                bundleId: bundleId, appAppleId: 1234, environments: ["Production", "Sandbox"],
                sharedSecret: "v1-shared-secret-value", restoreBehavior: restore,
                products: [
                    Product(productId: "pro.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 2,
                            duration: "P1M", entitlements: ["pro"]),
                    Product(productId: "pro.yearly", type: .autoRenewable, subscriptionGroup: "pro", level: 1,
                            duration: "P1Y", entitlements: ["pro"], storefronts: ["USA"]),
                    Product(productId: "lifetime", type: .nonConsumable, entitlements: ["extras"]),
                ])
        ]
        return configuration
    }

    static func run(
        configuration: Configuration = APIHarness.configuration(), budgetCapacity: Double = 1000,
        verifier: (any NotificationVerifying)? = nil, clock: VirtualClock? = nil, metrics: ServerMetrics = ServerMetrics(),
        _ body: (APIHarness) async throws -> Void
    ) async throws {
        let clock = clock ?? VirtualClock(start)
        let cache = testFastPaths.projectionCache()
        let ledger = try await TestLedger(
            policy: configuration.policy, cache: cache, grantEnvironments: configuration.grantEnvironments)
        let application = Application(
            configuration: configuration, verifier: verifier ?? StubVerifier(), ledger: ledger.ledger, clock: clock,
            rejectionBudget: RejectionBudget(capacity: budgetCapacity, refillPerSecond: 0.001, clock: clock),
            cache: cache, metrics: metrics)
        var server = HTTPServer.Configuration()
        server.host = "127.0.0.1"
        server.port = 0
        server.accessLog = nil
        server.errorLog = nil
        let http = HTTPServer(configuration: server, router: application.router)
        try http.start()
        do {
            try await body(APIHarness(port: http.port, ledger: ledger, clock: clock, application: application))
        } catch {
            await http.shutdown()
            await ledger.store.close()
            throw error
        }
        await http.shutdown()
        await ledger.store.close()
    }

    func send(_ method: String, _ path: String, auth: String? = nil, json: String? = nil, body: [UInt8]? = nil)
        async throws -> Loopback.Reply
    {
        var headers: [String: String] = [:]
        if let auth { headers["Authorization"] = auth }
        if json != nil || body != nil { headers["Content-Type"] = "application/json" }
        let reply = try await Loopback.send(port: port, method, path, headers: headers, body: body ?? Array((json ?? "").utf8))
        ProblemTable.check(reply)
        return reply
    }

    func postV2(_ signedPayload: String) async throws -> Loopback.Reply {
        try await send("POST", "/v1/apple/notifications", json: #"{"signedPayload":"\#(signedPayload)"}"#)
    }

    func customer(_ id: String, auth: String = APIHarness.reader) async throws -> Loopback.Reply {
        try await send("GET", "/v1/customers/\(id)", auth: auth)
    }
}

/// Signed-data builders for the stub verifier.
enum Apple {
    static func transaction(
        otid: String = "o1", tid: String = "t1", product: String = "pro.monthly", purchase: Int64, expires: Int64?,
        signed: Int64? = nil, token: String? = nil, environment: AppStoreEnvironment = .production,
        bundleId: String = APIHarness.bundleId, type: AppStore.ProductType = .autoRenewableSubscription
    ) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: otid, transactionId: tid, bundleId: bundleId, productId: product,
            purchaseDate: purchase, originalPurchaseDate: purchase, expiresDate: expires, quantity: 1, type: type,
            appAccountToken: token, inAppOwnershipType: .purchased, signedDate: signed ?? purchase,
            environment: environment, storefront: "USA", transactionReason: .purchase, currency: "USD", price: 9990)
    }

    static func renewal(otid: String = "o1", product: String = "pro.monthly", autoRenew: Bool = true, signed: Int64)
        -> JWSRenewalInfoDecodedPayload
    {
        JWSRenewalInfoDecodedPayload(
            originalTransactionId: otid, autoRenewProductId: product, productId: product,
            autoRenewStatus: autoRenew ? .on : .off, signedDate: signed, environment: .production)
    }

    static func notification(
        _ type: NotificationType, _ subtype: Entitlements.NotificationSubtype? = nil, uuid: String = UUID().uuidString,
        signed: Int64, transaction: JWSTransactionDecodedPayload? = nil, renewal: JWSRenewalInfoDecodedPayload? = nil,
        bundleId: String = APIHarness.bundleId, environment: AppStoreEnvironment = .production, signature: String = "valid"
    ) -> String {
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: subtype, notificationUUID: uuid,
            data: NotificationData(
                environment: environment, appAppleId: 1234, bundleId: bundleId, bundleVersion: "1",
                signedTransactionInfo: transaction.map { FakeJWS.make($0) }, signedRenewalInfo: renewal.map { FakeJWS.make($0) }),
            version: "2.0", signedDate: signed)
        return FakeJWS.make(payload, signature: signature)
    }
}

extension Loopback.Reply {
    var entitlements: [String: Any] { json["entitlements"] as? [String: Any] ?? [:] }
    func entitlement(_ id: String) -> [String: Any]? { entitlements[id] as? [String: Any] }
    var maxAge: Int? {
        guard let value = headers["cache-control"], let range = value.range(of: "max-age=") else { return nil }
        return Int(value[range.upperBound...])
    }
}
