import AppStore
import EntitledCrypto
import Foundation
import HTTPServer

/// An App Store Connect API key the fake Server API accepts (the public half of a `.p8` key).
public struct APIKey: Sendable {
    /// The key id (`kid` in the JWT header).
    public var keyId: String
    /// The issuer id (`iss` claim).
    public var issuerId: String
    /// The public half of the `.p8` key.
    public var publicKey: P256PublicKey

    /// A key accepted for tokens with header `kid` = `keyId` and claim `iss` = `issuerId`.
    public init(keyId: String, issuerId: String, publicKey: P256PublicKey) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.publicKey = publicKey
    }
}

/// Why a bearer token was refused (reported in the 401 body for debugging; Apple says only "Unauthenticated").
public struct APIAuthenticationError: Error, Sendable, Hashable {
    /// Why the token was refused.
    public var reason: String
}

/// Checks App Store Server API bearer tokens as Apple does: ES256 JWT, header `kid` of a known key,
/// claims `iss` matching that key's issuer, `aud` = `appstoreconnect-v1`, `bid` = the app's bundle id,
/// `exp` in the future and at most 60 minutes after `iat`, signature valid.
public struct APITokenVerifier: Sendable {
    /// The accepted keys.
    public var keys: [APIKey]
    /// The app's bundle identifier.
    public var bundleId: String

    /// Accepts tokens signed by one of `keys` for the app `bundleId`.
    public init(keys: [APIKey], bundleId: String) {
        self.keys = keys
        self.bundleId = bundleId
    }

    struct Header: Decodable {
        var alg: String?
        var kid: String?
        var typ: String?
    }

    struct Claims: Decodable {
        var iss: String?
        var iat: Int64?
        var exp: Int64?
        var aud: String?
        var bid: String?
    }

    /// Why `authorization` is refused at `nowSeconds`, or nil when it is accepted.
    public func failureReason(authorization: String?, nowSeconds: Int64) -> String? {
        do {
            try verify(authorization: authorization, nowSeconds: nowSeconds)
            return nil
        } catch {
            return error.reason
        }
    }

    /// Verifies `authorization` (`Bearer <jwt>`) at `nowSeconds`.
    public func verify(authorization: String?, nowSeconds: Int64) throws(APIAuthenticationError) {
        guard let authorization, authorization.hasPrefix("Bearer ") else { throw APIAuthenticationError(reason: "no bearer token") }
        let token = authorization.dropFirst("Bearer ".count)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64.urlDecode(parts[0]), let claimBytes = Base64.urlDecode(parts[1]),
            let signature = Base64.urlDecode(parts[2])
        else { throw APIAuthenticationError(reason: "not a compact JWT") }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes))
        else { throw APIAuthenticationError(reason: "header or claims are not JSON objects") }
        guard header.alg == "ES256" else { throw APIAuthenticationError(reason: "alg is not ES256") }
        guard let key = keys.first(where: { $0.keyId == header.kid }) else { throw APIAuthenticationError(reason: "unknown kid") }
        guard claims.iss == key.issuerId else { throw APIAuthenticationError(reason: "iss does not match the key's issuer") }
        guard claims.aud == "appstoreconnect-v1" else { throw APIAuthenticationError(reason: "aud is not appstoreconnect-v1") }
        guard claims.bid == bundleId else { throw APIAuthenticationError(reason: "bid is not the app's bundle id") }
        guard let exp = claims.exp else { throw APIAuthenticationError(reason: "no exp") }
        guard exp > nowSeconds else { throw APIAuthenticationError(reason: "expired") }
        if let iat = claims.iat, exp - iat > 3600 { throw APIAuthenticationError(reason: "exp more than 60 minutes after iat") }
        let signingInput = Array(token[..<token.lastIndex(of: ".")!].utf8)
        guard signature.count == 64, key.publicKey.isValidES256Signature(raw: signature, for: signingInput) else {
            throw APIAuthenticationError(reason: "bad signature")
        }
    }
}

