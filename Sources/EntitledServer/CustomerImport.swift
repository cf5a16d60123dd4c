import AppStore
import AppStoreServerAPI
import EntitledConfig
import Foundation
import GooglePlay
import HTTPClient
import Storage

/// `entitled import`: links existing customers to their purchases. Each line names a customer and
/// one of their purchases. For an App Store app, the transaction's whole history is fetched from
/// Apple and stored through the posted-transaction path with the customer's claim (source
/// `backfill`); for a Google Play app, the purchase token is stored as if the app had posted it
/// (Google asked, the purchase linked and acknowledged). Running an import twice changes nothing
/// the second time.
public struct CustomerImport: Sendable {
    /// One line of the input: `appUserId,transactionId` or `{"appUserId": …, "transactionId": …}`
    /// (App Store), `appUserId,productId,purchaseToken` or `{"appUserId": …, "productId": …,
    /// "purchaseToken": …}` (Google Play), or one transaction of another platform's export
    /// (``RevenueCatExport``).
    public struct Line: Sendable, Hashable {
        public var number: Int
        public var appUserId: String
        /// The App Store transaction, or the Google Play purchase token.
        public var transactionId: String
        /// The Google Play product the token is a purchase of; nil for an App Store line.
        public var productId: String?
        /// The customer's other ids, made aliases of `appUserId` before the history is stored.
        public var aliases: [String]

        public init(number: Int, appUserId: String, transactionId: String, productId: String? = nil, aliases: [String] = []) {
            self.number = number
            self.appUserId = appUserId
            self.transactionId = transactionId
            self.productId = productId
            self.aliases = aliases
        }
    }

    /// What an import did.
    public struct Report: Sendable, Equatable, CustomStringConvertible {
        /// Lines read (blank lines and `#` comments not counted).
        public var lines = 0
        /// Lines whose history was fetched and stored.
        public var imported = 0
        /// Signed transactions stored (or found already stored).
        public var transactions = 0
        /// Ids made aliases of a line's customer (not counting those that already were).
        public var aliases = 0
        /// Lines that failed, with why (line number: message), at most ``maxReportedFailures`` kept.
        public var failures: [String] = []
        public var failed = 0

        public init() {}

        public var description: String {
            "lines \(lines), imported \(imported), transactions \(transactions), aliases \(aliases), failed \(failed)"
        }
    }

    /// Failures listed in the report; the rest are only counted.
    public static let maxReportedFailures = 100
    /// Lines fetched from Apple at once.
    public static let concurrency = 8

    /// Where an import's purchases are asked about.
    enum Source: Sendable {
        case appStore(AppStoreServerAPIClient)
        case googlePlay(PlayIngest)
    }

    let ingest: Ingest
    /// The App Store app's bundleId, or the Google Play app's packageName.
    let bundleId: String
    let source: Source

