/// The purchase endpoints of the Developer API, under Google's paths.
extension DeveloperAPIClient {
    /// `purchases.subscriptionsv2.get`: `GET …/purchases/subscriptionsv2/tokens/{token}`.
    public func subscriptionV2(packageName: String, purchaseToken: String) async throws(GooglePlayError) -> SubscriptionPurchaseV2 {
        let path = try Self.purchasesPath(packageName) + "/subscriptionsv2/tokens/" + (try Self.token(purchaseToken))
        let response = try await send("GET", path)
        return try PlayJSON.decode(
            SubscriptionPurchaseV2.self, from: response.body, maxBytes: SubscriptionPurchaseV2.maximumBytes, code: .malformedResponse)
    }

    /// `purchases.subscriptions.acknowledge`: `POST …/purchases/subscriptions/{subscriptionId}/tokens/{token}:acknowledge`.
    public func acknowledgeSubscription(
        packageName: String, subscriptionId: String, purchaseToken: String, developerPayload: String? = nil
    ) async throws(GooglePlayError) {
        let path = try Self.purchasesPath(packageName) + "/subscriptions/" + (try Self.segment(subscriptionId, name: "subscriptionId"))
            + "/tokens/" + (try Self.token(purchaseToken)) + ":acknowledge"
        _ = try await send("POST", path, body: PlayJSON.encode(AcknowledgeRequest(developerPayload: developerPayload)))
    }

    /// `purchases.products.get`: `GET …/purchases/products/{productId}/tokens/{token}`.
    public func product(packageName: String, productId: String, purchaseToken: String) async throws(GooglePlayError) -> ProductPurchase {
        let path = try productPath(packageName, productId, purchaseToken)
        let response = try await send("GET", path)
        return try PlayJSON.decode(ProductPurchase.self, from: response.body, maxBytes: ProductPurchase.maximumBytes, code: .malformedResponse)
    }

    /// `purchases.products.acknowledge`: `POST …/purchases/products/{productId}/tokens/{token}:acknowledge`.
    public func acknowledgeProduct(
        packageName: String, productId: String, purchaseToken: String, developerPayload: String? = nil
    ) async throws(GooglePlayError) {
        let path = try productPath(packageName, productId, purchaseToken) + ":acknowledge"
        _ = try await send("POST", path, body: PlayJSON.encode(AcknowledgeRequest(developerPayload: developerPayload)))
    }

    /// `purchases.products.consume`: `POST …/purchases/products/{productId}/tokens/{token}:consume`.
    public func consumeProduct(packageName: String, productId: String, purchaseToken: String) async throws(GooglePlayError) {
        _ = try await send("POST", try productPath(packageName, productId, purchaseToken) + ":consume")
    }

    /// `orders.get`: `GET /androidpublisher/v3/applications/{packageName}/orders/{orderId}`.
    public func order(packageName: String, orderId: String) async throws(GooglePlayError) -> Order {
        let path = "/androidpublisher/v3/applications/" + (try Self.segment(packageName, name: "packageName")) + "/orders/"
            + (try Self.segment(orderId, name: "orderId"))
        let response = try await send("GET", path)
        return try PlayJSON.decode(Order.self, from: response.body, maxBytes: Order.maximumBytes, code: .malformedResponse)
    }

    /// `purchases.voidedpurchases.list`, one page: `GET …/purchases/voidedpurchases`.
    ///
    /// - Parameters:
    ///   - startTimeMillis, endTimeMillis: the window of voiding times (Google keeps 30 days).
    ///   - includeSubscriptions: `type=1` (subscriptions and one-time products) instead of `type=0`.
    ///   - includeQuantityBasedPartialRefunds: `includeQuantityBasedPartialRefund=true`: quantity-based
    ///     partial refunds of multi-quantity purchases are listed too, each with its `voidedQuantity`.
    ///   - maxResults: up to 1000 a page.
    ///   - pageToken: the previous page's `tokenPagination.nextPageToken`.
    public func voidedPurchases(
        packageName: String, startTimeMillis: Int64? = nil, endTimeMillis: Int64? = nil, includeSubscriptions: Bool = true,
        includeQuantityBasedPartialRefunds: Bool = true, maxResults: Int = 1000, pageToken: String? = nil
    ) async throws(GooglePlayError) -> VoidedPurchasesListResponse {
        var query: [(String, String)] = [("type", includeSubscriptions ? "1" : "0"), ("maxResults", String(min(max(maxResults, 1), 1000)))]
        if includeQuantityBasedPartialRefunds { query.append(("includeQuantityBasedPartialRefund", "true")) }
        if let startTimeMillis { query.append(("startTime", String(startTimeMillis))) }
        if let endTimeMillis { query.append(("endTime", String(endTimeMillis))) }
        if let pageToken {
            guard !pageToken.isEmpty, pageToken.utf8.count <= 1024 else { throw GooglePlayError(.invalidRequest, "page token of bad size") }
            query.append(("token", pageToken))
        }
        let response = try await send("GET", try Self.purchasesPath(packageName) + "/voidedpurchases", query: query)
        return try PlayJSON.decode(
            VoidedPurchasesListResponse.self, from: response.body, maxBytes: VoidedPurchasesListResponse.maximumBytes,
            code: .malformedResponse)
    }

    /// Every voided purchase in the window, following `nextPageToken` for at most `maxPages` pages;
    /// a repeated page token fails at once instead of looping.
    public func allVoidedPurchases(
        packageName: String, startTimeMillis: Int64? = nil, endTimeMillis: Int64? = nil, includeSubscriptions: Bool = true,
        includeQuantityBasedPartialRefunds: Bool = true, maxPages: Int = 100
    ) async throws(GooglePlayError) -> [VoidedPurchase] {
        var out: [VoidedPurchase] = []
        var token: String? = nil
        var seen: Set<String> = []
        for _ in 0..<max(1, maxPages) {
            let page = try await voidedPurchases(
                packageName: packageName, startTimeMillis: startTimeMillis, endTimeMillis: endTimeMillis,
                includeSubscriptions: includeSubscriptions, includeQuantityBasedPartialRefunds: includeQuantityBasedPartialRefunds,
                pageToken: token)
            out += page.voidedPurchases ?? []
            guard let next = page.tokenPagination?.nextPageToken, !next.isEmpty else { return out }
            guard seen.insert(next).inserted else { throw GooglePlayError(.malformedResponse, "voidedpurchases repeated a page token") }
            token = next
        }
        throw GooglePlayError(.malformedResponse, "voidedpurchases has more than \(maxPages) pages")
    }

    struct AcknowledgeRequest: Encodable {
        var developerPayload: String?
    }

    private func productPath(_ packageName: String, _ productId: String, _ purchaseToken: String) throws(GooglePlayError) -> String {
        try Self.purchasesPath(packageName) + "/products/" + (try Self.segment(productId, name: "productId")) + "/tokens/"
            + (try Self.token(purchaseToken))
    }

    static func token(_ purchaseToken: String) throws(GooglePlayError) -> String {
        try segment(purchaseToken, name: "purchaseToken", maxBytes: DeveloperNotification.maximumTokenBytes)
    }
}
