import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// The backends every conformance test runs against.
///
/// PostgreSQL comes from `ENTITLED_TEST_POSTGRES` (a libpq URL). Without it the PostgreSQL cases
/// are left out locally — but when `CI` is set they stay in and fail, so a CI run without
/// PostgreSQL can't pass by skipping.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqliteFile
    case sqliteMemory
    case postgres

    var testDescription: String { rawValue }

    static var postgresURL: String? {
        let value = ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"] ?? ""
        return value.isEmpty ? nil : value
    }

    static var inCI: Bool { !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty }

    /// All backends available here (PostgreSQL also when it is missing in CI, so it fails).
    static let all: [Backend] = {
        var list: [Backend] = [.sqliteFile, .sqliteMemory]
        if postgresURL != nil || inCI { list.append(.postgres) }
        return list
    }()

    /// The backends that persist across reopening (for schema and crash tests).
    static let durable: [Backend] = all.filter { $0 != .sqliteMemory }

    /// PostgreSQL alone (empty locally without a server, failing in CI without one).
    static let postgresOnly: [Backend] = all.filter { $0 == .postgres }
}

/// A fresh, empty database for one test: a temporary SQLite file, a private in-memory database,
/// or a PostgreSQL schema of its own (handed back to ``PostgresSchemaPool/shared`` afterwards:
/// reset for another test, or dropped).
struct TestDatabase: Sendable {
    let backend: Backend
    let url: String
    let schema: String?
    let directory: URL?

    /// A database for a test that opens it migrated: on PostgreSQL, a schema from the pool
    /// when it has one. The tests of migrations, which open a database as an older binary left
    /// it, use ``init(_:)``.
    init(migrated backend: Backend) throws {
        let fresh = try TestDatabase(backend)
        let pooled = fresh.schema == nil ? nil : PostgresSchemaPool.shared.take(url: fresh.url)
        self.init(backend: backend, url: fresh.url, schema: pooled ?? fresh.schema, directory: fresh.directory)
    }

    /// A database that already exists: `schema` on the server at `url`, or the SQLite file in `directory`.
    init(backend: Backend, url: String, schema: String?, directory: URL?) {
        (self.backend, self.url, self.schema, self.directory) = (backend, url, schema, directory)
    }

    init(_ backend: Backend) throws {
        self.backend = backend
        let tag = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        switch backend {
        case .sqliteFile:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-storage-\(tag)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            self.directory = directory
            url = "sqlite:" + directory.appendingPathComponent("ledger.sqlite").path
            schema = nil
        case .sqliteMemory:
            directory = nil
            url = "sqlite::memory:"
            schema = nil
        case .postgres:
            guard let base = Backend.postgresURL else {
                Issue.record("ENTITLED_TEST_POSTGRES is not set but CI is: PostgreSQL tests must run in CI")
                throw StorageError(.unavailable, "no PostgreSQL for tests")
            }
            directory = nil
            url = base
            schema = "t_\(tag)"
        }
    }

    func configuration(fault: FaultInjector? = nil, migrate: Bool = true, through: Int? = nil) -> StoreConfiguration {
        var configuration = StoreConfiguration()
        configuration.migrateThrough = through
        configuration.postgresSchema = schema
        configuration.faultInjector = fault
        configuration.migrateOnOpen = migrate
        configuration.postgresConnections = 4
        return configuration
    }

    func open(fault: FaultInjector? = nil, migrate: Bool = true, through: Int? = nil) async throws -> any LedgerStore {
        try await openStore(url: url, configuration: configuration(fault: fault, migrate: migrate, through: through))
    }

    func destroy() async {
        if let directory { try? FileManager.default.removeItem(at: directory) }
        if let schema { await PostgresSchemaPool.shared.recycle(schema: schema, url: url) }
    }
}

