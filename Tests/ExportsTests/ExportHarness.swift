import AppStore
import AppStoreTesting
import EntitledConfig
import Entitlements
import Foundation
import HTTPClient
import Storage
import Synchronization
import Testing

@testable import EntitledServer
@testable import Exports

/// The databases the scheduled-export tests run on: a SQLite file, and PostgreSQL when
/// `ENTITLED_TEST_POSTGRES` is set (always in CI, where a missing server fails the test).
enum ExportBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }

    static var all: [ExportBackend] {
        let environment = ProcessInfo.processInfo.environment
        let postgres = !(environment["ENTITLED_TEST_POSTGRES"] ?? "").isEmpty || !(environment["CI"] ?? "").isEmpty
        return postgres ? [.sqlite, .postgres] : [.sqlite]
    }

    /// A fresh database's URL and options; `open` on them again reaches the same database (a second server).
    func database() throws -> (url: String, options: StoreConfiguration) {
        var options = StoreConfiguration()
        switch self {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-export-db-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return ("sqlite:\(folder.path)/ledger.sqlite", options)
        case .postgres:
            let url = try #require(
                ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
                "ENTITLED_TEST_POSTGRES must be set where CI is")
            options.postgresSchema = "export_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
            options.postgresConnections = 4
            return (url, options)
        }
    }
}

/// Where a test's files go: a folder, or the bucket of a moto server.
enum ExportTarget: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case file, s3
    var testDescription: String { rawValue }

    /// `s3` only where moto runs (``MotoServer/suitesRun``).
    static var all: [ExportTarget] { MotoServer.suitesRun ? [.file, .s3] : [.file] }
}

