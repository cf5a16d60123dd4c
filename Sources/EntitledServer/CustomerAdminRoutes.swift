import AppStore
import EntitledConfig
import Entitlements
import Foundation
import HTTPServer
import Storage

/// Customers as people (docs/openapi.yaml, "Customers"): aliases (write scope), promotional grants,
/// export and erasure (admin).
struct CustomerAdminRoutes: Sendable {
    /// Longest `reason` of a grant, in characters.
    static let maxGrantReason = 500
    /// Longest grant in days (about ten years).
    static let maxGrantDays = 3650

    let gate: AccessGate
    let ledger: FactLedger
    let aliases: AliasMerger
    /// The policy every answer is evaluated with: a grant gives an entitlement some product gives.
    let policy: Policy
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.post("/v1/customers/{appUserId}/aliases") { try await routes.addAlias($0) }
        router.post("/v1/customers/{appUserId}/grants") { try await routes.createGrant($0) }
        router.add(.delete, "/v1/customers/{appUserId}/grants/{grantId}", .async { try await routes.endGrant($0) })
        router.get("/v1/customers/{appUserId}/export") { try await routes.exportCustomer($0) }
        router.add(.delete, "/v1/customers/{appUserId}", .async { try await routes.eraseCustomer($0) })
    }

    struct AliasRequest: Decodable { var alias: String? }

    /// `POST /v1/customers/{appUserId}/aliases` `{"alias": "…"}`: from then on both ids are one
    /// customer. Answers the customer as `GET` does for `appUserId`.
    func addAlias(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        let actor = try gate.requireKey(request, scope: .write)
        let body = try RequestInput.decode(AliasRequest.self, request)
        guard let alias = body.alias else { throw HTTPError(.invalidRequest, "alias is required") }
        return RequestInput.noStore(.json(bytes: try await aliases.merge(alias, into: appUserId, actor: actor, now: clock.nowMilliseconds())))
    }

    struct GrantRequest: Decodable {
        var entitlement: String?
        var until: String?
        var days: Int?
        var reason: String?
    }

    /// `POST /v1/customers/{appUserId}/grants` (admin): the entitlement until `until` (ISO 8601) or
    /// for `days` days, without a purchase. 201 with the grant.
    func createGrant(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        let actor = try gate.requireKey(request, scope: .admin)
        let body = try RequestInput.decode(GrantRequest.self, request)
        let now = clock.nowMilliseconds()
        guard let entitlement = body.entitlement, !entitlement.isEmpty, entitlement.count <= 128 else {
            throw HTTPError(.invalidGrant, "entitlement is required (1–128 characters)")
        }
        guard policy.products.values.contains(where: { $0.entitlements.contains(entitlement) }) else {
            throw HTTPError(.invalidGrant, "no configured product gives the entitlement \(entitlement)")
        }
        if let reason = body.reason, reason.count > Self.maxGrantReason {
            throw HTTPError(.invalidGrant, "reason is longer than \(Self.maxGrantReason) characters")
        }
        let until: Int64
        switch (body.until, body.days) {
        case (let text?, nil):
            guard let date = Self.parseInstant(text) else { throw HTTPError(.invalidGrant, "until is not an ISO 8601 instant") }
            until = date
        case (nil, let days?):
            guard (1...Self.maxGrantDays).contains(days) else {
                throw HTTPError(.invalidGrant, "days must be 1…\(Self.maxGrantDays)")
            }
            until = now + Int64(days) * 86_400_000
        default:
            throw HTTPError(.invalidGrant, "send exactly one of until and days")
        }
        guard until > now, Fact.acceptedDates.contains(until) else {
            throw HTTPError(.invalidGrant, "the grant must end after now and before 2200")
        }
        let fact = try await Problems.store { () async throws(StorageError) in
            try await ledger.grant(appUserId: appUserId, entitlement: entitlement, until: until, reason: body.reason, actor: actor, now: now)
        }
        let state = promotionalGrants(in: [.promotionalGrant(fact)])[0]
        return try .json(GrantResponseBody(appUserId: appUserId, state: state, now: now), status: 201)
    }

    /// `DELETE /v1/customers/{appUserId}/grants/{grantId}` (admin): ends the grant now.
    func endGrant(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        let actor = try gate.requireKey(request, scope: .admin)
        let grantId = try request.parameter("grantId")
        let now = clock.nowMilliseconds()
        let state = try await Problems.store { () async throws(StorageError) in
            try await ledger.endGrant(appUserId: appUserId, grantId: grantId, actor: actor, now: now)
        }
        guard let state else { throw HTTPError(.grantNotFound, "this customer has no grant \(grantId)") }
        return try .json(GrantResponseBody(appUserId: appUserId, state: state, now: now))
    }

    /// `GET /v1/customers/{appUserId}/export` (admin): every stored row about the customer.
    func exportCustomer(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        _ = try gate.requireKey(request, scope: .admin)
        let now = clock.nowMilliseconds()
        let export = try await Problems.store { () async throws(StorageError) in try await ledger.exportCustomer(appUserId: appUserId) }
        guard let export else { throw HTTPError(.customerNotFound, "no such customer") }
        return RequestInput.noStore(try .json(CustomerExportBody(appUserId: appUserId, exportedAt: now, export: export)))
    }

    /// `DELETE /v1/customers/{appUserId}` (admin): erasure of the customer and all of its ids.
    func eraseCustomer(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        let actor = try gate.requireKey(request, scope: .admin)
        let now = clock.nowMilliseconds()
        let report = try await Problems.store { () async throws(StorageError) in
            try await ledger.eraseCustomer(appUserId: appUserId, actor: actor, now: now)
        }
        guard let report else { throw HTTPError(.customerNotFound, "no such customer") }
        return try .json(report)
    }

    /// An ISO 8601 instant (`2026-01-31T12:00:00Z`, fractional seconds allowed) in ms.
    static func parseInstant(_ text: String) -> Int64? {
        // Foundation's parser rolls impossible dates over (`2027-02-30` becomes 2 March): the
        // calendar fields are checked first.
        guard text.count <= 64, isCalendarDateTime(text) else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970 * 1000) }
    }

    /// Whether `text` starts with `YYYY-MM-DDTHH:MM:SS` naming a day that exists (30 April, 28 or
    /// 29 February) and a time of day below 24:00:00.
    static func isCalendarDateTime(_ text: String) -> Bool {
        let b = Array(text.utf8.prefix(19))
        guard b.count == 19, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[13] == UInt8(ascii: ":"),
            b[16] == UInt8(ascii: ":")
        else { return false }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard (48...57).contains(b[index]) else { return nil }
                value = value * 10 + Int(b[index] - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month)
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day) && hour < 24 && minute < 60 && second < 60
    }
}

