import AppStore
import AppStoreServerAPI
import Entitlements
import Foundation
import HTTPServer
import Storage

/// Support and operations endpoints (admin scope): questions the server answers by asking Apple's
/// App Store Server API (docs/openapi.yaml, "Support"), and the durable jobs' state.
struct SupportRoutes: Sendable {
    let gate: AccessGate
    let apple: AppleCalls
    let auditor: SupportAuditor
    let ledger: FactLedger
    let answers: CustomerAnswers
    let clock: any EpochClock

    /// Durable jobs (backfills).
    var jobs: any DurableJobStore { ledger.store }
    /// Consent as the backend recorded it.
    var consents: any ConsentStore { ledger.store }

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/jobs") { try await routes.listJobs($0) }
        router.get("/v1/apple/orders/{orderId}") { try await routes.lookUpOrder($0) }
        router.get("/v1/subscriptions/{originalTransactionId}/refunds") { try await routes.refunds($0) }
        router.post("/v1/subscriptions/{originalTransactionId}/extend") { try await routes.extend($0) }
        router.post("/v1/apps/{bundleId}/extend") { try await routes.massExtend($0) }
        router.get("/v1/apps/{bundleId}/extend/{productId}/{requestIdentifier}") { try await routes.massExtendStatus($0) }
        router.post("/v1/apps/{bundleId}/test-notification") { try await routes.testNotification($0) }
        router.post("/v1/transactions/{transactionId}/consumption") { try await routes.consumption($0) }
        router.add(.put, "/v1/customers/{appUserId}/consent", .async { try await routes.putConsent($0) })
    }

    /// `GET /v1/jobs?status=…&limit=…`: durable jobs, newest first.
    func listJobs(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        var status: DurableJobStatus?
        if let text = request.query["status"] {
            guard let parsed = DurableJobStatus(rawValue: text) else {
                throw HTTPError(.invalidRequest, "status must be pending, running, done or failed")
            }
            status = parsed
        }
        let (_, limit) = try API.historyPaging(request)
        let list: [DurableJob]
        do {
            list = try await jobs.jobs(status: status, limit: limit)
        } catch {
            throw Problems.unavailable
        }
        return try .json(JobsBody(jobs: list.map(JobBody.init)))
    }

    /// `GET /v1/apple/orders/{orderId}?bundleId=…`: Look Up Order ID, with each transaction's
    /// customer when the ledger links it, and that customer's answer.
    func lookUpOrder(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        let orderId = try request.parameter("orderId")
        guard AppleCalls.isAppleId(orderId) else { throw HTTPError(.invalidRequest, "orderId is 1…64 letters and digits") }
        let store = auditor.consoleStore
        var audit = SupportAudit(action: "order_lookup", subject: orderId, actor: actor)
        return try await auditor.audited(&audit, store: store) { audit in
            let (bundleId, client) = try apple.client(request)
            audit.detail["bundleIds"] = bundleId
            return try await lookUpOrder(orderId, bundleId: bundleId, client: client, audit: &audit)
        }
    }

    private func lookUpOrder(
        _ orderId: String, bundleId: String, client: AppStoreServerAPIClient, audit: inout SupportAudit
    ) async throws -> Response {
        let lookup = try await apple.call { () async throws(ServerAPIError) in try await client.lookUpOrderId(orderId) }
        let now = clock.nowMilliseconds()
        var transactions: [[String: Any]] = []
        var customers: [String: Any] = [:]
        for signed in lookup.transactions {
            var item = try JSONSerialization.jsonObject(with: JSONEncoder.entitledDefault.encode(signed.payload)) as? [String: Any] ?? [:]
            if let otid = signed.payload.originalTransactionId,
                let record = try await Problems.store({ () async throws(StorageError) in try await ledger.subscription(originalTransactionId: otid) }),
                let appUserId = record.customer?.appUserId
            {
                item["appUserId"] = appUserId
                if customers[appUserId] == nil {
                    let context = EvaluationContext(
                        policy: answers.policy, environment: Environment(signed.payload.environment), now: now)
                    let answer = try await answers.answer(appUserId: appUserId, context: context).body
                    customers[appUserId] = try JSONSerialization.jsonObject(with: Data(answer))
                }
            }
            transactions.append(item)
        }
        audit.appUserIds = customers.keys.sorted()
        audit.detail["status"] = lookup.status == .valid ? "valid" : "invalid"
        let body: [String: Any] = [
            "orderId": orderId, "bundleId": bundleId, "status": Int(lookup.status?.rawValue ?? 1),
            "environment": lookup.environment.rawValue, "transactions": transactions, "customers": customers,
        ]
        return .json(bytes: Array(try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
    }

    /// `GET /v1/subscriptions/{originalTransactionId}/refunds`: Apple's refund history, every page.
    func refunds(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        let otid = try AppleCalls.originalTransactionId(request)
        let store = auditor.consoleStore
        var audit = SupportAudit(action: "refund_lookup", subject: otid, actor: actor)
        audit.appUserIds = try await auditor.owners(of: otid, store: store)
        return try await auditor.audited(&audit, store: store) { audit in
            let (bundleId, client) = try apple.client(request)
            audit.detail["bundleId"] = bundleId
            let refunds = try await refundHistory(otid, client: client)
            audit.detail["refunds"] = String(refunds.count)
            return try .json(RefundsBody(originalTransactionId: otid, refunds: refunds))
        }
    }

    /// Every page of Apple's refund history of `otid`.
    private func refundHistory(_ otid: String, client: AppStoreServerAPIClient) async throws -> [JWSTransactionDecodedPayload] {
        try await apple.call { () async throws(ServerAPIError) in try await client.refundHistoryAllPages(otid) }.map(\.payload)
    }

    /// The body of the extend endpoints: Apple's limits checked here, before anything is sent.
    struct ExtendBody: Decodable {
        var days: Int
        var reason: Int
        var requestIdentifier: String
        /// Mass extension only.
        var productId: String?
        var storefrontCountryCodes: [String]?

        /// Apple's `extendReasonCode` (0…3, checked by ``checked(mass:)``).
        var reasonCode: ExtendReasonCode { .init(rawValue: Int32(reason)) }

        func checked(mass: Bool) throws -> ExtendBody {
            guard (1...90).contains(days) else { throw HTTPError(.invalidRequest, "days must be 1…90") }
            guard (0...3).contains(reason) else { throw HTTPError(.invalidRequest, "reason must be 0…3") }
            guard (1...128).contains(requestIdentifier.utf8.count) else {
                throw HTTPError(.invalidRequest, "requestIdentifier must be 1…128 bytes")
            }
            if mass {
                guard let productId, (1...200).contains(productId.utf8.count) else {
                    throw HTTPError(.invalidRequest, "productId is required (1…200 bytes)")
                }
                guard (storefrontCountryCodes ?? []).count <= 300 else { throw HTTPError(.invalidRequest, "too many storefrontCountryCodes") }
            }
            return self
        }
    }

    /// `POST /v1/subscriptions/{originalTransactionId}/extend`: Extend a Subscription Renewal Date.
    func extend(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        let otid = try AppleCalls.originalTransactionId(request)
        let store = auditor.consoleStore
        var audit = SupportAudit(action: "extend", subject: otid, actor: actor)
        audit.appUserIds = try await auditor.owners(of: otid, store: store)
        return try await auditor.audited(&audit, store: store) { audit in
            let body = try RequestInput.decode(ExtendBody.self, request).checked(mass: false)
            audit.detail["days"] = String(body.days)
            audit.detail["reason"] = String(body.reason)
            audit.detail["requestIdentifier"] = body.requestIdentifier
            let (bundleId, client) = try apple.client(request)
            audit.detail["bundleId"] = bundleId
            let answer = try await apple.call { () async throws(ServerAPIError) in
                try await client.extendRenewalDate(
                    originalTransactionId: otid, days: Int32(body.days), reason: body.reasonCode,
                    requestIdentifier: body.requestIdentifier)
            }
            audit.detail["effectiveDate"] = answer.effectiveDate.map(ISO8601.format(milliseconds:))
            return try .json(answer)
        }
    }

    /// `POST /v1/apps/{bundleId}/extend`: extend every active subscriber of a product (mass).
    func massExtend(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let (_, client) = try apple.client(request, bundleId: try request.parameter("bundleId"))
        let body = try RequestInput.decode(ExtendBody.self, request).checked(mass: true)
        let answer = try await apple.call { () async throws(ServerAPIError) in
            try await client.massExtendRenewalDate(
                MassExtendRenewalDateRequest(
                    extendByDays: Int32(body.days), extendReasonCode: body.reasonCode,
                    requestIdentifier: body.requestIdentifier, storefrontCountryCodes: body.storefrontCountryCodes,
                    productId: body.productId))
        }
        return try .json(answer, status: 202)
    }

    /// `GET /v1/apps/{bundleId}/extend/{productId}/{requestIdentifier}`: a mass extension's status.
    func massExtendStatus(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let (_, client) = try apple.client(request, bundleId: try request.parameter("bundleId"))
        let productId = try request.parameter("productId")
        let requestIdentifier = try request.parameter("requestIdentifier")
        return try .json(
            try await apple.call { () async throws(ServerAPIError) in
                try await client.massExtensionStatus(productId: productId, requestIdentifier: requestIdentifier)
            })
    }

    /// `POST /v1/apps/{bundleId}/test-notification`: asks Apple for a TEST notification, then asks
    /// Apple how sending it went and the ledger whether it arrived here.
    func testNotification(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let (bundleId, client) = try apple.client(request, bundleId: try request.parameter("bundleId"))
        let token = try await apple.call { () async throws(ServerAPIError) in try await client.requestTestNotification() }
        let status = try? await client.testNotificationStatus(token)
        let attempts = status?.sendAttempts ?? []
        // Apple's "success" only says some server at the configured URL answered 200; the ledger
        // says whether this one committed it.
        var arrivedAt: Int64?
        if let uuid = status?.notification.payload.notificationUUID {
            arrivedAt = try await Problems.store { () async throws(StorageError) in
                try await ledger.notificationReceivedAt(notificationUUID: uuid)
            }
        }
        return try .json(
            TestNotificationBody(
                bundleId: bundleId, testNotificationToken: token, notificationUUID: status?.notification.payload.notificationUUID,
                arrived: arrivedAt != nil, arrivedAt: arrivedAt,
                attempts: attempts.map { .init(date: $0.attemptDate, result: $0.sendAttemptResult?.rawValue) }))
    }

    /// `POST /v1/transactions/{transactionId}/consumption[?bundleId=…]`: Apple's Send Consumption
    /// Information (v2) body, forwarded.
    func consumption(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let transactionId = try request.parameter("transactionId")
        let information = try RequestInput.decode(ConsumptionRequestV2.self, request)
        guard information.customerConsented != nil, information.deliveryStatus != nil else {
            throw HTTPError(.invalidRequest, "customerConsented and deliveryStatus are required")
        }
        let (_, client) = try apple.client(request)
        try await apple.call { () async throws(ServerAPIError) in
            try await client.sendConsumptionInformation(transactionId: transactionId, information)
        }
        return try .json(["sent": true], status: 202)
    }
}

/// `GET /v1/jobs`.
struct JobsBody: Encodable {
    var jobs: [JobBody]
}

/// One durable job; dates as ISO 8601 like every other answer, `lastError` `null` when none.
struct JobBody: Encodable {
    var job: DurableJob

    init(_ job: DurableJob) { self.job = job }

    enum Key: String, CodingKey {
        case id, kind, bundleId, subject, status, attempts, runAt, lastError, createdAt, updatedAt
    }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(job.id, .id)
        try c.put(job.kind, .kind)
        try c.put(job.bundleId, .bundleId)
        try c.put(job.subject, .subject)
        try c.put(job.status.rawValue, .status)
        try c.put(job.attempts, .attempts)
        try c.date(job.runAt, .runAt)
        try c.put(job.lastError, .lastError)
        try c.date(job.createdAt, .createdAt)
        try c.date(job.updatedAt, .updatedAt)
    }
}

struct RefundsBody: Encodable {
    var originalTransactionId: String
    var refunds: [JWSTransactionDecodedPayload]
}

/// `POST /v1/apps/{bundleId}/test-notification`.
struct TestNotificationBody: Encodable {
    struct Attempt: Encodable {
        var date: Int64?
        var result: String?

        func encode(to encoder: any Encoder) throws {
            var c = NullEncoding(container: encoder.container(keyedBy: AttemptKey.self))
            try c.date(date, .date)
            try c.put(result, .result)
        }
    }
    enum AttemptKey: String, CodingKey { case date, result }
    enum Key: String, CodingKey { case bundleId, testNotificationToken, notificationUUID, arrived, arrivedAt, attempts }

    var bundleId: String
    var testNotificationToken: String
    var notificationUUID: String?
    var arrived: Bool
    var arrivedAt: Int64?
    var attempts: [Attempt]

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(bundleId, .bundleId)
        try c.put(testNotificationToken, .testNotificationToken)
        try c.put(notificationUUID, .notificationUUID)
        try c.put(arrived, .arrived)
        try c.date(arrivedAt, .arrivedAt)
        try c.put(attempts, .attempts)
    }
}
