/// One stored offering: its document (the server's JSON) and the version of its last change.
public struct StoredOffering: Sendable, Hashable {
    public var id: String
    public var document: String
    public var version: Int64
    public var updatedAt: Int64

    public init(id: String, document: String, version: Int64, updatedAt: Int64) {
        self.id = id
        self.document = document
        self.version = version
        self.updatedAt = updatedAt
    }
}

/// One logged change of the offerings (table `paywall_changes`).
public struct PaywallChangeRecord: Sendable, Hashable {
    /// Its number.
    public var version: Int64
    /// `offering` (created or replaced), `offeringDeleted`, `current` or `targeting`.
    public var kind: String
    /// The offering it names (none for `targeting`).
    public var subject: String?
    /// The document it stored (an offering's, the rules'), nil for the others.
    public var document: String?
    /// The API key that made it (nil: the configuration's seed).
    public var actor: String?
    public var changedAt: Int64

    public init(version: Int64, kind: String, subject: String?, document: String?, actor: String?, changedAt: Int64) {
        self.version = version
        self.kind = kind
        self.subject = subject
        self.document = document
        self.actor = actor
        self.changedAt = changedAt
    }
}

/// The offerings, the current one and the targeting rules as they stand at ``version``.
public struct PaywallSnapshot: Sendable, Hashable {
    /// The number of the latest change (0: never changed).
    public var version: Int64
    /// Every offering, by id.
    public var offerings: [StoredOffering]
    /// The current offering's id.
    public var current: String?
    /// The targeting rules' document.
    public var targeting: String?
    /// Every experiment, by id.
    public var experiments: [StoredExperiment]

    public init(
        version: Int64 = 0, offerings: [StoredOffering] = [], current: String? = nil, targeting: String? = nil,
        experiments: [StoredExperiment] = []
    ) {
        self.version = version
        self.offerings = offerings
        self.current = current
        self.targeting = targeting
        self.experiments = experiments
    }

    public func offering(_ id: String) -> StoredOffering? { offerings.first { $0.id == id } }
}

/// One change of the offerings; each one applied is a new version.
public enum PaywallChange: Sendable, Hashable {
    /// Creates or replaces an offering.
    case putOffering(id: String, document: String)
    case deleteOffering(id: String)
    case setCurrent(offeringId: String)
    case setTargeting(document: String)
    /// Creates or replaces an experiment.
    case putExperiment(id: String, document: String)
}

/// Offerings (what the paywall sells) and their targeting, versioned: every change is numbered
/// and logged (`paywall_changes`, with its actor), and the latest number says whether a copy held
/// in memory is still current.
public protocol OfferingStore: Sendable {
    /// The number of the latest change (one indexed row; 0 before any).
    func paywallVersion() async throws -> Int64

    /// Everything as it stands.
    func paywall() async throws -> PaywallSnapshot

    /// In one transaction, one change at a time across servers: reads the snapshot, asks `decide`
    /// for the changes (it checks them against the snapshot; what it throws is thrown, nothing
    /// written), applies each as a new version and returns the snapshot after them.
    func changePaywall(
        actor: String?, now: Int64, _ decide: @escaping @Sendable (PaywallSnapshot) throws -> [PaywallChange]
    ) async throws -> PaywallSnapshot

    /// The changes that named offering `id` — created or replaced, deleted, made current — newest
    /// first, at most `limit` (1…100). The log is the admins' changes: small, read without an index.
    func paywallChanges(subject id: String, limit: Int) async throws -> [PaywallChangeRecord]
}

extension SessionBackedStore {
    func paywallVersion() async throws -> Int64 {
        try await read { session in try Self.paywallVersion(session) }
    }

    func paywall() async throws -> PaywallSnapshot {
        try await read { session in try Self.readPaywall(session) }
    }

