import AppStore
import HTTPServer
import Storage

/// Customer attributes: set by the customer's own token or a `write` key, read with `read`.
struct AttributeRoutes: Sendable {
    let gate: AccessGate
    let ledger: FactLedger
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.add(
            .put, "/v1/customers/{appUserId}/attributes", .async { try await routes.setAttributes($0) },
            admit: { _ = try routes.gate.authenticate($0) })
        router.get("/v1/customers/{appUserId}/attributes") { try await routes.attributes($0) }
    }

    /// `PUT /v1/customers/{appUserId}/attributes` `{"attributes": {"name": "value" | null}}`: sets
    /// the named attributes (null or "" removes one), keeps the others; answers them all.
    func setAttributes(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .write, appUserId: appUserId)
        let changes = try CustomerAttributes.changes(body: request.body)
        let now = clock.nowMilliseconds()
        let outcome = try await Problems.store { () async throws(StorageError) in
            try await ledger.setAttributes(appUserId: appUserId, changes: changes, maxCount: CustomerAttributes.maxCount, now: now)
        }
        switch outcome {
        case .stored(let attributes):
            return RequestInput.noStore(try .json(AttributesBody(appUserId: appUserId, attributes: attributes)))
        case .tooMany(let count):
            throw HTTPError(
                .tooManyAttributes, "the customer would have \(count) attributes, more than \(CustomerAttributes.maxCount): remove some")
        case .customerNotFound:
            throw HTTPError(.customerNotFound, "no such customer")
        }
    }

    /// `GET /v1/customers/{appUserId}/attributes`.
    func attributes(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .read, appUserId: appUserId)
        let attributes = try await Problems.store { () async throws(StorageError) in try await ledger.attributes(appUserId: appUserId) }
        guard let attributes else { throw HTTPError(.customerNotFound, "no such customer") }
        return RequestInput.noStore(try .json(AttributesBody(appUserId: appUserId, attributes: attributes)))
    }
}
