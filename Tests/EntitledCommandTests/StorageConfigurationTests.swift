import EntitledConfig
import Foundation
import Testing

/// The `storage` section: retention of rejected messages and the database's time limits.
@Suite struct StorageConfigurationTests {
    let loader = ConfigurationLoader(environment: [:])

    @Test func defaults() throws {
        let storage = try loader.parse(Data("{}".utf8)).storage
        #expect(storage.rejectedRetentionDays == 30)
        #expect(storage.statementTimeoutMilliseconds == 5000)
        #expect(storage.connectTimeoutSeconds == 5)
    }

    @Test func parses() throws {
        let storage = try loader.parse(
            Data(#"{"storage": {"rejectedRetentionDays": 7, "statementTimeoutMilliseconds": 250, "connectTimeoutSeconds": 2}}"#.utf8)
        ).storage
        #expect(storage.rejectedRetentionDays == 7)
        #expect(storage.statementTimeoutMilliseconds == 250)
        #expect(storage.connectTimeoutSeconds == 2)
    }
}