extension StoreConfiguration {
    /// A fresh SQLite database starts as a copy of the process's migrated template
    /// (``SQLiteStore/migratedImage``) instead of running every migration. PostgreSQL's comes
    /// from ``PostgresSchemaPool`` instead (``TestDatabase/init(migrated:)``): a database copied
    /// from a template cost its server as much CPU as the migrations. Nothing changes for a store
    /// opened without migrating.
    mutating func startMigrated(_ backend: Backend) async throws {
        guard migrateOnOpen, backend != .postgres else { return }
        sqliteInitialImage = try await SQLiteStore.migratedImage.value
    }
}

let testNow: Int64 = 1_800_000_000_000
let day: Int64 = 86_400_000
/// The projector every test uses (and every post-test rebuild).
let testProjector = Projector(entitlements: ["com.example.pro": "pro"])

/// The test projector reading each fact's text through `decode`, which is handed the text and the
/// test projector's own decoder.
func decodingTestProjector(_ decode: @escaping @Sendable (String, @Sendable (String) -> Fact?) -> Fact?) -> Projector {
    var projector = testProjector
    let base = testProjector.factCoding.decode
    projector.factCoding.decode = { decode($0, base) }
    return projector
}

/// Opens a fresh store (its options changed by `configure`), runs `body`, then checks that a
/// rebuild finds no differences (unless `checksRebuild` is false: synthetic answers with no
/// facts behind them).
func withStore(
    _ backend: Backend, fault: FaultInjector? = nil, now: Int64 = testNow, checksRebuild: Bool = true,
    configure: (inout StoreConfiguration, TestDatabase) -> Void = { _, _ in },
    _ body: (any LedgerStore, TestDatabase) async throws -> Void
) async throws {
    let database = try TestDatabase(migrated: backend)
    var options = database.configuration(fault: fault)
    configure(&options, database)
    #expect(options.migrateOnOpen && options.migrateThrough == nil, "withStore opens migrated databases only")
    try await options.startMigrated(backend)
    let store = try await openStore(url: database.url, configuration: options)
    do {
        try await body(store, database)
        if checksRebuild {
            let report = try await store.rebuild(projector: testProjector, now: now)
            #expect(report.differences == 0, "rebuild found differences: \(report.changedCustomers)")
        }
    } catch {
        await store.close()
        await database.destroy()
        throw error
    }
    await store.close()
    await database.destroy()
}

extension LedgerStore {
    /// Folds the rollup journal into the rollup tables now (``RollupWrites/journaled``), for a
    /// test that reads or changes those tables themselves. Until the journal is empty: a fold the
    /// store's folder runs meanwhile holds its rows (this one skips them) until it commits.
    func foldJournal() async throws {
        let store = try #require(self as? any SessionBackedStore)
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            while try await store.write({ try Ledger(session: $0, fault: nil).foldRollupJournal() }) > 0 {}
            if try await count("SELECT COUNT(*) FROM rollup_journal") == 0 { return }
            try #require(ContinuousClock.now < deadline, "the rollup journal did not empty")
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func raw(_ sql: String) async throws {
        switch self {
        case let store as SQLiteStore: try await store._execute(sql)
        case let store as PostgresStore: try await store._execute(sql)
        default: Issue.record("unknown store")
        }
    }

    func count(_ sql: SQLQuery) async throws -> Int64 {
        switch self {
        case let store as SQLiteStore: return try await store._scalar(sql)
        case let store as PostgresStore: return try await store._scalar(sql)
        default:
            Issue.record("unknown store")
            return -1
        }
    }

    /// A customer's stored projection in a database written before `customer_states` had its
    /// `answer` column (a fixture not yet migrated), read as this binary reads a current one.
    func projectionBeforeAnswers(appUserId: String) async throws -> StoredProjection? {
        guard let store = self as? any SessionBackedStore else {
            Issue.record("unknown store")
            return nil
        }
        return try await store.read { session in
            try session.query(
                """
                SELECT customer_id AS id, app_user_id, app_account_token, created_at, state, projection_rows, computed_at,
                       projection_error, NULL AS answer
                FROM customer_states WHERE app_user_id = \(appUserId)
                """
            ).first.map(Ledger.decodeState)
        }
    }

    /// Rows in a table.
    func rows(_ table: String) async throws -> Int64 { try await count(SQLQuery(verbatim: "SELECT COUNT(*) FROM \(table)")) }
}

/// A fact with the signed text it came from, as the ledger takes it.
typealias SignedFact = (fact: Fact, signed: String?)

/// One message with its facts and claim, as the tests ingest them.
struct TestBatch {
    var message: ReceivedMessage
    var facts: [SignedFact]
    var claim: Claim?
}

extension LedgerStore {
    func ingest(_ batch: TestBatch, projector: Projector, now: Int64) async throws -> IngestResult {
        try await ingest(batch.message, facts: batch.facts, claim: batch.claim, projector: projector, now: now)
    }

