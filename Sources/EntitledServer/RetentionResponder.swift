import AppStore
import EntitledConfig
import Entitlements
import Foundation
import JSONCoding
import Storage

/// Answers the App Store's retention-messaging requests (docs/retention.md): verifies the signed
/// request like a notification, reads the subscription's facts, lets the app's rules
/// (``Entitlements/RetentionRuleSet``) choose, signs a promotional offer when one is chosen, and
/// hands the request and the choice to the ``RetentionRecorder``. Knows no HTTP.
struct RetentionResponder: Sendable {
    /// Apps with `retention`, by `appAppleId` (the loader requires one).
    let apps: [Int64: App]
    let verifier: any NotificationVerifying
    let ledger: FactLedger
    let policy: Policy
    let signers: [String: OfferSigner]
    let recorder: RetentionRecorder
    let clock: any EpochClock
    let codec: JSONCodec

    /// Longest identifier (transaction, product, request, locale) accepted from a request.
    static let maxFieldBytes = 200

    /// Why a request gets no answer.
    enum Failure: Error {
        /// Not Apple's, not for an app here, or not well formed: refused.
        case refused(VerificationError)
        /// Ours: Apple shows the fallback it has.
        case internalError(String)
    }

    init(
        configuration: Configuration, verifier: any NotificationVerifying, ledger: FactLedger, policy: Policy,
        signers: [String: OfferSigner], recorder: RetentionRecorder, clock: any EpochClock, codec: JSONCodec
    ) {
        var apps: [Int64: App] = [:]
        for app in configuration.apps where app.retention != nil {
            if let id = app.appAppleId { apps[id] = app }
        }
        self.apps = apps
        self.verifier = verifier
        self.ledger = ledger
        self.policy = policy
        self.signers = signers
        self.recorder = recorder
        self.clock = clock
        self.codec = codec
    }

    /// The answer to `signedPayload`; nil when the rules choose nothing (Apple shows its default).
    func respond(signedPayload: String) async throws(Failure) -> RealtimeResponseBody? {
        let (app, request) = try await verify(signedPayload)
        guard let originalTransactionId = request.originalTransactionId, let requestIdentifier = request.requestIdentifier,
            let rules = app.retention
        else { throw .refused(.malformed("originalTransactionId and requestIdentifier are required")) }
        let now = clock.nowMilliseconds()
        let environment = Environment(rawValue: (request.environment ?? .production).rawValue)
        let facts: [Fact]
        do {
            facts = try await ledger.subscriptionFacts(originalTransactionId: originalTransactionId)
        } catch {
            throw .internalError("the subscription cannot be read: \(error.code.rawValue)")
        }
        let history = RetentionHistory(
            facts: facts, originalTransactionId: originalTransactionId, policy: policy, now: now, environment: environment)
        let choice = rules.choose(for: RetentionRequestFacts(productId: request.productId, locale: request.userLocale, history: history))
        let body = try answer(choice?.answer, app: app, request: request, originalTransactionId: originalTransactionId, now: now)
        await recorder.add(
            RetentionRequestRecord(
                requestIdentifier: requestIdentifier, bundleId: app.bundleId, environment: environment.rawValue,
                originalTransactionId: originalTransactionId, productId: request.productId, locale: request.userLocale,
                ruleId: body == nil ? nil : choice?.ruleId, answerKind: body == nil ? nil : choice?.answer.kind,
                messageIdentifier: body == nil ? nil : choice?.answer.messageIdentifier, offerId: Self.offerId(body, choice),
                alternateProductId: body?.alternateProduct?.productId, requestedAt: now))
        return body
    }

    /// The app the request names (unverified, only to pick its verifier), then the request
    /// verified against that app: Apple's chain, its environments (Production or Sandbox), and its
    /// appAppleId in every environment (the verifier alone checks it in Production only).
    func verify(_ signedPayload: String) async throws(Failure) -> (App, DecodedRealtimeRequestBody) {
        struct Claim: Decodable { var appAppleId: Int64? }
        guard let claim = JWSPeek.payload(Claim.self, signedPayload, codec: codec) else {
            throw .refused(VerificationError(.invalidJWTFormat, "signedPayload is not a JWS with a JSON payload"))
        }
        guard let id = claim.appAppleId, let app = apps[id] else {
            throw .refused(VerificationError(.invalidAppIdentifier, "no app here answers retention requests for this appAppleId"))
        }
        let request: DecodedRealtimeRequestBody
        do {
            request = try await verifier.verifyRealtimeRequest(signedPayload: signedPayload, app: app)
        } catch {
            throw .refused(error)
        }
        guard request.appAppleId == app.appAppleId else {
            throw .refused(VerificationError(.invalidAppIdentifier, "appAppleId is not \(id)"))
        }
        // Only Apple calls this endpoint: an Xcode or LocalTesting payload, which the verifier
        // accepts unsigned when the app lists that environment, is anyone's.
        guard let environment = request.environment, environment == .production || environment == .sandbox else {
            throw .refused(VerificationError(.invalidEnvironment, "realtime requests come from Production or Sandbox only"))
        }
        for field in [request.originalTransactionId, request.productId, request.requestIdentifier, request.userLocale] {
            if let field, field.isEmpty || field.utf8.count > Self.maxFieldBytes || field.unicodeScalars.contains(where: \.isInvisibleInID) {
                throw .refused(.malformed("an identifier is empty, longer than \(Self.maxFieldBytes) bytes or has control characters"))
            }
        }
        return (app, request)
    }

    /// Apple's body for `answer`; nil for none, or for one that does not fit the request's product
    /// (an offer it does not have, an alternate outside its group): better Apple's default than a
    /// message that fails.
    func answer(
        _ answer: RetentionAnswer?, app: App, request: DecodedRealtimeRequestBody, originalTransactionId: String, now: Int64
    ) throws(Failure) -> RealtimeResponseBody? {
        guard let answer else { return nil }
        let product = app.products.first { $0.productId == request.productId && $0.type == .autoRenewable }
        switch answer {
        case .message(let id):
            return RealtimeResponseBody(message: .init(messageIdentifier: id))
        case .alternateProduct(let id, let productId):
            let alternate = app.products.first { $0.productId == productId }
            guard let product, product.productId != productId, product.subscriptionGroup == alternate?.subscriptionGroup else { return nil }
            return RealtimeResponseBody(alternateProduct: .init(messageIdentifier: id, productId: productId))
        case .promotionalOffer(let id, let offerId):
            guard let product, product.promotionalOffers.contains(offerId) else { return nil }
            guard let signer = signers[app.bundleId] else { throw .internalError("the app has no signingKey") }
            do {
                // Apple requires the transactionId claim here: the subscription's original transaction.
                let jws = try signer.promotionalJWS(
                    productId: product.productId, offerId: offerId, transactionId: originalTransactionId, nonce: UUID(),
                    issuedAtSeconds: now / 1000)
                return RealtimeResponseBody(promotionalOffer: .init(messageIdentifier: id, promotionalOfferSignatureV2: jws))
            } catch {
                throw .internalError("signing failed (\(error.code))")
            }
        }
    }

    private static func offerId(_ body: RealtimeResponseBody?, _ choice: RetentionChoice?) -> String? {
        guard body?.promotionalOffer != nil, case .promotionalOffer(_, let offerId) = choice?.answer else { return nil }
        return offerId
    }
}
