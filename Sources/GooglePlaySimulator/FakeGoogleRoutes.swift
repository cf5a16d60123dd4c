import EntitledCrypto
import Foundation
import GooglePlay
import HTTPServer

/// The fake's HTTP face, under Google's own paths so a client only swaps the base URL:
///
/// - `POST /token`: the OAuth token endpoint (checks the service account's RS256 assertion);
/// - `GET /oauth2/v3/certs`: the JWKS of the key pushes are signed with;
/// - `/androidpublisher/v3/applications/{packageName}/purchases/…`: `subscriptionsv2` get,
///   `subscriptions` acknowledge, `products` get/acknowledge/consume, `voidedpurchases` list,
///   and `orders/{orderId}:reviewrefund`, each refusing a missing or unknown access token with 401
///   as Google does.
extension FakeGoogle {
    /// The path of the token endpoint; a key file's `token_uri` is the server's base URL plus this.
    public static let tokenPath = "/token"
    /// The path of the JWKS.
    public static let certsPath = "/oauth2/v3/certs"

    /// Registers the routes. `tokenURI` is the exact URL assertions must name in `aud`.
    public func register(on router: inout Router, tokenURI: @escaping @Sendable () -> String) {
        router.post(Self.tokenPath) { [self] request in tokenEndpoint(request, tokenURI: tokenURI()) }
        router.get(Self.certsPath) { [self] _ in
            var response = Response.json(bytes: PlayJSON.encode(JWKSet(keys: [JWK(publicKey: try signingKey.publicKey, kid: signingKeyId)])))
            response.headers.set("Cache-Control", "public, max-age=3600")
            return response
        }
        registerReviewRefund(on: &router)
        router.get("/androidpublisher/v3/applications/{packageName}/orders/{orderId}") { [self] request in
            try api(request) { () throws(FakeGoogleError) in
                guard let order = order(request.pathParameters["orderId"] ?? "", packageName: request.pathParameters["packageName"] ?? "")
                else { throw .notFound }
                return PlayJSON.encode(order)
            }
        }
        let base = "/androidpublisher/v3/applications/{packageName}/purchases"
        router.get(base + "/subscriptionsv2/tokens/{token}") { [self] request in
            try api(request) { () throws(FakeGoogleError) in
                let token = request.pathParameters["token"] ?? ""
                guard let s = state.withLock({ $0.subscriptions[token] }), s.packageName == request.pathParameters["packageName"] else {
                    throw .notFound
                }
                return PlayJSON.encode(s.purchase)
            }
        }
        router.post(base + "/subscriptions/{subscriptionId}/tokens/{tokenAction}") { [self] request in
            try api(request) { () throws(FakeGoogleError) in
                let (token, action) = Self.split(request.pathParameters["tokenAction"])
                guard action == "acknowledge" else { throw .notFound }
                try state.withLock { (state) throws(FakeGoogleError) in
                    guard let s = state.subscriptions[token], s.packageName == request.pathParameters["packageName"],
                        s.productId == request.pathParameters["subscriptionId"]
                    else { throw .notFound }
                    state.subscriptions[token]?.acknowledged = true
                }
                return Array("{}".utf8)
            }
        }
        router.get(base + "/products/{productId}/tokens/{token}") { [self] request in
            try api(request) { () throws(FakeGoogleError) in
                let token = request.pathParameters["token"] ?? ""
                guard let p = state.withLock({ $0.productPurchases[token] }), p.packageName == request.pathParameters["packageName"],
                    p.productId == request.pathParameters["productId"]
                else { throw .notFound }
                return PlayJSON.encode(p.purchase(token: token))
            }
        }
        router.post(base + "/products/{productId}/tokens/{tokenAction}") { [self] request in
            try api(request) { () throws(FakeGoogleError) in
                let (token, action) = Self.split(request.pathParameters["tokenAction"])
                try state.withLock { (state) throws(FakeGoogleError) in
                    guard let p = state.productPurchases[token], p.packageName == request.pathParameters["packageName"],
                        p.productId == request.pathParameters["productId"]
                    else { throw .notFound }
                    switch action {
                    case "acknowledge": state.productPurchases[token]?.acknowledged = true
                    case "consume":
                        guard !p.canceled, !p.consumed else { throw FakeGoogleError("The purchase is not in a state that allows this.") }
                        // Consuming acknowledges implicitly, as Play does.
                        state.productPurchases[token]?.consumed = true
                        state.productPurchases[token]?.acknowledged = true
                    default: throw .notFound
                    }
                }
                return Array("{}".utf8)
            }
        }
        router.get(base + "/voidedpurchases") { [self] request in
            try api(request) { () throws(FakeGoogleError) in
                let packageName = request.pathParameters["packageName"] ?? ""
                let start = request.query["startTime"].flatMap { Int64($0) } ?? .min
                let end = request.query["endTime"].flatMap { Int64($0) } ?? .max
                let includeSubscriptions = request.query["type"] == "1"
                let includePartial = request.query["includeQuantityBasedPartialRefund"] == "true"
                let pageSize = min(max(request.query["maxResults"].flatMap { Int($0) } ?? 1000, 1), 1000)
                let offset = request.query["token"].flatMap { Int($0) } ?? 0
                let all = state.withLock { state in
                    state.voided.filter { v in
                        let time = v.voidedTimeMillis?.value ?? 0
                        let isSubscription = state.subscriptions[v.purchaseToken] != nil
                        let owner = state.subscriptions[v.purchaseToken]?.packageName ?? state.productPurchases[v.purchaseToken]?.packageName
                        return owner == packageName && time >= start && time <= end && (includeSubscriptions || !isSubscription)
                            && (includePartial || v.voidedQuantity == nil)
                    }
                }
                guard offset >= 0, offset <= all.count else { throw FakeGoogleError("Invalid page token.") }
                let page = Array(all[offset..<min(all.count, offset + pageSize)])
                let next = offset + pageSize < all.count ? String(offset + pageSize) : nil
                return PlayJSON.encode(
                    VoidedPurchasesListResponse(
                        pageInfo: .init(totalResults: all.count, resultPerPage: pageSize, startIndex: offset),
                        tokenPagination: next.map { .init(nextPageToken: $0) }, voidedPurchases: page))
            }
        }
    }

