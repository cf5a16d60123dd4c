/// One attribute the app set on a customer (table `customer_attributes`).
public struct CustomerAttribute: Sendable, Hashable {
    public var name: String
    public var value: String
    /// When it was last set (epoch ms).
    public var updatedAt: Int64

    public init(name: String, value: String, updatedAt: Int64) {
        self.name = name
        self.value = value
        self.updatedAt = updatedAt
    }
}

/// How ``CustomerAttributeStore/setAttributes(appUserId:changes:maxCount:now:)`` ended.
public enum AttributeWrite: Sendable, Hashable {
    /// Written: the customer's attributes now, by name.
    case stored([CustomerAttribute])
    /// Nothing written: the customer would have had this many attributes, more than allowed.
    case tooMany(Int)
    /// No customer has this id.
    case customerNotFound
}

/// Customer attributes: string values the app sets about its customer (an email, the app
/// version, the locale, its own keys), read to target offerings and shown in the console. They
/// belong to the customer, whichever of its ids set them, and go with it at erasure.
public protocol CustomerAttributeStore: Sendable {
    /// Sets (a value) or removes (nil) each named attribute of the customer `appUserId` belongs
    /// to, in one transaction; the others stay. Writes nothing when the customer would end with
    /// more than `maxCount` attributes.
    func setAttributes(appUserId: String, changes: [String: String?], maxCount: Int, now: Int64) async throws -> AttributeWrite

    /// The attributes of the customer `appUserId` belongs to, by name; nil when there is no such
    /// customer. An attribute set under several of its ids (before a merge) reads as the latest.
    func attributes(appUserId: String) async throws -> [CustomerAttribute]?

    /// ``attributes(appUserId:)`` on the calling thread, when the backend can read at once (as
    /// ``LedgerStore/stateNow(appUserId:)``); `.wouldWait` means: use the asynchronous read.
    func attributesNow(appUserId: String) throws -> ImmediateRead<[CustomerAttribute]?>
}

extension CustomerAttributeStore {
    /// Backends without immediate reads always defer to the asynchronous one.
    public func attributesNow(appUserId: String) throws -> ImmediateRead<[CustomerAttribute]?> { .wouldWait }
}

extension SessionBackedStore {
    func setAttributes(appUserId: String, changes: [String: String?], maxCount: Int, now: Int64) async throws -> AttributeWrite {
        try await write { session in
            let ledger = Ledger(session: session, fault: nil)
            guard let customer = try ledger.customer(appUserId: appUserId) else { return .customerNotFound }
            var names = Set(try Ledger.readAttributes(session, customerId: customer.id).map(\.name))
            for (name, value) in changes {
                if value == nil { names.remove(name) } else { names.insert(name) }
            }
            guard names.count <= maxCount else { return .tooMany(names.count) }
            for (name, value) in changes.sorted(by: { $0.key < $1.key }) {
                // Every id's row of the name goes: the one written below is the customer's value.
                try session.query(
                    """
                    DELETE FROM customer_attributes WHERE name = \(name)
                      AND customer_id IN (SELECT id FROM customers WHERE id = \(customer.id) OR merged_into = \(customer.id))
                    """)
                if let value {
                    try session.query(
                        "INSERT INTO customer_attributes (customer_id, name, value, updated_at) VALUES (\(customer.id), \(name), \(value), \(now))")
                }
            }
            if !changes.isEmpty { try session.query("UPDATE customers SET attributes_changed_at = \(now) WHERE id = \(customer.id)") }
            return .stored(try Ledger.readAttributes(session, customerId: customer.id))
        }
    }

    func attributes(appUserId: String) async throws -> [CustomerAttribute]? {
        try await read(customer: appUserId) { session in
            guard let customer = try Ledger(session: session, fault: nil).customer(appUserId: appUserId) else { return nil }
            return try Ledger.readAttributes(session, customerId: customer.id)
        }
    }
}

extension Ledger {
    /// The attributes of the customer `customerId` (a customer's row, not an alias's) with its
    /// aliases', the latest of each name.
    static func readAttributes(_ session: any SQLSession, customerId: Int64) throws -> [CustomerAttribute] {
        try readAttributes(session, customers: [customerId])[customerId] ?? []
    }

    /// The attributes of the customer each row of `customerIds` belongs to (the row itself, or the
    /// customer it was merged into), by the asked row id (a customer without any is left out): an
    /// alias's events carry its customer's attributes.
    static func readAttributes(_ session: any SQLSession, customerIds: [Int64]) throws -> [Int64: [CustomerAttribute]] {
        guard !customerIds.isEmpty else { return [:] }
        // Merges are one level deep: a customer with aliases is never merged itself.
        var owner: [Int64: Int64] = [:]
        for row in try session.rows("SELECT id, merged_into FROM customers WHERE id IN (\(list: customerIds))", as: CustomerRootColumns.self) {
            owner[row.id] = row.mergedInto ?? row.id
        }
        let attributes = try readAttributes(session, customers: Array(Set(owner.values)).sorted())
        return owner.compactMapValues { attributes[$0] }
    }

    /// The attributes of each customer of `customers` (customers' rows) with its aliases', the
    /// latest of each name, by customer.
    private static func readAttributes(_ session: any SQLSession, customers: [Int64]) throws -> [Int64: [CustomerAttribute]] {
        guard !customers.isEmpty else { return [:] }
        let rows = try session.rows(
            """
            SELECT c.id, c.merged_into, a.name, a.value, a.updated_at FROM customer_attributes a
            JOIN customers c ON c.id = a.customer_id
            WHERE c.id IN (\(list: customers)) OR c.merged_into IN (\(list: customers))
            ORDER BY a.updated_at, a.name
            """, as: AttributeColumns.self)
        var latest: [Int64: [String: CustomerAttribute]] = [:]
        for row in rows {
            latest[row.mergedInto ?? row.id, default: [:]][row.name] = CustomerAttribute(name: row.name, value: row.value, updatedAt: row.updatedAt)
        }
        return latest.mapValues { $0.values.sorted { $0.name < $1.name } }
    }
}

/// A customer row and the customer it was merged into.
private struct CustomerRootColumns: Decodable {
    var id: Int64
    var mergedInto: Int64?
}

/// A stored attribute's columns.
private struct AttributeColumns: Decodable {
    var id: Int64
    var mergedInto: Int64?
    var name: String
    var value: String
    var updatedAt: Int64
}