    /// Parses the input: one line each, CSV `appUserId,transactionId` (or
    /// `appUserId,productId,purchaseToken`) or a JSON object; blank lines and lines starting with
    /// `#` are skipped. A line that is none of them, or that is not UTF-8 (its bytes are never
    /// repaired into U+FFFD: that would import another id), is a failure with its number.
    public static func parse(_ input: [UInt8]) -> (lines: [Line], failures: [String]) {
        var lines: [Line] = []
        var failures: [String] = []
        for (index, bytes) in input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            guard let raw = String(validating: bytes, as: UTF8.self) else {
                failures.append("line \(number): not UTF-8")
                continue
            }
            let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            var line: Line?
            if trimmed.hasPrefix("{") {
                if let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any],
                    let user = object["appUserId"] as? String
                {
                    if let transaction = object["transactionId"] as? String, object["purchaseToken"] == nil {
                        line = Line(number: number, appUserId: user, transactionId: transaction)
                    } else if let product = object["productId"] as? String, let token = object["purchaseToken"] as? String {
                        line = Line(number: number, appUserId: user, transactionId: token, productId: product)
                    }
                }
            } else {
                let parts = trimmed.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                if parts.count == 2 {
                    line = Line(number: number, appUserId: parts[0], transactionId: parts[1])
                } else if parts.count == 3 {
                    line = Line(number: number, appUserId: parts[0], transactionId: parts[2], productId: parts[1])
                }
            }
            guard let line, AppUserID.isValid(line.appUserId), line.productId == nil ? Self.isTransactionId(line.transactionId)
                : Self.isPlayIdentifier(line.productId!, maxBytes: 256) && Self.isPlayIdentifier(line.transactionId, maxBytes: DeveloperNotification.maximumTokenBytes)
            else {
                failures.append(
                    "line \(number): expected appUserId,transactionId, appUserId,productId,purchaseToken or their JSON object")
                continue
            }
            lines.append(line)
        }
        return (lines, failures)
    }

    static func isTransactionId(_ text: String) -> Bool {
        isPlayIdentifier(text, maxBytes: 64)
    }

    /// 1 to `maxBytes` printable ASCII bytes without a space, a comma or a slash (Google's product
    /// ids and purchase tokens are letters, digits, `.`, `_` and `-`).
    static func isPlayIdentifier(_ text: String, maxBytes: Int) -> Bool {
        (1...maxBytes).contains(text.utf8.count)
            && text.utf8.allSatisfy { $0 >= 0x21 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ",") }
    }

    /// Imports `lines`, ``concurrency`` at a time; `progress` is called after each line with the
    /// report so far.
    public func run(_ lines: [Line], progress: @Sendable (Report) -> Void = { _ in }) async -> Report {
        var report = Report()
        report.lines = lines.count
        await withTaskGroup(of: (Line, Result<(transactions: Int, aliases: Int), ImportFailure>).self) { group in
            var next = lines.makeIterator()
            func add() -> Bool {
                guard let line = next.next() else { return false }
                group.addTask { (line, await self.importLine(line)) }
                return true
            }
            for _ in 0..<Self.concurrency where !add() { break }
            while let (line, result) = await group.next() {
                switch result {
                case .success(let counts):
                    report.imported += 1
                    report.transactions += counts.transactions
                    report.aliases += counts.aliases
                case .failure(let failure):
                    report.failed += 1
                    if report.failures.count < Self.maxReportedFailures {
                        report.failures.append("line \(line.number): \(failure.message)")
                    }
                }
                progress(report)
                _ = add()
            }
        }
        return report
    }

    struct ImportFailure: Error {
        var message: String
    }

    /// One line: its aliases, then the history of its transaction, each claimed by the line's
    /// customer. Aliases come first so that a customer stored under another of their ids (an
    /// earlier import, an anonymous id) is merged before the claim, not competing with it.
    func importLine(_ line: Line) async -> Result<(transactions: Int, aliases: Int), ImportFailure> {
        var added = 0
        for alias in line.aliases {
            do {
                let outcome = try await ingest.ledger.addAlias(alias, to: line.appUserId, actor: Self.actor, now: ingest.clock.nowMilliseconds())
                if outcome != .alreadyAlias { added += 1 }
            } catch {
                let message = error.code == .aliasConflict ? "\(alias) already belongs to another customer" : error.description
                return .failure(ImportFailure(message: "\(error.code): \(message)"))
            }
        }
        let client: AppStoreServerAPIClient
        switch source {
        case .appStore(let apple):
            guard line.productId == nil else { return .failure(ImportFailure(message: "\(bundleId) is an App Store app: expected appUserId,transactionId")) }
            client = apple
        case .googlePlay(let play):
            guard let productId = line.productId else {
                return .failure(ImportFailure(message: "\(bundleId) is a Google Play app: expected appUserId,productId,purchaseToken"))
            }
            do throws(IngestError) {
                try await play.posted(
                    packageName: bundleId, productId: productId, purchaseToken: line.transactionId, appUserId: line.appUserId,
                    body: PlayJSON.encode(["appUserId": line.appUserId, "productId": productId, "purchaseToken": line.transactionId]),
                    now: ingest.clock.nowMilliseconds())
            } catch {
                return .failure(ImportFailure(message: Self.message(error)))
            }
            return .success((1, added))
        }
        let history: [Signed<JWSTransactionDecodedPayload>]
        do {
            history = try await client.transactionHistoryAllPages(line.transactionId)
        } catch {
            return .failure(ImportFailure(message: "\(error.code): \(error.description)"))
        }
        guard let app = ingest.configuration.app(bundleId: bundleId) else { return .failure(ImportFailure(message: "no app \(bundleId)")) }
        let claim = Claim(appUserId: line.appUserId, behaviour: app.restoreBehavior)
        let now = ingest.clock.nowMilliseconds()
        for transaction in history {
            do {
                _ = try await ingest.transaction(transaction.jws, source: .backfill, claim: claim, now: now)
            } catch {
                return .failure(ImportFailure(message: "\(error)"))
            }
        }
        return .success((history.count, added))
    }

    /// The actor recorded with the aliases an import adds.
    static let actor = "import"

    /// An ingest failure as a report line: its code and message.
    static func message(_ error: IngestError) -> String {
        switch error {
        case .rejected(let rejection): "\(rejection.code.rawValue): \(rejection.message)"
        case .storage(let failure): "\(failure.code): \(failure.message)"
        }
    }
}