/// A fake App Store Server API backed by a ``Simulator``, under Apple's paths:
///
/// - `GET /inApps/v1/transactions/{transactionId}`
/// - `GET /inApps/v2/history/{transactionId}?revision&sort&productId&revoked` (20 per page)
/// - `GET /inApps/v1/subscriptions/{transactionId}?status=`
/// - `POST /inApps/v1/notifications/history?paginationToken=` with `onlyFailures` (20 per page)
/// - `POST /inApps/v1/notifications/test`, `GET /inApps/v1/notifications/test/{testNotificationToken}`
/// - `GET /inApps/v2/refund/lookup/{transactionId}?revision`
/// - `GET /inApps/v1/lookup/{orderId}` (an order id per purchased transaction: ``Simulator/orderId(ofTransaction:)``)
/// - `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`, `POST /inApps/v1/subscriptions/extend/mass`,
///   `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`
/// - `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`
/// - `PUT /inApps/v1/transactions/consumption/{transactionId}` and `/inApps/v2/…` (recorded, 202)
/// - `GET /inApps/v1/transactions/appTransactions/{transactionId}`
/// - `POST /inApps/v1/transactions/{transactionId}/finish` (recorded: ``Simulator/finishedTransactions``)
/// - the Retention Messaging API (``registerRetentionMessaging(_:_:)``)
///
/// ``Simulator/throttleServerAPI(requests:retryAfterSeconds:)`` makes the next calls answer 429.
/// Every request needs a valid bearer token (``APITokenVerifier``), checked against the virtual clock.
/// Errors answer Apple's `{errorCode, errorMessage}`.
public enum FakeServerAPI {
    /// Items per page of transaction and notification history, as Apple.
    public static let pageSize = 20

    struct Failure: Error {
        var status: Int
        var code: APIErrorCode
        var message: String
    }

