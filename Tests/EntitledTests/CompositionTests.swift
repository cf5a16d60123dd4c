import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Exports
import Foundation
import Storage
import Testing

/// The composition root: what `serve`, `dev` and the tests start the server through.
@Suite struct CompositionTests {
    /// Every spelling of a SQLite file URL opens (and creates) the file at its path, because the
    /// start-up parses it with the same ``DatabaseURL`` parser as the store (it once re-parsed
    /// `sqlite:` by hand, and `sqlite://` put the file under `//`).
    @Test(arguments: ["sqlite:", "sqlite://"])
    func sqliteURLsOpenTheFileAtTheirPath(prefix: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-open-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("nested/ledger.sqlite").path
        let store = try await openDatabase(prefix + path)
        await store.close()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func anUnparsableURLIsAConfigurationError() async throws {
        do {
            let store = try await openDatabase("mysql://x")
            await store.close()
            Issue.record("opened mysql://x")
        } catch {
            guard case .configuration(let message) = error else {
                Issue.record("expected a configuration error, got \(error)")
                return
            }
            #expect(message.contains("INVALID_DATABASE_URL"))
        }
    }

    /// Logged URLs are redacted by ``DatabaseURL/redacted``: a password goes, a SQLite path with
    /// `:` and `@` in it stays whole (a hand-written redactor once starred part of such a path).
    @Test(arguments: [
        ("postgres://user:secret@host/db", "postgres://user:***@host/db"),
        ("sqlite:///tmp/a:b@c.sqlite", "sqlite:/tmp/a:b@c.sqlite"),
        ("sqlite:./data/entitled.sqlite", "sqlite:./data/entitled.sqlite"),
    ])
    func redaction(url: String, logged: String) {
        #expect(redactedDatabase(url) == logged)
    }

    /// `buildApplication` over a given store serves from it and leaves it open for its owner.
    @Test func buildApplicationServesFromTheGivenStore() async throws {
        let store = try await openStore(url: "sqlite::memory:")
        defer { Task { await store.close() } }
        let assembled = try await buildApplication(
            configuration: Configuration(), clock: VirtualClock(APIHarness.start), store: store)
        #expect(assembled.store as AnyObject === store as AnyObject)
        try await assembled.ledger.checkReady()
    }

    /// Each configured export is one of the services `serve` and `dev` run: started, it runs
    /// its first export at once and commits it.
    @Test func aConfiguredExportRunsAsAService() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-export-service-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await openStore(url: "sqlite::memory:")
        defer { Task { await store.close() } }
        var configuration = Configuration()
        configuration.exports = [ExportSettings(destination: .file(directory: folder.path))]
        let assembled = try await buildApplication(configuration: configuration, clock: VirtualClock(APIHarness.start), store: store)
        #expect(assembled.exports.map(\.name) == ["file://\(folder.path)"])
        _ = try await store.ensureCustomer(
            appUserId: "u1", appAccountToken: nil, projector: assembled.ledger.projector, now: APIHarness.start - 10 * 60_000)
        let running = ServiceRunner(assembled.services).start()
        var committed: ExportStatus?
        for _ in 0..<200 where committed == nil {
            committed = try await store.exportStatuses(now: APIHarness.start).first { $0.lastSuccessAt != nil }
            if committed == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        await running.stop()
        #expect(committed?.watermark == APIHarness.start - ScheduledExport.settleMilliseconds)
        let file = folder.appendingPathComponent("customers/2027-01-15/part-0-\(APIHarness.start - ScheduledExport.settleMilliseconds).csv")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.hasPrefix("app_user_id,app_account_token,created_at,updated_at,active_entitlements,projection_failed,attributes\r\nu1,"))
    }

    /// A verifier the configuration cannot build stops the start as a configuration error, before
    /// any database is opened.
    @Test func aBadRootCertificateIsAConfigurationErrorBeforeTheDatabaseOpens() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-bad-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = Configuration()
        configuration.database = "sqlite:\(folder.path)/ledger.sqlite"
        configuration.apps = [
            App(bundleId: "a", environments: ["Sandbox"], appleRootCertificates: ["/nonexistent/root.cer"])
        ]
        do {
            _ = try await buildApplication(configuration: configuration, clock: VirtualClock(APIHarness.start))
            Issue.record("started with a missing root certificate")
        } catch {
            guard case .configuration = error else {
                Issue.record("expected a configuration error, got \(error)")
                return
            }
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }
}