extension AssembledServer {
    /// The import of `bundleId`'s customers (an App Store app with `serverAPI`, or a Google Play
    /// app's packageName); nil for another.
    public func customerImport(bundleId: String) -> CustomerImport? {
        guard let ingest = application.ingest else { return nil }
        if let client = serverAPIClients[bundleId] { return CustomerImport(ingest: ingest, bundleId: bundleId, source: .appStore(client)) }
        guard let play = playIngest, play.apps[bundleId] != nil else { return nil }
        return CustomerImport(ingest: ingest, bundleId: bundleId, source: .googlePlay(play))
    }
}

/// `entitled import`: imports `input` (the file's lines) for `bundleId` on the system clock.
/// - Throws: ``StartupError``: `.configuration` for an unknown app or one without `serverAPI`.
public func runImport(
    configuration: Configuration, bundleId: String, input: [UInt8], outbound: (any OutboundHTTP)? = nil,
    clock: any EpochClock = SystemClock(), progress: @Sendable (CustomerImport.Report) -> Void = { _ in }
) async throws(StartupError) -> CustomerImport.Report {
    let (lines, unreadable) = CustomerImport.parse(input)
    return try await runImport(
        configuration: configuration, bundleId: bundleId, lines: lines, unreadable: unreadable, outbound: outbound, clock: clock,
        progress: progress)
}

/// `entitled import`: imports `lines` already read from a file (by ``CustomerImport/parse(_:)`` or
/// ``RevenueCatExport``) for `bundleId`; `unreadable` are the file's failures (`line N: …`),
/// reported as failed lines before the import's own, `unreadableCount` of them in all when only
/// the first are listed.
/// - Throws: ``StartupError``: `.configuration` for an unknown app or one without `serverAPI`.
public func runImport(
    configuration: Configuration, bundleId: String, lines: [CustomerImport.Line], unreadable: [String], unreadableCount: Int? = nil,
    outbound: (any OutboundHTTP)? = nil, clock: any EpochClock = SystemClock(),
    progress: @Sendable (CustomerImport.Report) -> Void = { _ in }
) async throws(StartupError) -> CustomerImport.Report {
    try checkImportApp(configuration: configuration, bundleId: bundleId)
    let assembled = try await buildApplication(configuration: configuration, clock: clock, outbound: outbound)
    guard let importer = assembled.customerImport(bundleId: bundleId) else {
        await assembled.store.close()
        throw .configuration("--app: \(bundleId) has no serverAPI client")
    }
    var report = await importer.run(lines, progress: progress)
    report.lines += unreadableCount ?? unreadable.count
    report.failed += unreadableCount ?? unreadable.count
    report.failures = Array((unreadable + report.failures).prefix(CustomerImport.maxReportedFailures))
    await assembled.store.close()
    return report
}

/// `entitled import --from revenuecat`: reads RevenueCat's transaction export at `path` (its rows
/// of `store`, `app_store` or `mac_app_store`), hands what it read to `onRead` before anything is
/// imported, then imports its transactions for `bundleId`, its unreadable rows reported as failed.
/// - Throws: ``StartupError`` (`.configuration`) for an unknown app, a Google Play app or one
///   without `serverAPI`, checked before the file is read; ``ImportInputError`` for a file that
///   cannot be read as an export.
public func runImport(
    configuration: Configuration, bundleId: String, revenueCatExport path: String, store: String = "app_store",
    outbound: (any OutboundHTTP)? = nil, clock: any EpochClock = SystemClock(),
    onRead: (RevenueCatExport.Summary) -> Void = { _ in }, progress: @Sendable (CustomerImport.Report) -> Void = { _ in }
) async throws -> CustomerImport.Report {
    try checkImportApp(configuration: configuration, bundleId: bundleId)
    guard configuration.app(bundleId: bundleId) != nil else {
        throw StartupError.configuration("--from revenuecat imports an App Store app's purchases; \(bundleId) is a Google Play app")
    }
    let export = try RevenueCatExport.read(path: path, store: store)
    onRead(export.summary)
    return try await runImport(
        configuration: configuration, bundleId: bundleId, lines: export.lines, unreadable: export.rowErrors.map(\.description),
        unreadableCount: export.summary.badRows, outbound: outbound, clock: clock, progress: progress)
}

/// Checks that `entitled import` can import for `bundleId` (an App Store app with `serverAPI`, or a
/// Google Play app), before a large file is read.
/// - Throws: ``StartupError``: `.configuration` for an unknown app or one without `serverAPI`.
public func checkImportApp(configuration: Configuration, bundleId: String) throws(StartupError) {
    if configuration.playApps.contains(where: { $0.packageName == bundleId }) { return }
    guard let app = configuration.app(bundleId: bundleId) else { throw .configuration("--app: no app \(bundleId) in the configuration") }
    guard app.serverAPI != nil else { throw .configuration("--app: \(bundleId) has no serverAPI in the configuration") }
}