    /// Adds the Server API routes to `router`.
    public static func register(_ simulator: Simulator, keys: [APIKey], on router: inout Router) {
        let verifier = APITokenVerifier(keys: keys, bundleId: simulator.bundleId)
        func route(_ method: HTTPMethod, _ path: String, _ body: @escaping @Sendable (Request) async throws -> Response) {
            router.add(
                method, path,
                .async { request in
                    if let reason = verifier.failureReason(
                        authorization: request.headers["Authorization"], nowSeconds: simulator.now / 1000)
                    {
                        return Response(
                            status: 401, headers: ["Content-Type": "text/plain; charset=utf-8"],
                            body: Array("Unauthenticated (\(reason))".utf8))
                    }
                    if let retryAfter = await simulator.takeServerAPIThrottle() {
                        return try rateLimited(retryAfterSeconds: retryAfter)
                    }
                    do {
                        return try await body(request)
                    } catch let failure as Failure {
                        return try .json(
                            APIErrorResponse(errorCode: failure.code, errorMessage: failure.message), status: failure.status)
                    }
                })
        }
        route(.get, "/inApps/v1/transactions/{transactionId}") { request in
            let id = try request.parameter("transactionId")
            guard let signed = try await simulator.signedTransaction(id) else {
                throw Failure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found.")
            }
            return try .json(TransactionInfoResponse(signedTransactionInfo: signed))
        }
        route(.get, "/inApps/v1/lookup/{orderId}") { request in
            // An unknown order id is not an error for Apple: status 1 (invalid) and no transactions.
            try .json(try await simulator.orderLookup(try request.parameter("orderId")))
        }
        route(.get, "/inApps/v2/history/{transactionId}") { request in
            let id = try request.parameter("transactionId")
            let start = try decodeToken(request.query["revision"])
            let descending = request.query["sort"] == "DESCENDING"
            let revoked = request.query["revoked"].map { $0 == "true" }
            guard let page = try await simulator.transactionHistory(
                id, from: start, descending: descending, productId: request.query["productId"], revoked: revoked)
            else { throw Failure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found.") }
            return try .json(page)
        }
        route(.get, "/inApps/v1/subscriptions/{transactionId}") { request in
            let id = try request.parameter("transactionId")
            let statuses = request.query["status"].map { $0.split(separator: ",").compactMap { Int32($0) } }
            guard let response = try await simulator.subscriptionStatuses(id, statuses: statuses) else {
                throw Failure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found.")
            }
            return try .json(response)
        }
        route(.post, "/inApps/v1/notifications/history") { request in
            guard let filter = try? JSONDecoder().decode(NotificationHistoryRequest.self, from: Data(request.body)),
                let startDate = filter.startDate, let endDate = filter.endDate
            else { throw Failure(status: 400, code: .generalBadRequest, message: "startDate and endDate are required.") }
            guard startDate <= endDate else {
                throw Failure(status: 400, code: .startDateAfterEndDate, message: "startDate is after endDate.")
            }
            if filter.transactionId != nil && filter.notificationType != nil {
                throw Failure(status: 400, code: .multipleFiltersSupplied, message: "Use notificationType or transactionId.")
            }
            let start = try decodeToken(request.query["paginationToken"])
            return try .json(await simulator.notificationHistory(filter, from: start))
        }
        route(.post, "/inApps/v1/notifications/test") { _ in
            let token = try await simulator.requestTestNotification()
            return try .json(SendTestNotificationResponse(testNotificationToken: token))
        }
        route(.get, "/inApps/v1/notifications/test/{token}") { request in
            guard let response = await simulator.testNotificationStatus(try request.parameter("token")) else {
                throw Failure(status: 404, code: .testNotificationNotFound, message: "Test notification not found.")
            }
            return try .json(response)
        }
        registerMore(simulator, route)
        registerAppTransactionAndConsumptionV2(simulator, route)
        registerRetentionMessaging(simulator, route)
    }

    /// Adds the write endpoints and refund lookup (split out to keep ``register(_:keys:on:)`` readable).
    static func registerMore(
        _ simulator: Simulator,
        _ route: (HTTPMethod, String, @escaping @Sendable (Request) async throws -> Response) -> Void
    ) {
        route(.get, "/inApps/v2/refund/lookup/{transactionId}") { request in
            let id = try request.parameter("transactionId")
            let start = try decodeToken(request.query["revision"])
            guard let page = try await simulator.transactionHistory(id, from: start, descending: false, productId: nil, revoked: true)
            else { throw Failure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found.") }
            return try .json(RefundHistoryResponse(signedTransactions: page.signedTransactions, revision: page.revision, hasMore: page.hasMore))
        }
        route(.put, "/inApps/v1/subscriptions/extend/{originalTransactionId}") { request in
            let id = try request.parameter("originalTransactionId")
            guard let body = try? JSONDecoder().decode(ExtendRenewalDateRequest.self, from: Data(request.body)),
                let days = body.extendByDays
            else { throw Failure(status: 400, code: .generalBadRequest, message: "extendByDays is required.") }
            guard (1...90).contains(days) else {
                throw Failure(status: 400, code: .invalidExtendByDays, message: "extendByDays is 1 to 90.")
            }
            guard body.requestIdentifier?.isEmpty == false else {
                throw Failure(status: 400, code: .invalidRequestIdentifier, message: "requestIdentifier is required.")
            }
            return try await simulator.extendThroughAPI(id, days: Int(days))
        }
        route(.post, "/inApps/v1/subscriptions/extend/mass") { request in
            guard let body = try? JSONDecoder().decode(MassExtendRenewalDateRequest.self, from: Data(request.body)),
                let days = body.extendByDays, let productId = body.productId
            else { throw Failure(status: 400, code: .generalBadRequest, message: "extendByDays and productId are required.") }
            guard (1...90).contains(days) else {
                throw Failure(status: 400, code: .invalidExtendByDays, message: "extendByDays is 1 to 90.")
            }
            guard let requestIdentifier = body.requestIdentifier, !requestIdentifier.isEmpty else {
                throw Failure(status: 400, code: .invalidRequestIdentifier, message: "requestIdentifier is required.")
            }
            var action = ActionRequest("massExtendRenewal")
            action.product = productId
            action.days = Int(days)
            action.requestIdentifier = requestIdentifier
            action.storefronts = body.storefrontCountryCodes
            let sent: [SignedNotification]
            do {
                sent = try await simulator.perform(action)
            } catch let error as SimulatorError {
                throw Failure(status: 400, code: .invalidProductId, message: error.message)
            }
            let summary = sent.last?.payload.summary
            await simulator.recordMassExtension(
                MassExtendRenewalDateStatusResponse(
                    requestIdentifier: requestIdentifier, complete: true, completeDate: simulator.now,
                    succeededCount: summary?.succeededCount ?? 0, failedCount: summary?.failedCount ?? 0))
            return try .json(MassExtendRenewalDateResponse(requestIdentifier: requestIdentifier))
        }
        route(.get, "/inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}") { request in
            let id = try request.parameter("requestIdentifier")
            guard let status = await simulator.massExtensions[id] else {
                throw Failure(status: 404, code: .statusRequestNotFound, message: "No such mass extension request.")
            }
            return try .json(status)
        }
        route(.put, "/inApps/v1/transactions/{originalTransactionId}/appAccountToken") { request in
            let id = try request.parameter("originalTransactionId")
            guard let body = try? JSONDecoder().decode(UpdateAppAccountTokenRequest.self, from: Data(request.body)),
                let token = body.appAccountToken
            else { throw Failure(status: 400, code: .invalidAppAccountTokenUUID, message: "appAccountToken is required.") }
            do {
                try await simulator.apply { store, _ in
                    try store.setAppAccountToken(originalTransactionId: id, token: token)
                    return []
                }
            } catch let error as SimulatorError {
                switch error.code {
                case "FAMILY_SHARED": throw Failure(status: 400, code: .familyTransactionNotSupported, message: error.message)
                case "INVALID_APP_ACCOUNT_TOKEN": throw Failure(status: 400, code: .invalidAppAccountTokenUUID, message: error.message)
                default: throw Failure(status: 404, code: .transactionIdNotFound, message: error.message)
                }
            }
            return Response(status: 200)
        }
        route(.put, "/inApps/v1/transactions/consumption/{transactionId}") { request in
            let id = try request.parameter("transactionId")
            guard await simulator.store.transactions[id] != nil else {
                throw Failure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found.")
            }
            guard (try? JSONDecoder().decode(ConsumptionRequest.self, from: Data(request.body))) != nil else {
                throw Failure(status: 400, code: .generalBadRequest, message: "Invalid consumption information.")
            }
            await simulator.recordConsumptionInformation(id, body: request.body)
            return Response(status: 202)
        }
    }

    /// Page tokens are opaque to clients; here they are the base64 of an offset.
    static func encodeToken(_ offset: Int) -> String { Base64.encode(Array("o\(offset)".utf8)) }

    static func decodeToken(_ token: String?) throws -> Int {
        guard let token else { return 0 }
        guard let bytes = Base64.decode(token), let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix("o"),
            let offset = Int(text.dropFirst()), offset >= 0
        else { throw Failure(status: 400, code: .invalidPaginationToken, message: "Invalid pagination token.") }
        return offset
    }
}

extension Simulator {
    /// The app's bundle identifier.
    public nonisolated var bundleId: String { signer.bundleId }

    private func sign(_ transaction: JWSTransactionDecodedPayload) throws -> String {
        var copy = transaction
        copy.signedDate = now
        return try signer.signer.sign(copy)
    }

    /// The customer owning transaction `id`.
    func owner(ofTransaction id: String) -> String? {
        guard let tx = store.transactions[id] else { return nil }
        if let originalId = tx.originalTransactionId, let sub = store.subscriptions[originalId] { return sub.customerId }
        return store.oneTimeCustomer[id]
    }

    /// Transaction `id`, signed now.
    public func signedTransaction(_ id: String) throws -> String? {
        guard let tx = store.transactions[id] else { return nil }
        return try sign(tx)
    }

    /// The order id on the customer's emailed receipt for transaction `id`: each purchase and each
    /// renewal is billed as its own order, so one per transaction, derived from its id (Apple's are
    /// 10 upper-case letters and digits too).
    public nonisolated static func orderId(ofTransaction id: String) -> String {
        let number = UInt64(id) ?? UInt64(truncatingIfNeeded: id.utf8.reduce(5381) { ($0 &* 33) &+ Int($1) })
        return "M" + String(number % 2_821_109_907_456, radix: 36).uppercased()  // at most 9 base-36 digits
    }

    /// Look Up Order ID: the purchaser's transactions billed under `orderId` (family members' views
    /// are not orders), signed now; status 1 and none when it matches nothing.
    public func orderLookup(_ orderId: String) throws -> OrderLookupResponse {
        let ids = store.transactionOrder.filter { id in
            guard let tx = store.transactions[id], tx.inAppOwnershipType != .familyShared else { return false }
            return Self.orderId(ofTransaction: id) == orderId
        }
        guard !ids.isEmpty else { return OrderLookupResponse(status: .invalid, signedTransactions: []) }
        return OrderLookupResponse(status: .valid, signedTransactions: try ids.compactMap { try signedTransaction($0) })
    }

    /// One page of the customer's transaction history (the customer who owns `transactionId`).
    public func transactionHistory(
        _ transactionId: String, from offset: Int, descending: Bool, productId: String?, revoked: Bool?
    ) throws -> HistoryResponse? {
        guard let customer = owner(ofTransaction: transactionId) else { return nil }
        var ids = store.transactionOrder.filter { id in
            guard owner(ofTransaction: id) == customer, let tx = store.transactions[id] else { return false }
            if let productId, tx.productId != productId { return false }
            if let revoked, (tx.revocationDate != nil) != revoked { return false }
            return true
        }
        if descending { ids.reverse() }
        let page = ids.dropFirst(offset).prefix(FakeServerAPI.pageSize)
        let next = offset + page.count
        return HistoryResponse(
            revision: FakeServerAPI.encodeToken(next), hasMore: next < ids.count, bundleId: bundleId,
            appAppleId: store.environment == .production ? store.catalog.appAppleId : nil, environment: store.environment,
            signedTransactions: try page.compactMap { store.transactions[$0] }.map { try sign($0) })
    }

    /// Get All Subscription Statuses for the customer who owns `transactionId`.
    public func subscriptionStatuses(_ transactionId: String, statuses: [Int32]?) throws -> StatusResponse? {
        guard let customer = owner(ofTransaction: transactionId) else { return nil }
        var groups: [String: [LastTransactionsItem]] = [:]
        for sub in store.subscriptions.values.sorted(by: { $0.originalTransactionId < $1.originalTransactionId })
        where sub.customerId == customer {
            if let statuses, !statuses.contains(sub.state.status.rawValue) { continue }
            var renewal = store.renewalInfo(sub.originalTransactionId)
            renewal?.signedDate = now
            groups[sub.groupId, default: []].append(
                LastTransactionsItem(
                    status: sub.state.status, originalTransactionId: sub.originalTransactionId,
                    signedTransactionInfo: try store.transactions[sub.latestTransactionId].map(sign),
                    signedRenewalInfo: try renewal.map { try signer.signer.sign($0) }))
        }
        return StatusResponse(
            environment: store.environment, bundleId: bundleId,
            appAppleId: store.environment == .production ? store.catalog.appAppleId : nil,
            data: groups.keys.sorted().map { SubscriptionGroupIdentifierItem(subscriptionGroupIdentifier: $0, lastTransactions: groups[$0]) })
    }

    /// One page of notification history, filtered as Apple's Get Notification History.
    public func notificationHistory(_ filter: NotificationHistoryRequest, from offset: Int) async -> NotificationHistoryResponse {
        let customer = filter.transactionId.flatMap { owner(ofTransaction: $0) }
        let records = await sender.history(onlyFailures: filter.onlyFailures == true).filter { record in
            guard record.signedDate >= (filter.startDate ?? .min), record.signedDate < (filter.endDate ?? .max) else { return false }
            if let type = filter.notificationType, record.notificationType != type.rawValue { return false }
            if let subtype = filter.notificationSubtype, record.subtype != subtype.rawValue { return false }
            if filter.transactionId != nil, record.customerId == nil || record.customerId != customer { return false }
            return true
        }
        let page = records.dropFirst(offset).prefix(FakeServerAPI.pageSize)
        let next = offset + page.count
        return NotificationHistoryResponse(
            paginationToken: next < records.count ? FakeServerAPI.encodeToken(next) : nil, hasMore: next < records.count,
            notificationHistory: page.map { record in
                NotificationHistoryResponseItem(signedPayload: record.signedPayload, sendAttempts: record.attempts.map(Self.sendAttempt))
            })
    }

    static func sendAttempt(_ attempt: DeliveryAttempt) -> SendAttemptItem {
        let result: SendAttemptResult
        if attempt.succeeded {
            result = .success
        } else if attempt.httpStatus != nil {
            result = .unsuccessfulHTTPResponseCode
        } else if attempt.error?.lowercased().contains("timed out") == true {
            result = .timedOut
        } else {
            result = .noResponse
        }
        return SendAttemptItem(attemptDate: attempt.date, sendAttemptResult: result)
    }

    /// Extend a Subscription Renewal Date for one original transaction: `RENEWAL_EXTENDED`, and Apple's answer.
    func extendThroughAPI(_ originalTransactionId: String, days: Int) async throws -> Response {
        guard let sub = store.subscriptions[originalTransactionId] else {
            throw FakeServerAPI.Failure(status: 404, code: .originalTransactionIdNotFound, message: "Original transaction id not found.")
        }
        if sub.isFamilyShared {
            throw FakeServerAPI.Failure(
                status: 403, code: .familySharedSubscriptionExtensionIneligible, message: "Family-shared subscriptions cannot be extended.")
        }
        guard sub.state == .active else {
            throw FakeServerAPI.Failure(status: 403, code: .subscriptionExtensionIneligible, message: "The subscription is not active.")
        }
        var action = ActionRequest("extendRenewal")
        action.customer = sub.customerId
        action.product = sub.productId
        action.days = days
        let sent = try await perform(action)
        let effective = store.subscriptions[originalTransactionId]?.expiresDate
        let tx = store.transactions[store.subscriptions[originalTransactionId]?.latestTransactionId ?? ""]
        return try .json(
            ExtendRenewalDateResponse(
                originalTransactionId: originalTransactionId, webOrderLineItemId: tx?.webOrderLineItemId, success: !sent.isEmpty,
                effectiveDate: effective))
    }

    /// Sends a `TEST` notification now and returns its token (its notificationUUID).
    public func requestTestNotification() async throws -> String {
        let sent = try await perform(ActionRequest("test"))
        return sent.first?.payload.notificationUUID ?? ""
    }

    /// The test notification's payload and delivery attempts.
    public func testNotificationStatus(_ token: String) async -> CheckTestNotificationResponse? {
        guard let record = await sender.history().first(where: { $0.notificationUUID == token && $0.notificationType == "TEST" })
        else { return nil }
        return CheckTestNotificationResponse(signedPayload: record.signedPayload, sendAttempts: record.attempts.map(Self.sendAttempt))
    }
}