/// Makes one id an alias of another customer: `POST /v1/customers/{appUserId}/aliases` and an
/// anonymous customer's login.
struct AliasMerger: Sendable {
    let ledger: FactLedger
    let answers: CustomerAnswers

    /// Makes `alias` an id of `appUserId`'s customer (the one merge, for aliases and logins);
    /// the customer's answer as `GET` gives it for `appUserId`.
    func merge(_ alias: String, into appUserId: String, actor: String, now: Int64) async throws -> [UInt8] {
        guard AppUserID.isValid(alias) else { throw AppUserID.invalid }
        guard !AppUserID.same(alias, appUserId) else { throw HTTPError(.invalidRequest, "an id cannot be its own alias") }
        let added = try await Problems.store { () async throws(StorageError) -> Bool in
            do throws(StorageError) {
                _ = try await ledger.addAlias(alias, to: appUserId, actor: actor, now: now)
                return true
            } catch {
                if error.code == .aliasConflict { return false }
                throw error
            }
        }
        guard added else { throw HTTPError(.aliasConflict, "\(alias) already belongs to another customer") }
        return try await answers.answer(appUserId: appUserId, context: answers.merged(now: now)).body
    }
}

/// A promotional grant as the grant endpoints answer it.
public struct GrantResponseBody: Encodable, Sendable {
    public var appUserId: String
    public var state: PromotionalGrantState
    public var now: Int64

    enum Key: String, CodingKey { case appUserId, grantId, entitlement, grantedAt, expiresAt, endedEarly, active, reason, source }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(appUserId, .appUserId)
        try c.put(state.grantId, .grantId)
        try c.put(state.entitlement, .entitlement)
        try c.date(state.grantedAt, .grantedAt)
        try c.date(state.endsAt, .expiresAt)
        try c.put(state.endedEarly, .endedEarly)
        try c.put(state.isActive(at: now), .active)
        try c.put(state.reason, .reason)
        try c.put(EntitlementSource.grant.rawValue, .source)
    }
}
