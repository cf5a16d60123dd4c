import AppStore

/// The endpoints of the App Store Server API (as of 2026), under Apple's paths.
///
/// `environment` nil means the configured environment, with the Sandbox fallback for transaction
/// lookups; pass one to ask exactly that environment (the next page of a Sandbox answer, say).
extension AppStoreServerAPIClient {
    /// The most pages a `…AllPages` helper follows before failing (1000 pages of 20); a repeated
    /// `revision` fails at once (``PageTrail``).
    public static let maxPages = 1000

    // MARK: Transactions

    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}`.
    public func transactionInfo(
        _ transactionId: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> Signed<JWSTransactionDecodedPayload> {
        let path = "/inApps/v1/transactions/" + (try Self.segment(transactionId, name: "transactionId"))
        let response = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            try decode(TransactionInfoResponse.self, from: try await send("GET", path, environment: environment))
        }
        guard let jws = response.signedTransactionInfo else { throw .invalidResponse(message: "no signedTransactionInfo") }
        return try await verified(jws)
    }

    /// Get Transaction History (v2): `GET /inApps/v2/history/{transactionId}?revision=…`, one page of up to 20.
    public func transactionHistory(
        _ transactionId: String, revision: String? = nil, query: TransactionHistoryQuery = TransactionHistoryQuery(),
        environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> TransactionPage {
        let path = "/inApps/v2/history/" + (try Self.segment(transactionId, name: "transactionId"))
        var items = query.items
        if let revision { items.append(("revision", revision)) }
        let (response, served) = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            (try decode(HistoryResponse.self, from: try await send("GET", path, query: items, environment: environment)), environment)
        }
        return TransactionPage(
            transactions: try await verified(response.signedTransactions), revision: response.revision,
            hasMore: response.hasMore ?? false, environment: served)
    }

    /// Every page of a customer's transaction history, in order.
    public func transactionHistoryAllPages(
        _ transactionId: String, query: TransactionHistoryQuery = TransactionHistoryQuery(), environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> [Signed<JWSTransactionDecodedPayload>] {
        var trail = PageTrail(maxPages: Self.maxPages)
        var page = try await transactionHistory(transactionId, query: query, environment: environment)
        var all = page.transactions
        while let revision = try trail.next(hasMore: page.hasMore, token: page.revision) {
            page = try await transactionHistory(transactionId, revision: revision, query: query, environment: page.environment)
            all += page.transactions
        }
        return all
    }

    /// Look Up Order ID: `GET /inApps/v1/lookup/{orderId}` (the id on the customer's receipt email).
    public func lookUpOrderId(_ orderId: String, environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) -> OrderLookup {
        let path = "/inApps/v1/lookup/" + (try Self.segment(orderId, name: "orderId"))
        let served = environment ?? settings.environment
        let response = try decode(OrderLookupResponse.self, from: try await send("GET", path, environment: served))
        return OrderLookup(status: response.status, transactions: try await verified(response.signedTransactions), environment: served)
    }

    /// Get Refund History (v2): `GET /inApps/v2/refund/lookup/{transactionId}?revision=…`, one page.
    public func refundHistory(
        _ transactionId: String, revision: String? = nil, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> TransactionPage {
        let path = "/inApps/v2/refund/lookup/" + (try Self.segment(transactionId, name: "transactionId"))
        let query = revision.map { [("revision", $0)] } ?? []
        let (response, served) = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            (try decode(RefundHistoryResponse.self, from: try await send("GET", path, query: query, environment: environment)), environment)
        }
        return TransactionPage(
            transactions: try await verified(response.signedTransactions), revision: response.revision,
            hasMore: response.hasMore ?? false, environment: served)
    }

    /// Every page of Get Refund History, in order.
    public func refundHistoryAllPages(
        _ transactionId: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> [Signed<JWSTransactionDecodedPayload>] {
        var trail = PageTrail(maxPages: Self.maxPages)
        var page = try await refundHistory(transactionId, environment: environment)
        var all = page.transactions
        while let revision = try trail.next(hasMore: page.hasMore, token: page.revision) {
            page = try await refundHistory(transactionId, revision: revision, environment: page.environment)
            all += page.transactions
        }
        return all
    }

    /// Get App Transaction Info: `GET /inApps/v1/transactions/appTransactions/{transactionId}`.
    public func appTransactionInfo(
        _ transactionId: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> Signed<AppTransaction> {
        let path = "/inApps/v1/transactions/appTransactions/" + (try Self.segment(transactionId, name: "transactionId"))
        let response = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            try decode(AppTransactionInfoResponse.self, from: try await send("GET", path, environment: environment))
        }
        guard let jws = response.signedAppTransactionInfo else { throw .invalidResponse(message: "no signedAppTransactionInfo") }
        return try await verified(jws)
    }

    /// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`.
    public func setAppAccountToken(
        originalTransactionId: String, appAccountToken: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) {
        let path = "/inApps/v1/transactions/" + (try Self.segment(originalTransactionId, name: "originalTransactionId")) + "/appAccountToken"
        let body = try encode(UpdateAppAccountTokenRequest(appAccountToken: appAccountToken))
        _ = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            try await send("PUT", path, body: body, environment: environment)
        }
    }

    /// Finish Transaction: `POST /inApps/v1/transactions/{transactionId}/finish` — tells Apple the
    /// server delivered the purchase, as `Transaction.finish()` does on the device (for servers
    /// that manage entitlements). Finishing a finished transaction again succeeds.
    public func finishTransaction(_ transactionId: String, environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) {
        let path = "/inApps/v1/transactions/" + (try Self.segment(transactionId, name: "transactionId")) + "/finish"
        _ = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            try await send("POST", path, environment: environment)
        }
    }

    // MARK: Subscriptions

    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}?status=…`.
    public func subscriptionStatuses(
        _ transactionId: String, statuses: [SubscriptionStatus] = [], environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> SubscriptionStatuses {
        let path = "/inApps/v1/subscriptions/" + (try Self.segment(transactionId, name: "transactionId"))
        let query = statuses.map { ("status", String($0.rawValue)) }
        let (response, served) = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            (try decode(StatusResponse.self, from: try await send("GET", path, query: query, environment: environment)), environment)
        }
        var subscriptions: [SubscriptionStatuses.Subscription] = []
        for group in response.data ?? [] {
            for item in group.lastTransactions ?? [] {
                subscriptions.append(
                    SubscriptionStatuses.Subscription(
                        subscriptionGroupIdentifier: group.subscriptionGroupIdentifier,
                        originalTransactionId: item.originalTransactionId, status: item.status,
                        transaction: try await item.signedTransactionInfo.asyncMap { jws async throws(ServerAPIError) in
                            try await verified(jws)
                        },
                        renewalInfo: try await item.signedRenewalInfo.asyncMap { jws async throws(ServerAPIError) in
                            try await verified(jws)
                        }))
            }
        }
        return SubscriptionStatuses(subscriptions: subscriptions, environment: served)
    }

    /// Extend a Subscription Renewal Date: `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`.
    /// `days` 1–90; `requestIdentifier` (a UUID) makes the call idempotent.
    public func extendRenewalDate(
        originalTransactionId: String, days: Int32, reason: ExtendReasonCode, requestIdentifier: String,
        environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> ExtendRenewalDateResponse {
        let path = "/inApps/v1/subscriptions/extend/" + (try Self.segment(originalTransactionId, name: "originalTransactionId"))
        let body = try encode(ExtendRenewalDateRequest(extendByDays: days, extendReasonCode: reason, requestIdentifier: requestIdentifier))
        return try await lookup(environment) { (environment) async throws(ServerAPIError) in
            try decode(ExtendRenewalDateResponse.self, from: try await send("PUT", path, body: body, environment: environment))
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: `POST /inApps/v1/subscriptions/extend/mass`.
    public func massExtendRenewalDate(
        _ request: MassExtendRenewalDateRequest, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> MassExtendRenewalDateResponse {
        let body = try encode(request)
        return try decode(
            MassExtendRenewalDateResponse.self,
            from: try await send("POST", "/inApps/v1/subscriptions/extend/mass", body: body, environment: environment))
    }

    /// Get Status of Subscription Renewal Date Extensions:
    /// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`.
    public func massExtensionStatus(
        productId: String, requestIdentifier: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> MassExtendRenewalDateStatusResponse {
        let path = "/inApps/v1/subscriptions/extend/mass/" + (try Self.segment(productId, name: "productId")) + "/"
            + (try Self.segment(requestIdentifier, name: "requestIdentifier"))
        return try decode(MassExtendRenewalDateStatusResponse.self, from: try await send("GET", path, environment: environment))
    }

    // MARK: Consumption

    /// Send Consumption Information (v2): `PUT /inApps/v2/transactions/consumption/{transactionId}`.
    public func sendConsumptionInformation(
        transactionId: String, _ information: ConsumptionRequestV2, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) {
        let path = "/inApps/v2/transactions/consumption/" + (try Self.segment(transactionId, name: "transactionId"))
        let body = try encode(information)
        _ = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            try await send("PUT", path, body: body, environment: environment)
        }
    }

    /// Send Consumption Information (v1, while Apple accepts it):
    /// `PUT /inApps/v1/transactions/consumption/{transactionId}`.
    public func sendConsumptionInformationV1(
        transactionId: String, _ information: ConsumptionRequest, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) {
        let path = "/inApps/v1/transactions/consumption/" + (try Self.segment(transactionId, name: "transactionId"))
        let body = try encode(information)
        _ = try await lookup(environment) { (environment) async throws(ServerAPIError) in
            try await send("PUT", path, body: body, environment: environment)
        }
    }

    // MARK: Notifications

    /// Get Notification History: `POST /inApps/v1/notifications/history?paginationToken=…`, one page.
    /// `request.startDate` and `endDate` are required (Apple keeps 180 days).
    public func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> NotificationHistoryPage {
        let body = try encode(request)
        let query = paginationToken.map { [("paginationToken", $0)] } ?? []
        let response = try decode(
            NotificationHistoryResponse.self,
            from: try await send("POST", "/inApps/v1/notifications/history", query: query, body: body, environment: environment))
        var notifications: [HistoricalNotification] = []
        var unverified: [UnverifiedNotification] = []
        for item in response.notificationHistory ?? [] {
            // One item that does not verify is set aside; the rest of the page is still usable.
            guard let jws = item.signedPayload else {
                unverified.append(UnverifiedNotification(signedPayload: "", error: .invalidResponse(message: "a history item has no signedPayload")))
                continue
            }
            do throws(ServerAPIError) {
                notifications.append(HistoricalNotification(notification: try await verified(jws), sendAttempts: item.sendAttempts ?? []))
            } catch {
                unverified.append(UnverifiedNotification(signedPayload: jws, error: error))
            }
        }
        return NotificationHistoryPage(
            notifications: notifications, unverified: unverified, paginationToken: response.paginationToken,
            hasMore: response.hasMore ?? false)
    }

    /// Request a Test Notification: `POST /inApps/v1/notifications/test`; returns the token to check it with.
    public func requestTestNotification(environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) -> String {
        let response = try decode(
            SendTestNotificationResponse.self, from: try await send("POST", "/inApps/v1/notifications/test", environment: environment))
        guard let token = response.testNotificationToken else { throw .invalidResponse(message: "no testNotificationToken") }
        return token
    }

    /// Get Test Notification Status: `GET /inApps/v1/notifications/test/{testNotificationToken}`.
    public func testNotificationStatus(
        _ testNotificationToken: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> HistoricalNotification {
        let path = "/inApps/v1/notifications/test/" + (try Self.segment(testNotificationToken, name: "testNotificationToken"))
        let response = try decode(CheckTestNotificationResponse.self, from: try await send("GET", path, environment: environment))
        guard let jws = response.signedPayload else { throw .invalidResponse(message: "no signedPayload") }
        return HistoricalNotification(notification: try await verified(jws), sendAttempts: response.sendAttempts ?? [])
    }
}

extension Optional {
    /// `map` for an async, typed-throwing transform.
    func asyncMap<U, E: Error>(_ transform: (Wrapped) async throws(E) -> U) async throws(E) -> U? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
