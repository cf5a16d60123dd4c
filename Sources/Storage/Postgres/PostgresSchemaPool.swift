import Foundation
import Synchronization

/// Test support: migrated PostgreSQL schemas that finished tests hand back, reset, for the next
/// test to take instead of migrating a schema of its own.
///
/// Creating the schema's tables, indexes and constraints costs the server about a quarter of a
/// second of CPU, whether by the migrations or by one script, and the suites make hundreds of
/// schemas beside each other on two cores. Emptying the tables of a used one costs a twentieth of
/// that. SQLite's counterpart is ``SQLiteStore/migratedImage``.
///
/// A schema handed back (``recycle(schema:url:)``) is compared with a reference schema that every
/// migration ran on and no test touches (one per database and set of migrations, shared by the
/// processes on one server). When its catalog — tables, columns, defaults, constraints, indexes,
/// triggers, functions — and its applied versions are the reference's, it is renamed, so that a
/// store a test left open on it can no longer find its tables, and its rows and sequences are set
/// to the reference's. Anything else (a test that migrated part of the way, dropped an index or
/// added a table) is dropped, as every schema was before. The tests of migrations start from
/// schemas of their own, never from the pool.
final class PostgresSchemaPool: Sendable {
    /// The pool the suites share within a process.
    static let shared = PostgresSchemaPool()

    /// What a reset needs to know of the reference schema, read once per database.
    struct Reference: Sendable {
        var schema: String
        var catalog: String
        /// Every table but `schema_migrations`, those that reference others before them.
        var tables: [String]
        /// The tables that hold rows after migrating (the migrations' own seed rows).
        var seeded: [String]
        /// Each sequence's value, and whether the next `nextval` returns the one after it.
        var sequences: [(name: String, value: Int64, called: Bool)]
    }

    private let free = Mutex<[String: [String]]>([:])
    private let references = Mutex<[String: Task<Reference, any Error>]>([:])

    init() {}

    /// A schema of the pool for the database at `url`, ready as a freshly migrated one; nil when
    /// the pool has none.
    func take(url: String) -> String? {
        free.withLock { $0[url]?.popLast() }
    }

