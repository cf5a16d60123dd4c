import AppStore
import Entitlements
import HTTPServer
import Storage

/// Managing experiments (`admin`; every change a new version of the offerings) and reading them
/// and their results (`console` or `admin`).
struct ExperimentRoutes: Sendable {
    let gate: AccessGate
    let changes: ExperimentChanges
    let cache: PaywallCache
    let results: ExperimentResultsReader
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        let admit: Admission = { _ = try routes.gate.authenticate($0) }
        router.get("/v1/experiments") { try await routes.list($0) }
        router.get("/v1/experiments/{experimentId}") { try await routes.experiment($0) }
        router.add(.put, "/v1/experiments/{experimentId}", .async { try await routes.put($0) }, admit: admit)
        router.get("/v1/experiments/{experimentId}/results") { try await routes.results($0) }
    }

    /// `GET /v1/experiments`: every experiment by id, and the version. Reading experiments and
    /// their results is the console's too (`console` or `admin`).
    func list(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .console)
        let paywall = try await cache.current()
        return RequestInput.noStore(try .json(ExperimentListBody(version: paywall.version, experiments: paywall.experimentEntries.map { ExperimentBody(entry: $0) })))
    }

    /// `GET /v1/experiments/{experimentId}`.
    func experiment(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .console)
        let entry = try await self.entry(request)
        return RequestInput.noStore(try .json(ExperimentBody(entry: entry)))
    }

    /// `PUT /v1/experiments/{experimentId}`: creates (201) or replaces (200) the experiment.
    func put(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .admin)
        let id = try request.parameter("experimentId")
        let known = Set(try await cache.current().offerings.keys)
        let experiment = try ExperimentRules.experiment(id: id, body: request.body, offerings: known)
        let (paywall, created) = try await changes.put(experiment, actor: actor, now: clock.nowMilliseconds())
        guard let stored = paywall.experimentEntries.first(where: { $0.experiment.id == id }) else { throw Problems.unavailable }
        return try .json(ExperimentBody(entry: stored, paywallVersion: paywall.version), status: created ? 201 : 200)
    }

    /// `GET /v1/experiments/{experimentId}/results`: per variant and horizon, computed now.
    func results(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .console)
        let entry = try await self.entry(request)
        return RequestInput.noStore(try .json(try await results.results(of: entry, now: clock.nowMilliseconds())))
    }

    private func entry(_ request: Request) async throws -> Paywall.ExperimentEntry {
        let id = try request.parameter("experimentId")
        guard let entry = try await cache.current().experimentEntries.first(where: { $0.experiment.id == id }) else {
            throw HTTPError(.experimentNotFound, "no experiment \(id.prefix(64))")
        }
        return entry
    }
}

/// `GET /v1/experiments`' answer.
struct ExperimentListBody: Encodable {
    var version: Int64
    var experiments: [ExperimentBody]
}