/// A store with a ledger the tests fill, a manual clock, and a destination whose files can be read back.
final class ExportHarness: Sendable {
    static let start: Int64 = 1_800_000_000_000
    static let projector = Projector(
        policy: Policy(products: [
            "com.example.pro": ProductPolicy(type: .autoRenewable, entitlements: ["pro"]),
            "play.monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"]),
            "play.coins": ProductPolicy(type: .consumable, entitlements: []),
        ]))

    let store: any LedgerStore
    let database: (url: String, options: StoreConfiguration)
    let clock = ManualClock(milliseconds: ExportHarness.start)
    let target: ExportTarget
    let folder: URL
    let moto: MotoServer?

    private init(store: any LedgerStore, database: (url: String, options: StoreConfiguration), target: ExportTarget, folder: URL, moto: MotoServer?) {
        self.store = store
        self.database = database
        self.target = target
        self.folder = folder
        self.moto = moto
    }

    static func with(_ backend: ExportBackend, _ target: ExportTarget, _ body: (ExportHarness) async throws -> Void) async throws {
        let database = try backend.database()
        let store = try await openStore(url: database.url, configuration: database.options)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-export-out-\(UUID())")
        let moto = target == .s3 ? try await MotoServer.start() : nil
        let harness = ExportHarness(store: store, database: database, target: target, folder: folder, moto: moto)
        do {
            try await body(harness)
        } catch {
            await harness.close()
            throw error
        }
        await harness.close()
    }

    func close() async {
        await store.close()
        moto?.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The export's settings: this harness's destination, every table.
    func settings(format: ExportFormat = .csv, everyHours: Int = 24) -> ExportSettings {
        var settings: ExportSettings
        switch target {
        case .file:
            settings = ExportSettings(destination: .file(directory: folder.path))
        case .s3:
            settings = ExportSettings(destination: .s3(bucket: MotoServer.bucket, prefix: "entitled/"))
            settings.endpoint = moto!.endpoint
            settings.region = MotoServer.region
            settings.credentials = moto!.credentials
        }
        settings.format = format
        settings.everyHours = everyHours
        return settings
    }

    /// The real sink of this destination (what ``ScheduledExport`` builds), to wrap.
    func sink() -> any ExportSink {
        switch target {
        case .file: FileDestination(directory: folder.path)
        case .s3: S3Uploader(client: moto!.client(), prefix: "entitled/")
        }
    }

    func export(format: ExportFormat = .csv, store: (any LedgerStore)? = nil, sink: (any ExportSink)? = nil, owner: String = "a")
        -> ScheduledExport
    {
        ScheduledExport(
            settings: settings(format: format), store: store ?? self.store, projector: Self.projector, clock: clock, sink: sink,
            outbound: MotoServer.http, owner: owner)
    }

    /// A stored file's bytes.
    func read(_ key: String) async throws -> [UInt8] {
        switch target {
        case .file: return [UInt8](try Data(contentsOf: folder.appendingPathComponent(key)))
        case .s3: return try await moto!.client().getObject(key: "entitled/" + key)
        }
    }

    /// A purchase by `user` of the subscription `otid` (its transaction `tid`) received now.
    func buy(_ user: String, otid: String, tid: String, price: Int64 = 9990) async throws {
        let now = clock.nowMilliseconds()
        let fact = TransactionFact(
            transactionId: tid, originalTransactionId: otid, webOrderLineItemId: "w-\(tid)", productId: "com.example.pro",
            subscriptionGroupId: "g1", purchaseDate: now - 1000, originalPurchaseDate: now - 1000, expiresDate: now + 30 * 86_400_000,
            productType: .autoRenewable, ownership: .purchased, signedDate: now - 500, offerType: tid.hasSuffix("1") ? .introductory : nil,
            offerDiscountType: tid.hasSuffix("1") ? "FREE_TRIAL" : nil, environment: .production, storefront: "FRA",
            transactionReason: .purchase, price: price, currency: "EUR", storefrontId: "143442")
        let message = ReceivedMessage(
            notificationUUID: nil, source: .client, body: Array(#"{"signedTransactionInfo":"…"}"#.utf8), receivedAt: now, bundleId: "com.example")
        _ = try await store.ingest(
            message, facts: [(.transaction(fact), "eyJhbGciOiJFUzI1NiJ9.\(tid).sig")], claim: Claim(appUserId: user), projector: Self.projector,
            now: now)
    }

    /// Google Play facts of `user` (an app's post of its purchase tokens) received now.
    func play(_ user: String, _ facts: [Fact]) async throws {
        let now = clock.nowMilliseconds()
        let message = ReceivedMessage(
            notificationUUID: nil, source: .googlePlay, body: Array(#"{"purchaseToken":"…"}"#.utf8), receivedAt: now, bundleId: "com.example.app")
        _ = try await store.ingest(message, facts: facts.map { ($0, nil) }, claim: Claim(appUserId: user), projector: Self.projector, now: now)
    }

    /// Every transaction the ledger holds for `users`, by transaction id.
    func ledgerTransactions(_ users: [String]) async throws -> [String: TransactionFact] {
        var all: [String: TransactionFact] = [:]
        for user in users {
            for stored in try await store.facts(appUserId: user, projector: Self.projector) {
                if case .transaction(let fact) = stored.fact { all[fact.transactionId] = fact }
            }
        }
        return all
    }
}

/// A sink that fails its `failing`-th call (counted from 1) with the store's refusal, and stores the others.
final class FlakySink: ExportSink {
    let base: any ExportSink
    let failing: Int
    let calls = Mutex<[String]>([])

    init(_ base: any ExportSink, failing: Int) {
        self.base = base
        self.failing = failing
    }

    func store(file: URL, key: String, contentType: String) async throws(ExportError) {
        let count = calls.withLock { $0.append(key); return $0.count }
        if count == failing { throw ExportError(.unavailable, "scripted failure", status: 503) }
        try await base.store(file: file, key: key, contentType: contentType)
    }
}

/// A sink that runs `before` once, at its first call, then stores.
final class HookSink: ExportSink {
    let base: any ExportSink
    let before: @Sendable () async throws -> Void
    let called = Mutex(false)

    init(_ base: any ExportSink, before: @escaping @Sendable () async throws -> Void) {
        self.base = base
        self.before = before
    }

    func store(file: URL, key: String, contentType: String) async throws(ExportError) {
        if !called.withLock({ let was = $0; $0 = true; return was }) {
            do {
                try await before()
            } catch {
                throw ExportError(.invalidRequest, "hook failed: \(error)")
            }
        }
        try await base.store(file: file, key: key, contentType: contentType)
    }
}

/// Reads the files exports write back into rows (column name → text; a null is absent).
enum ExportFiles {
    /// RFC 4180 records with the header row's names.
    static func csv(_ bytes: [UInt8]) -> [[String: String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var index = 0
        var wasQuoted = false
        func endField() {
            record.append(wasQuoted || !field.isEmpty ? String(decoding: field, as: UTF8.self) : "\u{0}")
            field = []
            wasQuoted = false
        }
        while index < bytes.count {
            let byte = bytes[index]
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\"") {
                        field.append(byte)
                        index += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(byte)
                }
            } else if byte == UInt8(ascii: "\"") {
                quoted = true
                wasQuoted = true
            } else if byte == UInt8(ascii: ",") {
                endField()
            } else if byte == 0x0D && index + 1 < bytes.count && bytes[index + 1] == 0x0A {
                endField()
                records.append(record)
                record = []
                index += 1
            } else {
                field.append(byte)
            }
            index += 1
        }
        guard let header = records.first else { return [] }
        return records.dropFirst().map { values in
            Dictionary(uniqueKeysWithValues: zip(header, values).filter { $0.1 != "\u{0}" })
        }
    }

    /// JSON Lines: each object's members as text (numbers and booleans as written, nulls absent).
    static func jsonl(_ bytes: [UInt8]) throws -> [[String: String]] {
        try bytes.split(separator: UInt8(ascii: "\n")).map { line in
            try JSONDecoder().decode([String: Scalar].self, from: Data(line)).compactMapValues(\.text)
        }
    }

    /// A JSON Lines value: text, number, boolean or null.
    enum Scalar: Decodable {
        case text(String?)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .text(nil)
            } else if let flag = try? container.decode(Bool.self) {
                self = .text(flag ? "true" : "false")
            } else if let number = try? container.decode(Int64.self) {
                self = .text(String(number))
            } else {
                self = .text(try container.decode(String.self))
            }
        }
        var text: String? { if case .text(let value) = self { value } else { nil } }
    }

    static func rows(_ bytes: [UInt8], _ format: ExportFormat) throws -> [[String: String]] {
        format == .csv ? csv(bytes) : try jsonl(bytes)
    }

    /// An exported instant (ISO 8601 UTC with milliseconds) in epoch milliseconds.
    static func milliseconds(_ text: String) throws -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(formatter.date(from: text), "not an instant: \(text)")
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// A `transactions` row loaded back as the engine's transaction.
    static func transaction(_ row: [String: String]) throws -> TransactionFact {
        func instant(_ name: String) throws -> Int64? { try row[name].map(milliseconds) }
        return TransactionFact(
            transactionId: try #require(row["transaction_id"]), originalTransactionId: try #require(row["original_transaction_id"]),
            webOrderLineItemId: row["web_order_line_item_id"], productId: try #require(row["product_id"]),
            subscriptionGroupId: row["subscription_group_id"], purchaseDate: try #require(try instant("purchase_date")),
            originalPurchaseDate: try instant("original_purchase_date"), expiresDate: try instant("expires_date"),
            quantity: try #require(row["quantity"].flatMap { Int($0) }), productType: try #require(row["product_type"].flatMap { ProductType(rawValue: $0) }),
            appAccountToken: row["app_account_token"], ownership: try #require(row["ownership"].flatMap { Ownership(rawValue: $0) }),
            signedDate: try #require(try instant("signed_date")), revocationDate: try instant("revocation_date"),
            revocationReason: row["revocation_reason"].flatMap { Int($0) }, revocationType: row["revocation_type"].map { RevocationType(rawValue: $0) },
            isUpgraded: row["is_upgraded"] == "true", offerType: row["offer_type"].flatMap { Int($0) }.flatMap { OfferType(rawValue: $0) },
            offerDiscountType: row["offer_discount_type"].map { OfferDiscountType(rawValue: $0) }, offerIdentifier: row["offer_identifier"],
            environment: Environment(rawValue: try #require(row["environment"])), storefront: row["storefront"],
            transactionReason: row["transaction_reason"].map { TransactionReason(rawValue: $0) }, price: row["price_milli"].flatMap { Int64($0) },
            currency: row["currency"], storefrontId: row["storefront_id"])
    }
}
