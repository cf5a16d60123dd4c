import Foundation
import Synchronization
import Testing

@testable import Storage

@Suite("Storage units")
struct UnitTests {
    @Test("database URLs parse", arguments: [
        ("sqlite:./data/entitled.sqlite", DatabaseURL.sqliteFile(path: "./data/entitled.sqlite")),
        ("sqlite:/var/lib/e.sqlite", .sqliteFile(path: "/var/lib/e.sqlite")),
        ("sqlite://./x.sqlite", .sqliteFile(path: "./x.sqlite")),
        ("sqlite::memory:", .sqliteMemory),
        ("postgres://u:p@h:5432/db", .postgres(uri: "postgres://u:p@h:5432/db")),
        ("postgresql://h/db?sslmode=disable", .postgres(uri: "postgresql://h/db?sslmode=disable")),
    ])
    func urls(text: String, expected: DatabaseURL) throws {
        #expect(try DatabaseURL(parsing: text) == expected)
    }

    @Test("bad database URLs are refused", arguments: ["mysql://x/y", "sqlite:", "", "postgres://"])
    func badURLs(text: String) {
        #expect(throws: StorageError(.invalidURL)) { try DatabaseURL(parsing: text) }
    }

    @Test("passwords are redacted")
    func redaction() throws {
        #expect(try DatabaseURL(parsing: "postgres://user:secret@host/db").redacted == "postgres://user:***@host/db")
    }

    @Test("errors keep raw database messages out of their description")
    func errorText() {
        let error = StorageError(.unavailable, "the database is unavailable", detail: "FATAL: password authentication failed")
        #expect(!error.description.contains("FATAL"))
        #expect(error.debugDescription.contains("FATAL"))
        #expect(error == StorageError(.unavailable))
        #expect(error.code.rawValue == "STORAGE_UNAVAILABLE")
    }

    @Test("the fact digest is SHA-256 (known vectors)")
    func sha256() {
        #expect(FactDigest.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(FactDigest.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            FactDigest.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("SQLite placeholders are rewritten from $n to ?n")
    func placeholders() {
        #expect(SQLiteConnection.sqliteParameters("SELECT $1, $12 FROM t WHERE a = $2") == "SELECT ?1, ?12 FROM t WHERE a = ?2")
    }

    @Test("in CI, PostgreSQL must be configured")
    func postgresInCI() {
        if Backend.inCI {
            #expect(Backend.postgresURL != nil, "CI is set but ENTITLED_TEST_POSTGRES is not: PostgreSQL tests would be skipped")
        }
    }
}

@Suite("Storage encodings")
struct EncodingTests {
    @Test("projection rows survive the compact encoding, whatever their text")
    func rowCodec() throws {
        let projection = CustomerProjection(
            entitlements: [
                EntitlementRow(
                    entitlement: "pro:1~", status: "active", active: true, productId: nil, originalTransactionId: "1",
                    expiresAt: -5, graceUntil: nil, willRenew: false, environment: "Sandbox"),
                EntitlementRow(
                    entitlement: "", status: "ü", active: false, productId: "p", originalTransactionId: nil,
                    expiresAt: nil, graceUntil: 7, willRenew: true, environment: "E"),
            ],
            subscriptions: [
                SubscriptionRow(
                    originalTransactionId: "9:9", productId: "S", group: nil, status: "expired", expiresAt: 1,
                    graceUntil: nil, autoRenew: true, environment: "Production")
            ],
            state: Array("{}".utf8))
        let decoded = try RowCodec.decode(RowCodec.encode(projection), state: projection.state)
        #expect(decoded == projection)
        #expect(throws: StorageError(.corrupt)) { try RowCodec.decode("E3:ab", state: []) }
    }

