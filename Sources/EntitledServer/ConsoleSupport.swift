import AppStore
import AppStoreServerAPI
import EntitledConfig
import Entitlements
import Foundation
import HTTPServer
import Storage

/// The console's questions to Apple: the customers of an order id (Look Up Order ID, `console`
/// scope: it changes nothing anyone decides), and what the page may offer the key
/// (`/v1/console/session`). Each is audited through ``SupportAuditor``.
extension ConsoleRoutes {
    /// Most transactions of one order looked at (an order is one checkout: a few at most).
    static let maxOrderTransactions = 50
    /// How many of a customer's newest support actions the customer page shows.
    static let customerSupportActions = 50

    /// `GET /v1/console/session`: the key's name, whether it may take support actions (`admin`)
    /// and which apps can ask Apple (`serverAPI`), so the page offers only what will work.
    func consoleSession(_ request: Request) async throws -> Response {
        let principal = try gate.authenticate(request)
        try gate.authenticator.authorize(principal, scope: .console, appUserId: nil)
        guard case .apiKey(let name, let scopes) = principal else { throw HTTPError(.forbidden, "the console needs an API key") }
        return try .json(
            SessionBody(
                key: name, admin: scopes.contains(.admin), serverAPIApps: apple.serverAPI.keys.sorted(),
                entitlements: Set(policy.products.values.flatMap(\.entitlements)).sorted()))
    }

    /// `GET /v1/console/customers?orderId=…[&bundleId=…]`: Look Up Order ID at each app with
    /// `serverAPI` (or the named one), its verified transactions, and the customers owning them.
    /// A transaction the ledger does not hold yet is ingested (source `backfill`, with the
    /// subscription's backfill job), so its customer is found through its appAccountToken and
    /// the ledger learns what Apple's notifications may not have brought.
    func searchByOrder(_ request: Request, orderId: String, actor: String) async throws -> Response {
        guard request.query["q"] == nil, request.query["after"] == nil else {
            throw HTTPError(.invalidRequest, "orderId cannot be combined with q or after")
        }
        guard AppleCalls.isAppleId(orderId) else { throw HTTPError(.invalidRequest, "orderId is 1…64 letters and digits") }
        let clients: [(bundleId: String, client: AppStoreServerAPIClient)]
        if request.query["bundleId"] != nil {
            clients = [try apple.client(request)]
        } else {
            clients = apple.serverAPI.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            guard !clients.isEmpty else { throw AppleCalls.serverAPINotConfigured(nil) }
        }
        let store = auditor.consoleStore
        var audit = SupportAudit(action: "order_lookup", subject: orderId, actor: actor)
        audit.detail["bundleIds"] = clients.map(\.bundleId).joined(separator: ",")
        return try await auditor.audited(&audit, store: store) { audit in
            var order = OrderSearchBody.Order(orderId: orderId, status: "invalid", transactions: [])
            for (bundleId, client) in clients {
                let lookup = try await apple.call { () async throws(ServerAPIError) in try await client.lookUpOrderId(orderId) }
                if lookup.status == .valid { order.status = "valid" }
                for signed in lookup.transactions.prefix(Self.maxOrderTransactions) {
                    order.transactions.append(try await orderTransaction(signed, bundleId: bundleId, store: store))
                }
            }
            let customers = try await Problems.consoleRead {
                try await store.exactCustomers(order.transactions.compactMap(\.appUserId))
            }
            audit.detail["status"] = order.status
            audit.appUserIds = customers.map(\.appUserId)
            return try .json(
                OrderSearchBody(
                    customers: customers.map(CustomerSearchBody.Item.init), order: order))
        }
    }