    func changePaywall(
        actor: String?, now: Int64, _ decide: @escaping @Sendable (PaywallSnapshot) throws -> [PaywallChange]
    ) async throws -> PaywallSnapshot {
        try await write { session in
            // Taking the version row's lock first makes concurrent changes wait for each other, so
            // each decides on the snapshot the previous one left.
            try session.query("UPDATE paywall_settings SET updated_at = updated_at WHERE name = 'version'")
            let before = try Self.readPaywall(session)
            var version = before.version
            for change in try decide(before) {
                version += 1
                let (kind, subject, document): (String, String?, String?)
                switch change {
                case .putOffering(let id, let text):
                    (kind, subject, document) = ("offering", id, text)
                    try session.query("DELETE FROM offerings WHERE offering_id = \(id)")
                    try session.query(
                        "INSERT INTO offerings (offering_id, document, version, updated_at) VALUES (\(id), \(text), \(version), \(now))")
                case .deleteOffering(let id):
                    (kind, subject, document) = ("offeringDeleted", id, nil)
                    try session.query("DELETE FROM offerings WHERE offering_id = \(id)")
                case .setCurrent(let id):
                    (kind, subject, document) = ("current", id, nil)
                    try Self.setSetting(session, name: "current", value: id, version: version, now: now)
                case .setTargeting(let text):
                    (kind, subject, document) = ("targeting", nil, text)
                    try Self.setSetting(session, name: "targeting", value: text, version: version, now: now)
                case .putExperiment(let id, let text):
                    (kind, subject, document) = ("experiment", id, text)
                    try session.query("DELETE FROM experiments WHERE experiment_id = \(id)")
                    try session.query(
                        "INSERT INTO experiments (experiment_id, document, version, updated_at) VALUES (\(id), \(text), \(version), \(now))")
                }
                try session.query(
                    """
                    INSERT INTO paywall_changes (version, kind, subject, document, actor, changed_at)
                    VALUES (\(version), \(kind), \(subject), \(document), \(actor), \(now))
                    """)
            }
            if version != before.version {
                try session.query("UPDATE paywall_settings SET version = \(version), updated_at = \(now) WHERE name = 'version'")
            }
            return try Self.readPaywall(session)
        }
    }

    func paywallChanges(subject id: String, limit: Int) async throws -> [PaywallChangeRecord] {
        let limit = Int64(min(max(limit, 1), 100))
        return try await read { session in
            try session.rows(
                """
                SELECT version, kind, subject, document, actor, changed_at FROM paywall_changes
                WHERE subject = \(id) ORDER BY version DESC LIMIT \(limit)
                """, as: ChangeColumns.self
            ).map {
                PaywallChangeRecord(
                    version: $0.version, kind: $0.kind, subject: $0.subject, document: $0.document, actor: $0.actor, changedAt: $0.changedAt)
            }
        }
    }

    static func paywallVersion(_ session: any SQLSession) throws -> Int64 {
        try session.value("SELECT version FROM paywall_settings WHERE name = 'version'", as: Int64.self) ?? 0
    }

    static func setSetting(_ session: any SQLSession, name: String, value: String, version: Int64, now: Int64) throws {
        try session.query("DELETE FROM paywall_settings WHERE name = \(name)")
        try session.query(
            "INSERT INTO paywall_settings (name, value, version, updated_at) VALUES (\(name), \(value), \(version), \(now))")
    }

    static func readPaywall(_ session: any SQLSession) throws -> PaywallSnapshot {
        let offerings = try session.rows(
            "SELECT offering_id, document, version, updated_at FROM offerings ORDER BY offering_id", as: OfferingColumns.self)
        let settings = try session.rows("SELECT name, value, version FROM paywall_settings", as: SettingColumns.self)
        let experiments = try session.rows(
            "SELECT experiment_id AS offering_id, document, version, updated_at FROM experiments ORDER BY experiment_id", as: OfferingColumns.self)
        func setting(_ name: String) -> SettingColumns? { settings.first { $0.name == name } }
        func stored(_ row: OfferingColumns) -> StoredOffering {
            StoredOffering(id: row.offeringId, document: row.document, version: row.version, updatedAt: row.updatedAt)
        }
        return PaywallSnapshot(
            version: setting("version")?.version ?? 0, offerings: offerings.map(stored), current: setting("current")?.value,
            targeting: setting("targeting")?.value, experiments: experiments.map(stored))
    }
}

/// A stored offering's columns.
private struct OfferingColumns: Decodable {
    var offeringId: String
    var document: String
    var version: Int64
    var updatedAt: Int64
}

/// A paywall setting's columns.
private struct SettingColumns: Decodable {
    var name: String
    var value: String
    var version: Int64
}

/// A logged change's columns.
private struct ChangeColumns: Decodable {
    var version: Int64
    var kind: String
    var subject: String?
    var document: String?
    var actor: String?
    var changedAt: Int64
}
