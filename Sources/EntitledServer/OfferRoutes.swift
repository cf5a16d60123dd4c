import AppStore
import EntitledConfig
import EntitledCrypto
import Entitlements
import Foundation
import HTTPServer
import Storage

/// `POST /v1/customers/{appUserId}/offers/sign`: the server holds the in-app purchase key and
/// decides eligibility from the ledger; apps never hold the key.
struct OfferRoutes: Sendable {
    /// Offer-signing request bodies are small; larger ones get 413.
    static let maxOfferRequestBytes = 4096
    /// Longest `productId` / `offerId` accepted in a signing request.
    static let maxOfferFieldBytes = 200

    let gate: AccessGate
    /// Per bundleId, for apps with `signingKey`: their offer signer.
    let signers: [String: OfferSigner]
    /// Bounds how fast signatures are handed out, per customer and per signing key.
    let offerLimiter: OfferSigningLimiter
    let answers: CustomerAnswers
    let ledger: FactLedger
    let configuration: Configuration
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.post("/v1/customers/{appUserId}/offers/sign") { try await routes.signOffer($0) }
    }

    /// What to sign.
    enum OfferKind: String, Sendable {
        case promotional, introductoryEligibility, winBack
    }

    /// How to sign it.
    enum OfferFormat: String, Sendable {
        case v1, jws
    }

    struct OfferSignRequest: Decodable {
        var productId: String
        var offerId: String?
        var kind: String
        var format: String
    }

    /// The v1 answer: what `SKPaymentDiscount` / `.promotionalOffer(…)` take.
    struct V1OfferBody: Encodable {
        var keyId: String
        var nonce: String
        var timestamp: Int64
        var signature: String
    }

    /// The JWS answer; `allowIntroductoryOffer` only for introductory-offer eligibility.
    struct JWSOfferBody: Encodable {
        var jws: String
        var nonce: String
        var allowIntroductoryOffer: Bool?
    }

    /// An ``OfferSigner`` per app with a `signingKey` (the loader checked every key already).
    static func offerSigners(_ configuration: Configuration) -> [String: OfferSigner] {
        var signers: [String: OfferSigner] = [:]
        for app in configuration.apps {
            guard let settings = app.signingKey, let key = try? P256PrivateKey(pem: settings.privateKeyPEM) else { continue }
            signers[app.bundleId] = OfferSigner(
                credentials: ServerAPICredentials(
                    bundleId: app.bundleId, keyId: settings.keyId, issuerId: settings.issuerId, privateKey: key))
        }
        return signers
    }

    func signOffer(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .write, appUserId: appUserId)
        guard request.body.count <= Self.maxOfferRequestBytes else { throw HTTPError.payloadTooLarge(limit: Self.maxOfferRequestBytes) }
        let body = try RequestInput.decode(OfferSignRequest.self, request)
        guard let kind = OfferKind(rawValue: body.kind) else {
            throw HTTPError(.invalidRequest, "kind must be promotional, introductoryEligibility or winBack")
        }
        guard let format = OfferFormat(rawValue: body.format) else { throw HTTPError(.invalidRequest, "format must be v1 or jws") }
        try Self.checkOfferField(body.productId, name: "productId")
        if let offerId = body.offerId { try Self.checkOfferField(offerId, name: "offerId") }
        if kind == .introductoryEligibility && format == .v1 {
            throw HTTPError(.invalidRequest, "introductory-offer eligibility is signed as a JWS only")
        }
        let offerId = body.offerId
        if kind != .introductoryEligibility && offerId == nil { throw HTTPError(.invalidRequest, "offerId is required") }
        guard
            let app = configuration.apps.first(where: { app in
                app.products.contains { $0.productId == body.productId && $0.type == .autoRenewable }
            }), let product = app.products.first(where: { $0.productId == body.productId })
        else {
            throw HTTPError(.productNotFound, "no auto-renewable subscription with this productId is configured")
        }
        guard let signer = signers[app.bundleId] else {
            throw HTTPError(.signingKeyNotConfigured, "the app selling this product has no signingKey")
        }
        let offered: Bool
        switch kind {
        case .promotional: offered = product.promotionalOffers.contains(offerId ?? "")
        case .winBack: offered = product.winBackOffers.contains { $0.offerId == offerId }
        case .introductoryEligibility: offered = true
        }
        guard offered else { throw HTTPError(.offerNotFound, "the product has no such \(kind.rawValue) offer configured") }
        // Before the customer is read: a refused request costs no storage either.
        try offerLimiter.admit(appUserId: appUserId, signingKey: app.signingKey?.keyId ?? app.bundleId)

        let now = clock.nowMilliseconds()
        // The environments the customer's answer merges, so that what it advertises in `offers`
        // is what is signed; none Apple signs (`?environment=Xcode`) makes no one eligible.
        let context = try answers.context(request, now: now)
        guard context.environments.contains(where: \.isSignedByApple) else {
            throw HTTPError(.offerNotEligible, "offers are signed on purchases Apple signed (Production, Sandbox) only")
        }
        let snapshot = try await Problems.store { () async throws(StorageError) in
            try await ledger.customer(appUserId: appUserId, context: context)
        }
        let state = snapshot.state
        let reference = OfferReference(productId: product.productId, offerId: offerId ?? "")
        switch kind {
        case .promotional where !state.offers.promotional.contains(reference):
            throw HTTPError(.offerNotEligible, "promotional offers are for customers who subscribed in the product's group")
        case .winBack where !state.offers.winBack.contains(reference):
            throw HTTPError(.offerNotEligible, "the customer is not in this win-back offer's lapse window")
        default: break
        }
        let nonce = UUID()
        let transactionId = Self.anyTransactionId(state, group: product.subscriptionGroup)
        var response: Response
        do {
            switch (kind, format) {
            case (_, .v1):
                guard let token = UUID(uuidString: snapshot.customer.appAccountToken) else {
                    throw HTTPError(.internalError, "the customer's appAccountToken is not a UUID")
                }
                let signed = try signer.promotionalV1(
                    .init(productId: product.productId, offerId: offerId ?? "", appAccountToken: token, nonce: nonce, timestamp: now))
                response = try .json(
                    V1OfferBody(keyId: signed.keyId, nonce: signed.nonce, timestamp: signed.timestamp, signature: signed.signature))
            case (.introductoryEligibility, .jws):
                let allow = state.offers.introductory.contains(product.productId)
                let jws = try signer.introductoryEligibilityJWS(
                    productId: product.productId, allowIntroductoryOffer: allow, transactionId: transactionId, nonce: nonce,
                    issuedAtSeconds: now / 1000)
                response = try .json(JWSOfferBody(jws: jws, nonce: nonce.uuidString.lowercased(), allowIntroductoryOffer: allow))
            case (_, .jws):
                let jws = try signer.promotionalJWS(
                    productId: product.productId, offerId: offerId ?? "", transactionId: transactionId, nonce: nonce,
                    issuedAtSeconds: now / 1000)
                response = try .json(JWSOfferBody(jws: jws, nonce: nonce.uuidString.lowercased()))
            }
        } catch let error as CryptoError {
            throw HTTPError(.internalError, "signing failed (\(error.code))")
        }
        let record = OfferSignatureRecord(
            appUserId: appUserId, bundleId: app.bundleId, productId: product.productId,
            offerId: kind == .introductoryEligibility ? nil : offerId, kind: kind.rawValue, format: format.rawValue,
            nonce: nonce.uuidString.lowercased(), signedAt: now)
        try await Problems.store { () async throws(StorageError) in try await ledger.recordOfferSignature(record) }
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// A field that goes into a signature: 1…``maxOfferFieldBytes`` bytes, no control or format
    /// characters (``Unicode/Scalar/isInvisibleInID``; U+2063, the v1 separator, is one: inside a
    /// field it would shift the others).
    static func checkOfferField(_ value: String, name: String) throws(HTTPError) {
        guard (1...maxOfferFieldBytes).contains(value.utf8.count), !value.unicodeScalars.contains(where: \.isInvisibleInID) else {
            throw HTTPError(.invalidRequest, "\(name) must be 1–\(maxOfferFieldBytes) bytes without control or format characters")
        }
    }

    /// A transaction of the customer for the JWS `transactionId` claim, from an environment Apple
    /// signs (an id from any other is whatever its poster wrote): the current one in `group`, else
    /// any group's current one, else the first purchased entitlement's; nil for a customer with none.
    static func anyTransactionId(_ state: CustomerState, group: String?) -> String? {
        let signed = state.subscriptionGroups.filter { $0.current?.environment.isSignedByApple == true }
        if let group, let id = signed.first(where: { $0.id == group })?.current?.transactionId { return id }
        if let id = signed.first?.current?.transactionId { return id }
        return state.entitlements.first { $0.source == .purchase && $0.environment.isSignedByApple }?.transactionId
    }
}
