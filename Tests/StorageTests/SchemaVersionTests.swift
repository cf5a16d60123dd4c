import Testing
@testable import Storage

/// The features that skip their work on a database migrated only part of the way (tests, `bench
/// store --older-layout`) name the migration that creates their table: a version that names
/// another, or none, silently turns the feature off at that limit.
@Suite struct SchemaVersionTests {
    @Test(arguments: [
        (Ledger.placeholderBackfillVersion, "CREATE TABLE placeholder_backfill"),
        (EventHold.schemaVersion, "CREATE TABLE event_holds"),
        (IngestCounters.schemaVersion, "CREATE TABLE ingest_hourly"),
    ])
    func aFeaturesVersionIsTheMigrationThatCreatesItsTable(version: Int, creates: String) {
        let migration = Schema.migrations.first { $0.version == version }
        #expect(migration?.sql.contains(creates) == true, "version \(version) is \(migration?.name ?? "no migration")")
    }
}
