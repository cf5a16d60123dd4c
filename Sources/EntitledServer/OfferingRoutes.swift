import AppStore
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// Managing offerings and their targeting (`admin`): every change a new version.
struct OfferingRoutes: Sendable {
    let gate: AccessGate
    let changes: OfferingChanges
    let cache: PaywallCache
    /// The configured App Store products a package may name.
    let products: Set<String>
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        let admit: Admission = { _ = try routes.gate.authenticate($0) }
        router.get("/v1/offerings") { try await routes.list($0) }
        // Before `{offeringId}`: the first registered pattern that fits is the one that answers.
        router.add(.put, "/v1/offerings/current", .async { try await routes.setCurrent($0) }, admit: admit)
        router.add(.put, "/v1/offerings/{offeringId}", .async { try await routes.put($0) }, admit: admit)
        router.add(.delete, "/v1/offerings/{offeringId}", .async { try await routes.delete($0) })
        router.get("/v1/targeting") { try await routes.targeting($0) }
        router.add(.put, "/v1/targeting", .async { try await routes.setTargeting($0) }, admit: admit)
    }

    /// `GET /v1/offerings`: every offering, the current one's id and the version.
    func list(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        return RequestInput.noStore(try .json(OfferingListBody(try await cache.current())))
    }

    /// `PUT /v1/offerings/{offeringId}`: creates (201) or replaces (200) the offering.
    func put(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        let id = try request.parameter("offeringId")
        let document = try OfferingRules.offering(id: id, body: request.body, products: products)
        let (paywall, created) = try await changes.put(document, actor: actor, now: clock.nowMilliseconds())
        guard let stored = paywall.offerings[id] else { throw Problems.unavailable }
        return try .json(OfferingBody(stored, paywallVersion: paywall.version), status: created ? 201 : 200)
    }

    /// `DELETE /v1/offerings/{offeringId}`: 409 while it is current or a rule's.
    func delete(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        let id = try request.parameter("offeringId")
        let paywall = try await changes.delete(id, actor: actor, now: clock.nowMilliseconds())
        return try .json(VersionBody(version: paywall.version))
    }

    struct CurrentRequest: Decodable { var offeringId: String? }

    /// `PUT /v1/offerings/current` `{"offeringId": "…"}`.
    func setCurrent(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        guard request.body.count <= 4096 else { throw HTTPError.payloadTooLarge(limit: 4096) }
        let body = try RequestInput.decode(CurrentRequest.self, request)
        guard let id = body.offeringId, OfferingRules.isValidId(id) else {
            throw HTTPError(.invalidOffering, #"the body must be {"offeringId": "…"}"#)
        }
        let paywall = try await changes.setCurrent(id, actor: actor, now: clock.nowMilliseconds())
        return try .json(OfferingListBody(paywall))
    }

    /// `GET /v1/targeting`: the rules in order and the version.
    func targeting(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        return RequestInput.noStore(try .json(TargetingAnswer(try await cache.current())))
    }

    /// `PUT /v1/targeting` `{"rules": […]}`: replaces every rule.
    func setTargeting(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        let known = Set(try await cache.current().offerings.keys)
        let rules = try OfferingRules.targeting(body: request.body, offerings: known)
        let paywall = try await changes.setTargeting(rules, actor: actor, now: clock.nowMilliseconds())
        return try .json(TargetingAnswer(paywall))
    }
}

/// One offering as the admin API answers it: its document, the version of its last change and
/// the paywall's version.
struct OfferingBody: Encodable {
    var offering: Paywall.Offering
    var paywallVersion: Int64?

    init(_ offering: Paywall.Offering, paywallVersion: Int64? = nil) {
        self.offering = offering
        self.paywallVersion = paywallVersion
    }

    enum Key: String, CodingKey { case id, description, metadata, packages, version, updatedAt, paywallVersion }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        let d = offering.document
        try c.put(d.id, .id)
        try c.put(d.description, .description)
        try c.put(d.metadata ?? .object([:]), .metadata)
        try c.put(d.packages, .packages)
        try c.put(offering.version, .version)
        try c.date(offering.updatedAt, .updatedAt)
        if let paywallVersion { try c.put(paywallVersion, .paywallVersion) }
    }
}

/// `GET /v1/offerings`' answer.
struct OfferingListBody: Encodable {
    var version: Int64
    var currentOfferingId: String?
    var offerings: [OfferingBody]

    init(_ paywall: Paywall) {
        version = paywall.version
        currentOfferingId = paywall.current
        offerings = paywall.offerings.values.sorted { $0.document.id < $1.document.id }.map { OfferingBody($0) }
    }

    enum Key: String, CodingKey { case version, currentOfferingId, offerings }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(version, .version)
        try c.put(currentOfferingId, .currentOfferingId)
        try c.put(offerings, .offerings)
    }
}

/// `GET /v1/targeting`'s answer: `{"version", "rules": [{"id", "when", "offeringId"}]}`.
struct TargetingAnswer: Encodable {
    var version: Int64
    var rules: TargetingBody

    init(_ paywall: Paywall) {
        version = paywall.version
        rules = TargetingBody(rules: paywall.rules)
    }

    enum Key: String, CodingKey { case version, rules }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(version, forKey: .version)
        try c.encode(rules.rules.map { TargetingBody.Rule(id: $0.id, when: $0.conditions, offeringId: $0.offeringId) }, forKey: .rules)
    }
}

/// A change's answer when nothing else is to say: the version after it.
struct VersionBody: Encodable { var version: Int64 }