    @Test("PostgreSQL array literals escape quotes and backslashes")
    func arrayLiteral() {
        #expect(Ledger.arrayLiteral(["otid:1", #"a"b\c"#]) == #"{"otid:1","a\"b\\c"}"#)
    }
}

@Suite("WAL syncer")
struct WALSyncerTests {
    /// Submits one job that returns `value` and waits for the syncer to finish it.
    static func submitted(_ syncer: WALSyncer, _ value: Int) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job<Int>(isWrite: true, body: { _ in value }, continuation: continuation)
            _ = job.perform(NoSession())
            syncer.submit([job])
        }
    }

    /// A session the jobs above never touch.
    final class NoSession: SQLSession, @unchecked Sendable {
        let dialect: SQLDialect = .sqlite
        let tail = TransactionTail()
        func execute(_ sql: String) throws {}
        func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow] { [] }
        func pipeline(_ statements: [SQLStatement]) throws -> [[SQLRow]] { [] }
    }

    /// Runs `body` with a syncer for a database in a fresh folder, on a thread of its own.
    static func withSyncer(_ body: (WALSyncer, _ database: String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-walsync-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("ledger.sqlite").path
        let syncer = WALSyncer(databasePath: database, log: nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            syncer.run()
            done.signal()
        }
        thread.start()
        defer {
            syncer.close()
            done.wait()
        }
        try await body(syncer, database)
    }

    @Test("a committed group is answered with its own result once the WAL is synced")
    func answersAfterSync() async throws {
        try await Self.withSyncer { syncer, database throws in
            try Data("frames".utf8).write(to: URL(fileURLWithPath: database + "-wal"))
            let first = try await Self.submitted(syncer, 7)
            let second = try await Self.submitted(syncer, 8)
            #expect(first == 7)
            #expect(second == 8)
        }
    }

    @Test("after a failed fsync every later write fails, even once the WAL is back")
    func failureIsSticky() async throws {
        try await Self.withSyncer { syncer, database in
            // No WAL file: the sync cannot happen, so the caller must not be told "committed".
            await #expect(throws: StorageError.self) { try await Self.submitted(syncer, 1) }
            try Data("frames".utf8).write(to: URL(fileURLWithPath: database + "-wal"))
            let error = await #expect(throws: StorageError.self) { try await Self.submitted(syncer, 2) }
            #expect(error?.code == .unavailable)
        }
    }
}

@Suite("SQLite group commit")
struct SQLiteGroupCommitTests {
    struct Planned: Error {}

    @Test(
        "a group runs without savepoints; after a failure the others run again, each alone",
        arguments: [Backend.sqliteFile, .sqliteMemory])
    func failingJobsInOneGroup(backend: Backend) async throws {
        try await withStore(backend) { opened, _ in try await Self.runGroup(try #require(opened as? SQLiteStore)) }
    }

    static func runGroup(_ store: SQLiteStore) async throws {
        try await store._execute("CREATE TABLE t (v INTEGER NOT NULL)")

        // The writer blocks on the gate while the jobs below queue up, so they form one group.
        let gate = DispatchSemaphore(value: 0)
        let holding = Atomic<Bool>(false)
        let blocker = Task {
            try await store.write { _ in
                holding.store(true, ordering: .releasing)
                gate.wait()
            }
        }
        #expect(await waitUntil { holding.load(ordering: .acquiring) })
        let runsOfFlaky = Mutex(0)
        func insert(_ value: Int, thenFail: Bool = false) -> @Sendable (any SQLSession) throws -> Int {
            { session in
                try session.execute("INSERT INTO t (v) VALUES (\(value))")
                if thenFail { throw Planned() }
                return value
            }
        }
        var tasks: [Task<Int, any Error>] = []
        let bodies: [@Sendable (any SQLSession) throws -> Int] = [
            insert(1),
            // Succeeds in the first run, fails when run again: the retry must roll back its own
            // insert alone.
            { session in
                let run = runsOfFlaky.withLock { runs in
                    runs += 1
                    return runs
                }
                try session.execute("INSERT INTO t (v) VALUES (\(10 + run))")
                if run > 1 { throw Planned() }
                return 10
            },
            insert(2, thenFail: true),
            insert(3),
            { _ in throw Planned() },
            insert(4),
        ]
        for (index, body) in bodies.enumerated() {
            tasks.append(Task { try await store.write(body) })
            // Queued in this order: each is in the queue before the next is created.
            #expect(await waitUntil { store.queuedJobs == index + 1 })
        }
        gate.signal()
        try await blocker.value
        var outcomes: [Int?] = []
        for task in tasks { outcomes.append(try? await task.value) }
        #expect(outcomes == [1, nil, nil, 3, nil, 4])
        #expect(runsOfFlaky.withLock { $0 } == 2)
        let values = try await store.read { session in try session.query("SELECT v FROM t ORDER BY v", []).map { try $0.int(0) } }
        #expect(values == [1, 3, 4])
    }
}
