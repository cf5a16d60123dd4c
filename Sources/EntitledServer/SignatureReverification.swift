import AppStore
import EntitledConfig
import Storage

/// `entitled check --reverify`: every signed text the ledger holds, rebuilt byte for byte and
/// verified again offline — signature and chain to the configured roots at its `signedDate` —
/// so that what is stored is shown to be what Apple signed.
public enum SignatureReverification {
    /// What a pass found.
    public struct Report: Sendable, Equatable {
        /// Facts whose signature verified.
        public var verified = 0
        /// Facts without a signed form (V1 notifications, receipt entries).
        public var unsigned = 0
        /// One line per fact that failed: its id, kind, app and the verification code.
        public var failures: [String] = []
    }

    /// Re-verifies every fact of `store` with the apps of `configuration`, 500 at a time.
    public static func run(store: any LedgerStore, configuration: Configuration, clock: any EpochClock) async throws -> Report {
        let verifier: AppStoreVerifier
        do {
            verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, online: false)
        } catch {
            throw StorageError(.invalidArgument, "the configuration's apps cannot verify: \(error.description)")
        }
        var report = Report()
        var after: Int64 = 0
        while true {
            let page = try await store.signedFacts(after: after, limit: 500)
            guard let last = page.last else { return report }
            after = last.id
            for fact in page {
                let name = "fact \(fact.id) (\(fact.kind), \(fact.bundleId ?? "no app"))"
                guard let bundleId = fact.bundleId, let app = configuration.app(bundleId: bundleId) else {
                    if Self.signedKinds.contains(fact.kind) {
                        report.failures.append("\(name): no configured app to verify it with")
                    } else {
                        report.unsigned += 1
                    }
                    continue
                }
                do {
                    if try await verifier.reverify(kind: fact.kind, signed: fact.text, app: app) {
                        report.verified += 1
                    } else {
                        report.unsigned += 1
                    }
                } catch {
                    report.failures.append("\(name): \(error.code.rawValue): \(error.message)")
                }
            }
        }
    }

    /// The kinds stored with the JWS they were verified from.
    static let signedKinds: Set<String> = ["notification", "transaction", "renewal", "appTransaction"]
}
