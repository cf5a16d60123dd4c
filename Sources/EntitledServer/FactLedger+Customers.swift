import AppStore
import EntitledConfig
import Entitlements
import Foundation
import HTTPServer
import Storage

/// Customers as people through the ledger: aliases, promotional grants, export and erasure
/// (storage's ``Storage/CustomerDirectory``).
extension FactLedger {
    /// Makes `alias` an id of `appUserId`'s customer (see ``Storage/CustomerDirectory``).
    public func addAlias(_ alias: String, to appUserId: String, actor: String?, now: Int64) async throws(StorageError) -> AliasOutcome {
        let outcome = try await mapped { try await store.addAlias(alias, to: appUserId, actor: actor, projector: projector, now: now) }
        if outcome != .alreadyAlias { events.ring() }  // a `customer.merged` event committed
        return outcome
    }

    /// Gives `appUserId`'s customer (created when missing) `entitlement` from `now` until `until`.
    /// - Returns: the grant fact stored.
    public func grant(
        appUserId: String, entitlement: String, until: Int64, reason: String?, actor: String?, now: Int64
    ) async throws(StorageError) -> PromotionalGrantFact {
        return try await mapped {
            guard let customer = try await store.customer(appUserId: appUserId, createIfMissing: true, projector: projector, now: now)
            else { throw StorageError(.internal, "customer was not created") }
            let fact = PromotionalGrantFact(
                grantId: UUID().uuidString.lowercased(), entitlement: entitlement, grantedAt: now, expiresDate: until,
                reason: reason, grantedBy: actor, appAccountToken: customer.appAccountToken)
            try await store.appendCustomerFact(.promotionalGrant(fact), projector: projector, now: now)
            return fact
        }
    }

    /// The customer's promotional grants as their facts say (every id's), nil when the customer does not exist.
    public func promotionalGrants(appUserId: String) async throws(StorageError) -> (facts: [PromotionalGrantFact], states: [PromotionalGrantState])? {
        try await mapped {
            guard try await store.customer(appUserId: appUserId) != nil else { return nil }
            let facts = try await store.facts(appUserId: appUserId, projector: projector).compactMap(\.fact)
            let grants = facts.compactMap { fact -> PromotionalGrantFact? in
                if case .promotionalGrant(let g) = fact { return g }
                return nil
            }
            return (grants, Entitlements.promotionalGrants(in: facts))
        }
    }

    /// Ends the grant `grantId` of `appUserId`'s customer at `now`.
    /// - Returns: the grant as it now stands; nil when the customer has no such grant.
    public func endGrant(appUserId: String, grantId: String, actor: String?, now: Int64) async throws(StorageError) -> PromotionalGrantState? {
        guard let grants = try await promotionalGrants(appUserId: appUserId),
            let grant = grants.facts.first(where: { $0.grantId == grantId })
        else { return nil }
        return try await mapped {
            // An end after the grant lapsed changes nothing: only one that cuts it short is stored.
            if now < (grants.states.first { $0.grantId == grantId }?.endsAt ?? 0) {
                let end = PromotionalGrantEndFact(grantId: grantId, endedAt: now, endedBy: actor, appAccountToken: grant.appAccountToken)
                try await store.appendCustomerFact(.promotionalGrantEnd(end), projector: projector, now: now)
            }
            return try await promotionalGrants(appUserId: appUserId)?.states.first { $0.grantId == grantId }
        }
    }

    /// Every stored row about the customer `appUserId` belongs to; nil when there is none.
    public func exportCustomer(appUserId: String) async throws(StorageError) -> CustomerExport? {
        return try await mapped { try await store.exportCustomer(appUserId: appUserId) }
    }

    /// Erases the customer `appUserId` belongs to; nil when there is none.
    public func eraseCustomer(appUserId: String, actor: String?, now: Int64) async throws(StorageError) -> ErasureReport? {
        let report = try await mapped { try await store.eraseCustomer(appUserId: appUserId, actor: actor, now: now) }
        if report != nil { events.ring() }  // a `customer.deleted` event committed
        return report
    }
}

/// `GET /v1/customers/{appUserId}/export` and `entitled export-customer`: everything stored about
/// a customer, table by table, as one JSON document.
public struct CustomerExportBody: Encodable, Sendable {
    public var appUserId: String
    public var exportedAt: Int64
    public var export: CustomerExport

    public init(appUserId: String, exportedAt: Int64, export: CustomerExport) {
        self.appUserId = appUserId
        self.exportedAt = exportedAt
        self.export = export
    }

    private struct Name: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Name.self)
        try c.encode(appUserId, forKey: Name("appUserId"))
        try c.encode(ISO8601.format(milliseconds: exportedAt), forKey: Name("exportedAt"))
        var tables = c.nestedContainer(keyedBy: Name.self, forKey: Name("tables"))
        for (table, rows) in export.tables {
            var list = tables.nestedUnkeyedContainer(forKey: Name(table))
            for row in rows {
                var object = list.nestedContainer(keyedBy: Name.self)
                for (column, value) in row {
                    switch value {
                    case .null: try object.encodeNil(forKey: Name(column))
                    case .int(let number): try object.encode(number, forKey: Name(column))
                    case .text(let text): try object.encode(text, forKey: Name(column))
                    }
                }
            }
        }
    }
}

/// `entitled export-customer`'s work: the export document of one customer, nil when there is none.
public enum CustomerExportCommand {
    public static func run(configuration: EntitledConfig.Configuration, appUserId: String, now: Int64) async throws -> [UInt8]? {
        let store = try await openStore(url: configuration.database)
        do {
            let ledger = FactLedger(store: store, configuration: configuration)
            let export = try await ledger.exportCustomer(appUserId: appUserId)
            await store.close()
            return try export.map { Array(try JSONEncoder.entitledDefault.encode(CustomerExportBody(appUserId: appUserId, exportedAt: now, export: $0))) }
        } catch {
            await store.close()
            throw error
        }
    }
}
