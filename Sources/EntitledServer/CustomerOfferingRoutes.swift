import AppStore
import Entitlements
import HTTPServer
import Storage

/// `GET /v1/customers/{appUserId}/offerings` (`read`, or the customer's own token): the offering
/// this customer should see now.
struct CustomerOfferingRoutes: Sendable {
    let gate: AccessGate
    let offerings: CustomerOfferings

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/customers/{appUserId}/offerings") { try await routes.offering($0) }
    }

    /// `?storefront=USA&appVersion=2.4.1&locale=en_US&platform=ios`, each optional: what the app
    /// knows now, before the customer's attributes.
    func offering(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .read, appUserId: appUserId)
        var asked = CustomerOfferings.Asked(storefront: try RequestInput.storefront(request))
        for (name, limit) in [("appVersion", 64), ("locale", 35), ("platform", 16)] {
            guard let value = request.query[name] else { continue }
            guard (1...limit).contains(value.utf8.count), !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else { throw HTTPError(.invalidRequest, "\(name) must be 1…\(limit) bytes") }
            switch name {
            case "appVersion": asked.appVersion = value
            case "locale": asked.locale = value
            default: asked.platform = value
            }
        }
        let body = try await offerings.answer(appUserId: appUserId, asked: asked)
        return RequestInput.noStore(try .json(body))
    }
}

/// Which offering a customer sees, with each package's offer eligibility: the paywall from memory,
/// the customer's state and attributes from the ledger, the choice the engine's. Knows no request.
struct CustomerOfferings: Sendable {
    let ledger: FactLedger
    let cache: PaywallCache
    let answers: CustomerAnswers
    let clock: any EpochClock
    let experiments: ExperimentExposure

    /// What the app said in the request (each one wins over the attribute of the same meaning).
    struct Asked: Sendable {
        var storefront: String?
        var appVersion: String?
        var locale: String?
        var platform: String?
    }

    func answer(appUserId: String, asked: Asked) async throws -> CustomerOfferingBody {
        let paywall = try await cache.current()
        let now = clock.nowMilliseconds()
        let snapshot = try await Problems.store { () async throws(StorageError) in
            try await ledger.customer(appUserId: appUserId, context: answers.merged(now: now))
        }
        let stored = try await Problems.store { () async throws(StorageError) in try await ledger.attributes(appUserId: appUserId) }
        let attributes = Dictionary((stored ?? []).map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
        let audience = Audience(
            storefront: asked.storefront ?? attributes["$storefront"] ?? snapshot.state.storefront?.storefront,
            appVersion: asked.appVersion ?? attributes["$appVersion"], locale: asked.locale ?? attributes["$locale"],
            platform: asked.platform, attributes: attributes, states: AudienceState.of(snapshot.state))
        // A running experiment whose audience holds (or one the customer is enrolled in) decides
        // before the targeting rules.
        let assignment = try await experiments.assignment(appUserId: appUserId, audience: audience, paywall: paywall, now: now)
        let chosen = assignment.flatMap { a in paywall.offerings[a.offeringId].map { ($0, nil as String?) } } ?? paywall.choose(for: audience)
        guard let (offering, ruleId) = chosen else {
            throw HTTPError(.offeringNotFound, "no offering is current and no targeting rule chose one")
        }
        return CustomerOfferingBody(
            appUserId: appUserId, paywallVersion: paywall.version, offering: offering, ruleId: ruleId, offers: snapshot.state.offers,
            states: audience.states, experiment: assignment)
    }
}

/// `GET /v1/customers/{appUserId}/offerings`' answer.
struct CustomerOfferingBody: Encodable {
    var appUserId: String
    var paywallVersion: Int64
    var offering: Paywall.Offering
    var ruleId: String?
    /// The customer's eligible offers (the engine's, as the customer answer's `offers`).
    var offers: EligibleOffers
    var states: Set<AudienceState>
    /// The experiment variant shown, when an experiment chose the offering.
    var experiment: ExperimentAssignment?

    struct PackageBody: Encodable {
        var id: String
        var products: OfferingDocument.Products
        var eligibility: Eligibility
    }

    /// The package's App Store product's offers this customer may be given now.
    struct Eligibility: Encodable {
        var introductoryOffer: Bool
        var winBackOfferIds: [String]
    }

    enum Key: String, CodingKey {
        case appUserId, version, offeringVersion, offeringId, description, metadata, packages, ruleId, experiment, states
    }

    /// The experiment as the answer names it.
    struct ExperimentVariantBody: Encodable {
        var id: String
        var variant: Int
    }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        let d = offering.document
        try c.put(appUserId, .appUserId)
        try c.put(paywallVersion, .version)
        try c.put(offering.version, .offeringVersion)
        try c.put(d.id, .offeringId)
        try c.put(d.description, .description)
        try c.put(d.metadata ?? .object([:]), .metadata)
        try c.put(
            d.packages.map { package in
                let product = package.products.appStore
                return PackageBody(
                    id: package.id, products: package.products,
                    eligibility: Eligibility(
                        introductoryOffer: product.map(offers.introductory.contains) ?? false,
                        winBackOfferIds: offers.winBack.filter { $0.productId == product }.map(\.offerId)))
            }, .packages)
        try c.put(ruleId, .ruleId)
        try c.put(experiment.map { ExperimentVariantBody(id: $0.experimentId, variant: $0.variant) }, .experiment)
        try c.put(AudienceState.allCases.filter(states.contains).map(\.rawValue), .states)
    }
}