    func ingest(
        _ batch: (message: ReceivedMessage, facts: [SignedFact], claim: Claim), projector: Projector, now: Int64
    ) async throws -> IngestResult {
        try await ingest(batch.message, facts: batch.facts, claim: batch.claim, projector: projector, now: now)
    }

    func facts(appUserId: String) async throws -> [StoredFact] { try await facts(appUserId: appUserId, projector: testProjector) }
}

/// Builds engine facts with signed-looking texts (a JWS-shaped `header.payload.signature` whose
/// payload is the fact's JSON, so the text and its digest differ with the fact).
enum Fixture {
    static func signed(_ fact: Fact) -> String {
        "eyJhbGciOiJFUzI1NiJ9.\(Data(testProjector.encode(fact).utf8).base64EncodedString()).sig"
    }

    static func transaction(
        otid: String, tid: String, product: String = "com.example.pro", expires: Int64, signed: Int64,
        token: String? = nil, environment: String = "Production", offer: OfferType? = nil, purchased: Int64? = nil
    ) -> SignedFact {
        let fact = Fact.transaction(
            TransactionFact(
                transactionId: tid, originalTransactionId: otid, productId: product, purchaseDate: purchased ?? signed,
                expiresDate: expires, productType: .autoRenewable, appAccountToken: token, signedDate: signed, offerType: offer,
                environment: Environment(rawValue: environment)))
        return (fact, Self.signed(fact))
    }

    static func renewal(
        otid: String, autoRenew: Bool, signed: Int64, environment: String = "Production", priceIncrease: Int? = nil
    ) -> SignedFact {
        let fact = Fact.renewalInfo(
            RenewalInfoFact(
                originalTransactionId: otid, productId: "com.example.pro", autoRenewStatus: autoRenew,
                priceIncreaseStatus: priceIncrease, signedDate: signed, environment: Environment(rawValue: environment)))
        return (fact, Self.signed(fact))
    }

    static func batch(
        uuid: String? = UUID().uuidString, facts: [SignedFact], source: IngestSource = .appleV2,
        receivedAt: Int64 = testNow, claim: Claim? = nil
    ) -> TestBatch {
        TestBatch(
            message: ReceivedMessage(
                notificationUUID: uuid, source: source, body: Array(#"{"signedPayload":"…"}"#.utf8), receivedAt: receivedAt,
                notificationType: "DID_RENEW", bundleId: "com.example"),
            facts: facts, claim: claim)
    }
}

/// A fault injector that throws at one armed point.
final class FaultSwitch: Sendable {
    private let armed = Mutex<FaultPoint?>(nil)

    func arm(_ point: FaultPoint?) { armed.withLock { $0 = point } }

    var injector: FaultInjector {
        { [self] point in
            if armed.withLock({ $0 }) == point {
                throw StorageError(.faultInjected, "test fault at \(point.rawValue)")
            }
        }
    }
}