    /// `{token}:{action}` of a custom-method path segment.
    static func split(_ segment: String?) -> (String, String) {
        guard let segment, let colon = segment.lastIndex(of: ":") else { return (segment ?? "", "") }
        return (String(segment[..<colon]), String(segment[segment.index(after: colon)...]))
    }

    /// Runs a Developer API handler behind the access-token check and the injected failures; a
    /// thrown ``FakeGoogleError`` becomes Google's error body with its status.
    func api(_ request: Request, _ body: () throws(FakeGoogleError) -> [UInt8]) throws -> Response {
        let now = nowMillis / 1000
        let authorized = state.withLock { state -> Bool in
            guard let header = request.headers["authorization"], header.hasPrefix("Bearer ") else { return false }
            return (state.accessTokens[String(header.dropFirst(7))] ?? 0) > now
        }
        guard authorized else { return Self.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.") }
        if let status = state.withLock({ $0.injectedFailures.isEmpty ? nil : $0.injectedFailures.removeFirst() }) {
            var response = Self.error(status, status == 429 ? "RESOURCE_EXHAUSTED" : "UNAVAILABLE", "Injected failure.")
            if status == 429 { response.headers.set("Retry-After", "2") }
            return response
        }
        do {
            return Response.json(bytes: try body())
        } catch {
            return Self.error(error.status, error.status == 404 ? "NOT_FOUND" : "INVALID_ARGUMENT", error.message)
        }
    }

    static func error(_ status: Int, _ name: String, _ message: String) -> Response {
        Response.json(
            bytes: PlayJSON.encode(DeveloperAPIClient.ErrorBody(error: .init(code: status, message: message, status: name))), status: status)
    }

    /// The OAuth token endpoint: `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=…`.
    func tokenEndpoint(_ request: Request, tokenURI: String) -> Response {
        func refuse(_ description: String) -> Response {
            Response.json(bytes: Array(#"{"error":"invalid_grant","error_description":"\#(description)"}"#.utf8), status: 400)
        }
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            form[PercentDecoding.decodeLeniently(parts[0])] = PercentDecoding.decodeLeniently(parts[1].replacingOccurrences(of: "+", with: " "))
        }
        guard form["grant_type"] == AccessTokenProvider.grantType, let assertion = form["assertion"] else {
            return Response.json(bytes: Array(#"{"error":"unsupported_grant_type"}"#.utf8), status: 400)
        }
        guard let parsed = try? RS256JWT.parse(assertion), parsed.headerString("alg") == "RS256" else { return refuse("malformed assertion") }
        guard let email = parsed.claimString("iss"), let key = state.withLock({ $0.serviceAccounts[email] }) else {
            return refuse("unknown service account")
        }
        guard key.isValidRS256Signature(parsed.signature, for: parsed.signingInput) else { return refuse("bad signature") }
        guard parsed.claimString("aud") == tokenURI else { return refuse("wrong audience") }
        guard parsed.claimString("scope")?.split(separator: " ").contains(Substring(AccessTokenProvider.scope)) == true else {
            return refuse("missing scope")
        }
        let now = nowMillis / 1000
        guard let iat = parsed.claimInteger("iat"), let exp = parsed.claimInteger("exp"), exp > now, iat <= now + 60, exp - iat <= 3600
        else { return refuse("bad times") }
        let token = "ya29.fake-" + Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        state.withLock { $0.accessTokens[token] = now + 3600 }
        return Response.json(bytes: PlayJSON.encode(AccessTokenResponse(access_token: token, expires_in: 3599)))
    }
}
