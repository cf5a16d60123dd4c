import Foundation

/// RevenueCat's transaction export (Scheduled Data Exports, the Transactions feed: CSV, comma or
/// semicolon delimited, one row per transaction, columns chosen by the exporter) read as
/// ``CustomerImport/Line``s, so that `entitled import --from revenuecat` imports through the App
/// Store Server API like any other import.
///
/// Columns are found by name in the header, so their order and any others do not matter. Used:
/// `rc_original_app_user_id` (required), `rc_last_seen_app_user_id_alias`, `store` (required),
/// `original_store_transaction_id` and `store_transaction_id` (at least one). Rows of the App
/// Store become one line per original transaction (renewals are the same history); a customer
/// is imported under their last-seen id unless it is anonymous (`$RCAnonymousID:…`), with their
/// other RevenueCat ids as aliases. Rows of other stores are counted, not imported.
public struct RevenueCatExport: Sendable, Equatable {
    /// The reader's bounds.
    public struct Limits: Sendable, Equatable {
        /// Largest file read.
        public var maxFileBytes: Int64
        /// Longest record (a row with large subscriber attributes can be long).
        public var maxRecordBytes: Int
        /// Most original transactions kept (each is one line of the import).
        public var maxTransactions: Int

        public init(maxFileBytes: Int64 = 16 << 30, maxRecordBytes: Int = 1 << 20, maxTransactions: Int = 5_000_000) {
            self.maxFileBytes = maxFileBytes
            self.maxRecordBytes = maxRecordBytes
            self.maxTransactions = maxTransactions
        }
    }

    /// What the file held, for the import's summary.
    public struct Summary: Sendable, Equatable, CustomStringConvertible {
        /// Data rows read (the header not counted).
        public var rows = 0
        /// Rows of the imported store, each transaction once or not.
        public var appStoreRows = 0
        /// Distinct original transactions (the lines imported).
        public var transactions = 0
        /// RevenueCat customers (by `rc_original_app_user_id`) with such a transaction.
        public var customers = 0
        /// Rows of other stores, by the export's store name; not imported.
        public var skipped: [String: Int] = [:]
        /// Rows that could not be imported (``RevenueCatExport/rowErrors``).
        public var badRows = 0

        public init() {}

        public var description: String {
            var text = "rows \(rows), App Store rows \(appStoreRows), transactions \(transactions), customers \(customers), bad rows \(badRows)"
            for (store, count) in skipped.sorted(by: { $0.key < $1.key }) {
                text += "\nskipped \(count) \(store) rows"
                if store == "play_store" { text += " (Google Play purchases are skipped until a Google Play import exists)" }
            }
            return text
        }
    }

    /// The import's lines, in the order their first row came.
    public var lines: [CustomerImport.Line]
    /// Rows that could not be imported, each with its line (the first
    /// ``CustomerImport/maxReportedFailures``; ``Summary/badRows`` counts them all); the rest still are.
    public var rowErrors: [ImportInputError]
    public var summary: Summary

    /// RevenueCat's name for each store the App Store Server API answers for.
    public static let appleStores: Set<String> = ["app_store", "mac_app_store"]
    /// Prefix of the ids RevenueCat makes up for customers the app never named.
    public static let anonymousPrefix = "$RCAnonymousID:"
    /// Most ids kept per customer (each one more is an alias to add).
    static let maxIdsPerCustomer = 16
    /// Distinct store names counted; more are counted under `other`.
    static let maxStoreNames = 32
    /// Bytes read from the file at once.
    static let chunkBytes = 1 << 18

