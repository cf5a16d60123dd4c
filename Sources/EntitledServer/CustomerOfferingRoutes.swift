import AppStore
import Foundation
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
        router.get("/v1/customers/{appUserId}/offerings", fast: { try routes.offeringNow($0) }) { try await routes.offering($0) }
    }

    /// `?storefront=USA&appVersion=2.4.1&locale=en_US&platform=ios`, each optional: what the app
    /// knows now, before the customer's attributes.
    func offering(_ request: Request) async throws -> Response {
        let (appUserId, asked) = try Self.input(request, gate: gate)
        return RequestInput.noStore(.json(bytes: try await offerings.answer(appUserId: appUserId, asked: asked)))
    }

    /// ``offering(_:)`` on the poll thread, from memory and what the store reads at once (the
    /// customer's rendered answer, their attributes when a rule needs them); nil sends the request
    /// to ``offering(_:)``.
    func offeringNow(_ request: Request) throws -> Response? {
        let (appUserId, asked) = try Self.input(request, gate: gate)
        guard let body = try offerings.answerNow(appUserId: appUserId, asked: asked) else { return nil }
        return RequestInput.noStore(.json(bytes: body))
    }

    /// The customer the path names, authorized, and what the query says.
    static func input(_ request: Request, gate: AccessGate) throws -> (appUserId: String, asked: CustomerOfferings.Asked) {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .read, appUserId: appUserId)
        // A read without a query (the app's usual one) looks nothing up.
        guard !request.query.isEmpty else { return (appUserId, CustomerOfferings.Asked()) }
        let asked = try CustomerOfferings.Asked(
            storefront: RequestInput.storefront(request), appVersion: text(request, "appVersion", limit: 64),
            locale: text(request, "locale", limit: 35), platform: text(request, "platform", limit: 16))
        return (appUserId, asked)
    }

    /// `?name=`: 1…`limit` bytes without control characters; nil when absent.
    private static func text(_ request: Request, _ name: String, limit: Int) throws(HTTPError) -> String? {
        guard let value = request.query[name] else { return nil }
        guard (1...limit).contains(value.utf8.count), !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw HTTPError(.invalidRequest, "\(name) must be 1…\(limit) bytes") }
        return value
    }
}

/// Which offering a customer sees, with each package's offer eligibility: the paywall from memory,
/// the customer's state from their rendered answer (``CustomerAudience``; evaluated from the
/// ledger when none holds), their attributes from the ledger, the choice the engine's. Knows no
/// request.
struct CustomerOfferings: Sendable {
    let ledger: FactLedger
    let cache: PaywallCache
    let answers: CustomerAnswers
    let clock: any EpochClock
    let experiments: ExperimentExposure
    /// Offerings' metadata encoded once per offering version.
    let encoded = EncodedOfferings()
    /// The poll thread's answers, held by everything they are written from but the customer's id.
    let held = OfferingAnswerCache()

    /// What the app said in the request (each one wins over the attribute of the same meaning).
    struct Asked: Sendable, Hashable {
        var storefront: String?
        var appVersion: String?
        var locale: String?
        var platform: String?
    }

    /// The answer's JSON.
    func answer(appUserId: String, asked: Asked) async throws -> [UInt8] {
        let paywall = try await cache.current()
        let now = clock.nowMilliseconds()
        let context = answers.merged(now: now)
        let rendered = try await Problems.store { () async throws(StorageError) in
            try await ledger.renderedCustomer(appUserId: appUserId, context: context)
        }
        let customer: CustomerAudience
        if let stored = rendered?.audience(codec: ledger.cache.codec) {
            customer = stored
        } else {
            let snapshot = try await Problems.store { () async throws(StorageError) in
                try await ledger.customer(appUserId: appUserId, context: context)
            }
            customer = CustomerAudience(snapshot.state)
        }
        let stored = try await Problems.store { () async throws(StorageError) in try await ledger.attributes(appUserId: appUserId) }
        let audience = Self.audience(customer, attributes: stored ?? [], asked: asked)
        // A running experiment whose audience holds (or one the customer is enrolled in) decides
        // before the targeting rules.
        let assignment = try await experiments.assignment(appUserId: appUserId, audience: audience, paywall: paywall, now: now)
        return try body(appUserId: appUserId, paywall: paywall, audience: audience, offers: customer.offers, experiment: assignment)
    }