    /// Hands `schema` back: reset and kept when its catalog is the reference's, else dropped.
    /// Returns whether it was kept.
    @discardableResult
    func recycle(schema: String, url: String) async -> Bool {
        var options = StoreConfiguration()
        options.postgresSchema = schema
        options.migrateOnOpen = false
        options.skipSchemaCheck = true
        options.postgresConnections = 1
        guard let store = try? await PostgresStore.open(uri: url, configuration: options) else { return false }
        let renamed = "p_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        var kept = false
        if let reference = try? await reference(url: url) {
            kept =
                (try? await store.write { session in
                    guard try Self.catalog(session, schema: schema) == reference.catalog else { return false }
                    try session.execute(Self.reset(schema, to: String(renamed), from: reference))
                    return true
                }) ?? false
        }
        if !kept { try? await store._execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE") }
        await store.close()
        if kept { free.withLock { $0[url, default: []].append(String(renamed)) } }
        return kept
    }

    /// The reference schema for `url`, migrated (by whichever process comes first) and read once.
    func reference(url: String) async throws -> Reference {
        let task = references.withLock { tasks in
            if let task = tasks[url] { return task }
            let task = Task { try await Self.makeReference(url: url) }
            tasks[url] = task
            return task
        }
        return try await task.value
    }

    /// The reference's name: the migrations' digest, so that a binary with other migrations never
    /// takes another's reference for its own.
    static var referenceName: String {
        let text = Schema.migrations.map { "\($0.version) \($0.name) \(Schema.render($0.sql, for: .postgres))" }
            .joined(separator: "\n")
        return "pool_ref_" + FactDigest.hex(text).prefix(24)
    }

    private static func makeReference(url: String) async throws -> Reference {
        var options = StoreConfiguration()
        let schema = referenceName
        options.postgresSchema = schema
        options.postgresConnections = 1
        let store = try await PostgresStore.open(uri: url, configuration: options)
        do {
            let reference = try await store.read { session in try Self.describe(session, schema: schema) }
            await store.close()
            return reference
        } catch {
            await store.close()
            throw error
        }
    }

    private static func describe(_ session: any SQLSession, schema: String) throws -> Reference {
        let tables = try session.values(
            """
            SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = \(schema) AND c.relkind IN ('r', 'p') AND c.relname <> 'schema_migrations' ORDER BY c.relname
            """, as: String.self)
        let references = try session.rows(
            """
            SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k
            JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
            JOIN pg_namespace n ON n.oid = k.connamespace
            WHERE n.nspname = \(schema) AND k.contype = 'f' AND c.oid <> p.oid
            """, as: ForeignKey.self)
        var seeded: [String] = []
        for table in tables
        where try session.value(SQLQuery(verbatim: "SELECT COUNT(*) FROM \(quoted(schema, table))"), as: Int64.self) ?? 0 > 0 {
            seeded.append(table)
        }
        let sequences = try session.rows(
            """
            SELECT sequencename AS name, COALESCE(last_value, start_value) AS value, (last_value IS NOT NULL)::int AS called
            FROM pg_sequences WHERE schemaname = \(schema) ORDER BY sequencename
            """, as: SequenceState.self)
        guard let catalog = try catalog(session, schema: schema) else {
            throw StorageError(.internal, "the reference schema \(schema) has no catalog")
        }
        return Reference(
            schema: schema, catalog: catalog, tables: deletionOrder(tables, references),
            seeded: seeded, sequences: sequences.map { ($0.name, $0.value, $0.called) })
    }

    struct ForeignKey: Decodable {
        var child: String
        var parent: String
    }

    struct SequenceState: Decodable {
        var name: String
        var value: Int64
        var called: Bool
    }

    /// `tables` with every table before the tables it references, so that deleting in this order
    /// never leaves a row pointing at a deleted one.
    static func deletionOrder(_ tables: [String], _ references: [ForeignKey]) -> [String] {
        var order: [String] = []
        var placed = Set<String>()
        func place(_ table: String, _ visiting: Set<String>) {
            guard !placed.contains(table), !visiting.contains(table) else { return }
            // Whoever references this table goes first.
            for key in references where key.parent == table { place(key.child, visiting.union([table])) }
            placed.insert(table)
            order.append(table)
        }
        for table in tables { place(table, []) }
        return order
    }

    /// One text for everything in `schema` a test could have changed and a reset would not
    /// restore, with the schema's own name taken out; and its applied versions.
    static func catalog(_ session: any SQLSession, schema: String) throws -> String? {
        let versions =
            try session.value(
                SQLQuery(verbatim: "SELECT string_agg(version::text, ',' ORDER BY version) FROM \(quoted(schema, "schema_migrations"))"),
                as: String?.self) ?? nil
        let objects = try session.value(
            """
            SELECT md5(replace(string_agg(item, E'\\n' ORDER BY item), \(schema + "."), '')) FROM (
                SELECT concat_ws(' ', 'relation', c.relname, c.relkind, c.relpersistence, a.attnum, a.attname,
                    format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity, a.attgenerated,
                    pg_get_expr(d.adbin, d.adrelid)) AS item
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
                WHERE n.nspname = \(schema)
                UNION ALL
                SELECT concat_ws(' ', 'constraint', r.relname, k.conname, pg_get_constraintdef(k.oid))
                FROM pg_constraint k JOIN pg_class r ON r.oid = k.conrelid JOIN pg_namespace n ON n.oid = k.connamespace
                WHERE n.nspname = \(schema)
                UNION ALL
                SELECT concat_ws(' ', 'index', i.relname, pg_get_indexdef(i.oid))
                FROM pg_class i JOIN pg_namespace n ON n.oid = i.relnamespace
                WHERE n.nspname = \(schema) AND i.relkind = 'i'
                UNION ALL
                SELECT concat_ws(' ', 'trigger', t.tgname, pg_get_triggerdef(t.oid))
                FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = \(schema) AND NOT t.tgisinternal
                UNION ALL
                SELECT concat_ws(' ', 'function', p.proname, pg_get_function_identity_arguments(p.oid), md5(p.prosrc))
                FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = \(schema)
            ) AS items
            """, as: String?.self) ?? nil
        guard let versions, let objects else { return nil }
        return versions + " " + objects
    }

    /// The statements that rename `schema` to `renamed` and give it the reference's rows and
    /// sequence values.
    static func reset(_ schema: String, to renamed: String, from reference: Reference) -> String {
        var statements = ["ALTER SCHEMA \"\(schema)\" RENAME TO \"\(renamed)\""]
        statements += reference.tables.map { "DELETE FROM \(quoted(renamed, $0))" }
        statements += reference.seeded.map { "INSERT INTO \(quoted(renamed, $0)) SELECT * FROM \(quoted(reference.schema, $0))" }
        statements += reference.sequences.map {
            "SELECT setval('\(quoted(renamed, $0.name))', \($0.value), \($0.called))"
        }
        return statements.joined(separator: ";\n")
    }

    /// A schema-qualified name. Both parts are catalog names of this module's own schema (lower
    /// case letters, digits and `_`): quoting them keeps them as they are.
    private static func quoted(_ schema: String, _ name: String) -> String {
        "\"\(schema)\".\"\(name)\""
    }
}