    /// Reads the export at `path`, streaming; `store` is the one imported (`app_store`, or
    /// `mac_app_store` for a Mac app with a bundle of its own).
    /// - Throws: ``ImportInputError`` for a file that cannot be read at all: unreadable, too large,
    ///   compressed, without a needed column, or malformed quoting (with its line).
    public static func read(path: String, store: String = "app_store", limits: Limits = Limits()) throws(ImportInputError) -> RevenueCatExport {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ImportInputError(.notCSV, "cannot open \(path)") }
        defer { try? handle.close() }
        var reader = Reader(store: store, limits: limits)
        var total: Int64 = 0
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: chunkBytes) ?? Data() } catch {
                throw ImportInputError(.notCSV, "cannot read \(path): \(error.localizedDescription)")
            }
            if chunk.isEmpty { break }
            total += Int64(chunk.count)
            guard total <= limits.maxFileBytes else {
                throw ImportInputError(.tooLarge, "the file is larger than \(limits.maxFileBytes) bytes")
            }
            try reader.feed(chunk)
        }
        return try reader.finish()
    }

    /// Reads an export held in memory (see ``read(path:store:limits:)``).
    public static func parse(_ bytes: [UInt8], store: String = "app_store", limits: Limits = Limits()) throws(ImportInputError) -> RevenueCatExport {
        guard bytes.count <= limits.maxFileBytes else { throw ImportInputError(.tooLarge, "the file is larger than \(limits.maxFileBytes) bytes") }
        var reader = Reader(store: store, limits: limits)
        try reader.feed(bytes)
        return try reader.finish()
    }

    /// The streaming state: the CSV reader, made once the first bytes show the delimiter, and
    /// what the rows so far say.
    struct Reader {
        let store: String
        let limits: Limits
        var csv: CSVReader?
        var columns: Columns?
        var transactions: [String: Int] = [:]
        var pending: [(line: Int, transactionId: String, customer: String)] = []
        var customers: [String: Customer] = [:]
        var rowErrors: [ImportInputError] = []
        var summary = Summary()

        /// Where each used column is in a row.
        struct Columns {
            var count: Int
            var originalUser: Int
            var lastSeenUser: Int?
            var store: Int
            var originalTransaction: Int?
            var transaction: Int?
        }

        /// A RevenueCat customer: the id imported under and every id seen for them.
        struct Customer {
            var primary: String
            var ids: [String]
        }

        init(store: String, limits: Limits) {
            self.store = store
            self.limits = limits
        }

        mutating func feed(_ bytes: some Collection<UInt8>) throws(ImportInputError) {
            if csv == nil {
                guard !bytes.isEmpty else { return }
                try Self.refuseBinary(bytes)
                csv = CSVReader(delimiter: CSVReader.delimiter(ofHeader: bytes.prefix(4096)), maxRecordBytes: limits.maxRecordBytes)
            }
            var reader = csv!
            try reader.feed(bytes) { (record) throws(ImportInputError) in try self.take(record) }
            csv = reader
        }

        mutating func finish() throws(ImportInputError) -> RevenueCatExport {
            guard var reader = csv else { throw ImportInputError(.notCSV, "the file is empty") }
            try reader.finish { (record) throws(ImportInputError) in try self.take(record) }
            guard columns != nil else { throw ImportInputError(.notCSV, "the file has no header") }
            summary.transactions = pending.count
            summary.customers = Set(pending.map(\.customer)).count
            let lines = pending.map { entry in
                let customer = customers[entry.customer]!
                return CustomerImport.Line(
                    number: entry.line, appUserId: customer.primary, transactionId: entry.transactionId,
                    aliases: customer.ids.filter { !AppUserID.same($0, customer.primary) })
            }
            return RevenueCatExport(lines: lines, rowErrors: rowErrors, summary: summary)
        }

        static func refuseBinary(_ bytes: some Collection<UInt8>) throws(ImportInputError) {
            if bytes.starts(with: [0x1F, 0x8B]) {
                throw ImportInputError(.notCSV, "the file is gzip-compressed (RevenueCat delivers .csv.gz): decompress it first")
            }
            if bytes.starts(with: Array("PAR1".utf8)) {
                throw ImportInputError(.notCSV, "the file is Parquet: export the feed as CSV")
            }
        }

        mutating func take(_ record: CSVReader.Record) throws(ImportInputError) {
            guard let columns else {
                columns = try Self.columns(record)
                return
            }
            summary.rows += 1
            do throws(ImportInputError) {
                guard record.fields.count == columns.count else {
                    throw ImportInputError(.badRow, line: record.line, "\(record.fields.count) fields, the header has \(columns.count)")
                }
                try row(record, columns)
            } catch where error.code == .badRow {
                summary.badRows += 1
                if rowErrors.count < CustomerImport.maxReportedFailures { rowErrors.append(error) }
            }
        }

        static func columns(_ header: CSVReader.Record) throws(ImportInputError) -> Columns {
            var names: [String: Int] = [:]
            for (index, bytes) in header.fields.enumerated() {
                var text = String(decoding: bytes, as: UTF8.self)
                if index == 0, text.hasPrefix("\u{FEFF}") { text.removeFirst() }
                let name = text.trimmingCharacters(in: .whitespaces).lowercased()
                if names[name] == nil { names[name] = index }
            }
            let required = ["rc_original_app_user_id", "store"]
            let missing = required.filter { names[$0] == nil }
            let original = names["original_store_transaction_id"], transaction = names["store_transaction_id"]
            guard missing.isEmpty, original != nil || transaction != nil else {
                let lacking = missing + (original == nil && transaction == nil ? ["original_store_transaction_id or store_transaction_id"] : [])
                throw ImportInputError(.missingColumn, line: header.line, "the header lacks \(lacking.joined(separator: ", "))")
            }
            return Columns(
                count: header.fields.count, originalUser: names["rc_original_app_user_id"]!,
                lastSeenUser: names["rc_last_seen_app_user_id_alias"], store: names["store"]!,
                originalTransaction: original, transaction: transaction)
        }

        mutating func row(_ record: CSVReader.Record, _ columns: Columns) throws(ImportInputError) {
            func text(_ index: Int?, _ name: String) throws(ImportInputError) -> String? {
                guard let index else { return nil }
                guard let value = String(validating: record.fields[index], as: UTF8.self) else {
                    throw ImportInputError(.badRow, line: record.line, "\(name) is not UTF-8")
                }
                let trimmed = value.trimmingCharacters(in: .whitespaces)
                return trimmed.isEmpty ? nil : trimmed
            }
            guard let rowStore = try text(columns.store, "store")?.lowercased() else {
                throw ImportInputError(.badRow, line: record.line, "store is empty")
            }
            guard rowStore == store else {
                count(skipped: rowStore)
                return
            }
            summary.appStoreRows += 1
            guard let original = try text(columns.originalUser, "rc_original_app_user_id"), AppUserID.isValid(original) else {
                throw ImportInputError(.badRow, line: record.line, "rc_original_app_user_id is not a valid appUserId")
            }
            let lastSeen = try text(columns.lastSeenUser, "rc_last_seen_app_user_id_alias")
            if let lastSeen, !AppUserID.isValid(lastSeen) {
                throw ImportInputError(.badRow, line: record.line, "rc_last_seen_app_user_id_alias is not a valid appUserId")
            }
            var transactionId = try text(columns.originalTransaction, "original_store_transaction_id")
            if transactionId == nil { transactionId = try text(columns.transaction, "store_transaction_id") }
            guard let transactionId, CustomerImport.isTransactionId(transactionId) else {
                throw ImportInputError(.badRow, line: record.line, "no valid original_store_transaction_id or store_transaction_id")
            }
            if let first = transactions[transactionId] {
                let owner = pending[first].customer
                guard AppUserID.same(owner, original) else {
                    throw ImportInputError(
                        .badRow, line: record.line,
                        "transaction \(transactionId) belongs to another customer on line \(pending[first].line); that line is imported")
                }
                note(original, lastSeen)
                return
            }
            guard pending.count < limits.maxTransactions else {
                throw ImportInputError(.tooLarge, line: record.line, "more than \(limits.maxTransactions) transactions: split the file")
            }
            transactions[transactionId] = pending.count
            pending.append((record.line, transactionId, original))
            note(original, lastSeen)
        }

        /// Records the ids of the customer `original`; the first row decides the id imported under.
        mutating func note(_ original: String, _ lastSeen: String?) {
            var customer =
                customers[original]
                ?? Customer(primary: Self.primary(original: original, lastSeen: lastSeen), ids: [])
            for id in [original, lastSeen].compactMap({ $0 }) where customer.ids.count < RevenueCatExport.maxIdsPerCustomer
                && !customer.ids.contains(where: { AppUserID.same($0, id) })
            {
                customer.ids.append(id)
            }
            customers[original] = customer
        }

        /// The id a customer is imported under: the one the app last used, unless RevenueCat made
        /// it up (then the original, which may be made up too).
        static func primary(original: String, lastSeen: String?) -> String {
            guard let lastSeen, !lastSeen.hasPrefix(RevenueCatExport.anonymousPrefix) else { return original }
            return lastSeen
        }

        mutating func count(skipped store: String) {
            let name = store.utf8.count <= 64 && (summary.skipped[store] != nil || summary.skipped.count < RevenueCatExport.maxStoreNames) ? store : "other"
            summary.skipped[name, default: 0] += 1
        }
    }
}