    /// ``answer(appUserId:asked:)`` without waiting: nil when the paywall's version is due for a
    /// check, an experiment is live (its enrolment is a write), the customer has no rendered answer
    /// that holds now, or the store cannot read at once.
    func answerNow(appUserId: String, asked: Asked) throws -> [UInt8]? {
        guard let paywall = cache.currentNow(), paywall.liveExperiments.isEmpty else { return nil }
        // The stored answer's head alone: its audience line is all this read needs of it. A
        // storage error here is left to the slow path, which answers it properly.
        guard let rendered = try? ledger.renderedHeadNow(appUserId: appUserId, now: clock.nowMilliseconds()),
            !rendered.audienceLine.isEmpty
        else { return nil }
        let attributes: [CustomerAttribute]
        if paywall.readsAttributes(asked) {
            guard let stored = try? ledger.attributesNow(appUserId: appUserId) else { return nil }
            attributes = stored
        } else {
            attributes = []
        }
        guard ledger.cache.codec.fastPaths else {
            return try written(appUserId: appUserId, asked: asked, rendered: rendered, attributes: attributes, paywall: paywall)
        }
        let key = OfferingAnswerCache.Key(paywallVersion: paywall.version, audience: rendered.audienceLine, asked: asked, attributes: attributes)
        return try held.bytes(appUserId: appUserId, key: key) {
            try written(appUserId: appUserId, asked: asked, rendered: rendered, attributes: attributes, paywall: paywall)
        }
    }

    /// ``answerNow(appUserId:asked:)``'s answer written from its inputs; nil when the rendered
    /// answer's audience does not read.
    private func written(
        appUserId: String, asked: Asked, rendered: RenderedCustomer.Head, attributes: [CustomerAttribute], paywall: Paywall
    ) throws -> [UInt8]? {
        guard let customer = rendered.audience(codec: ledger.cache.codec) else { return nil }
        let audience = Self.audience(customer, attributes: attributes, asked: asked)
        return try body(appUserId: appUserId, paywall: paywall, audience: audience, offers: customer.offers, experiment: nil)
    }

    /// What targeting decides on: what the app said, else the customer's attributes, else their state.
    private static func audience(_ customer: CustomerAudience, attributes stored: [CustomerAttribute], asked: Asked) -> Audience {
        let attributes = Dictionary(stored.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
        return Audience(
            storefront: asked.storefront ?? attributes["$storefront"] ?? customer.storefront,
            appVersion: asked.appVersion ?? attributes["$appVersion"], locale: asked.locale ?? attributes["$locale"],
            platform: asked.platform, attributes: attributes, states: Set(customer.states))
    }

    private func body(
        appUserId: String, paywall: Paywall, audience: Audience, offers: EligibleOffers, experiment assignment: ExperimentAssignment?
    ) throws -> [UInt8] {
        let chosen = assignment.flatMap { a in paywall.offerings[a.offeringId].map { ($0, nil as String?) } } ?? paywall.choose(for: audience)
        guard let (offering, ruleId) = chosen else {
            throw HTTPError(.offeringNotFound, "no offering is current and no targeting rule chose one")
        }
        let body = CustomerOfferingBody(
            appUserId: appUserId, paywallVersion: paywall.version, offering: offering, ruleId: ruleId, offers: offers,
            states: audience.states, experiment: assignment)
        guard ledger.cache.codec.fastPaths else { return Array(try JSONEncoder.entitledDefault.encode(body)) }
        return encoded.bytes(body)
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
        try c.put(packages, .packages)
        try c.put(ruleId, .ruleId)
        try c.put(experiment.map { ExperimentVariantBody(id: $0.experimentId, variant: $0.variant) }, .experiment)
        try c.put(stateNames, .states)
    }

    /// Each package with its App Store product's eligibility.
    var packages: [PackageBody] {
        offering.document.packages.map { package in
            let product = package.products.appStore
            return PackageBody(
                id: package.id, products: package.products,
                eligibility: Eligibility(
                    introductoryOffer: product.map(offers.introductory.contains) ?? false,
                    winBackOfferIds: offers.winBack.filter { $0.productId == product }.map(\.offerId)))
        }
    }

    /// ``states`` in ``AudienceState/allCases`` order.
    var stateNames: [String] { AudienceState.allCases.filter(states.contains).map(\.rawValue) }
}