    /// One transaction of an order: ingested when the ledger lacks it, then its owner.
    func orderTransaction(
        _ signed: Signed<JWSTransactionDecodedPayload>, bundleId: String, store: any ConsoleStore
    ) async throws -> OrderSearchBody.Transaction {
        let payload = signed.payload
        let ids = [payload.transactionId, payload.originalTransactionId].compactMap { $0 }
        var learned = false
        if let transactionId = payload.transactionId,
            try await Problems.consoleRead({ try await store.knownTransactions([transactionId]) }).isEmpty,
            let app = configuration.app(bundleId: bundleId)
        {
            let now = clock.nowMilliseconds()
            do throws(IngestError) {
                try await ingest.enqueueBackfillIfUnseen(
                    app: app, payload.originalTransactionId, environment: Environment(payload.environment), source: .client, now: now)
                _ = try await ingest.transaction(signed.jws, source: .backfill, claim: nil, now: now)
                learned = true
            } catch {
                // Verified by Apple's client but refused by the app's mapping (an unconfigured
                // product, say): shown, not stored.
                if case .storage(let failure) = error { throw Problems.storage(failure) }
            }
        }
        let owner = try await Problems.consoleRead { try await store.exactCustomers(ids) }.first
        return OrderSearchBody.Transaction(
            bundleId: bundleId, environment: payload.environment?.rawValue, transactionId: payload.transactionId,
            originalTransactionId: payload.originalTransactionId, productId: payload.productId,
            purchaseDate: payload.purchaseDate,
            appUserId: owner.flatMap { UnlinkedSubscription.isKey($0.appUserId) ? nil : $0.appUserId }, learned: learned)
    }
}

/// A support action being recorded: `detail` is its parameters and outcome, flat strings.
struct SupportAudit {
    var action: String
    var subject: String
    var actor: String
    var detail: [String: String] = [:]
    /// The customers it concerned.
    var appUserIds: [String] = []
}

/// `GET /v1/console/session`.
struct SessionBody: Encodable {
    var key: String
    var admin: Bool
    var serverAPIApps: [String]
    /// Every entitlement a configured product gives: what a promotional grant may give.
    var entitlements: [String]
}

/// `GET /v1/console/customers?orderId=…`: the customers found and what Apple said of the order.
struct OrderSearchBody: Encodable {
    struct Transaction: Encodable {
        var bundleId: String
        var environment: String?
        var transactionId: String?
        var originalTransactionId: String?
        var productId: String?
        /// Epoch ms; encoded as ISO 8601.
        var purchaseDate: Int64?
        /// The customer owning it here; null when the ledger links it to nobody.
        var appUserId: String?
        /// Whether this lookup brought it into the ledger.
        var learned: Bool

        enum Key: CodingKey {
            case bundleId, environment, transactionId, originalTransactionId, productId, purchaseDate, appUserId, learned
        }

        func encode(to encoder: any Encoder) throws {
            var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
            try c.put(bundleId, .bundleId)
            try c.put(environment, .environment)
            try c.put(transactionId, .transactionId)
            try c.put(originalTransactionId, .originalTransactionId)
            try c.put(productId, .productId)
            try c.date(purchaseDate, .purchaseDate)
            try c.put(appUserId, .appUserId)
            try c.put(learned, .learned)
        }
    }
    struct Order: Encodable {
        var orderId: String
        /// Apple's status: `valid` (some app knows the order) or `invalid`.
        var status: String
        var transactions: [Transaction]
    }

    var customers: [CustomerSearchBody.Item]
    var order: Order

    enum CodingKeys: CodingKey { case customers, nextAfter, order }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(customers, forKey: .customers)
        try c.encodeNil(forKey: .nextAfter)
        try c.encode(order, forKey: .order)
    }
}

/// One support action on the customer page.
struct SupportActionBody: Encodable {
    var action: String
    var subject: String
    /// The API key's name ("" when unknown).
    var actor: String
    var at: String
    var detail: [String: String]

    init(_ action: SupportAction) {
        self.action = action.action
        subject = action.subject
        actor = action.actor ?? ""
        at = ISO8601.format(milliseconds: action.recordedAt)
        detail = (try? JSONDecoder().decode([String: String].self, from: Data(action.detail.utf8))) ?? [:]
    }
}
