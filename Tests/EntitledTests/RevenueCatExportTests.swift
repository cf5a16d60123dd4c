import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// The CSV reader and RevenueCat's transaction export read as import lines: quoting, line ends,
/// bounds, columns by name, stores, deduplication, aliases and bad rows with their lines.
@Suite struct RevenueCatExportTests {
    /// Every record of `text`, fed whole and fed one byte at a time (the two must agree).
    static func records(_ text: String, delimiter: Character = ",", maxRecordBytes: Int = 1 << 20) throws(ImportInputError) -> [[String]] {
        func read(chunked: Bool) throws(ImportInputError) -> [CSVReader.Record] {
            var reader = CSVReader(delimiter: delimiter.asciiValue!, maxRecordBytes: maxRecordBytes)
            var records: [CSVReader.Record] = []
            let bytes = Array(text.utf8)
            if chunked {
                for byte in bytes { try reader.feed([byte]) { records.append($0) } }
            } else {
                try reader.feed(bytes) { records.append($0) }
            }
            try reader.finish { records.append($0) }
            return records
        }
        let whole = try read(chunked: false)
        let bytewise = try read(chunked: true)
        #expect(whole == bytewise)
        return whole.map { ["\($0.line)"] + $0.fields.map { String(decoding: $0, as: UTF8.self) } }
    }

    @Test(arguments: [
        ("a,b\n1,2\n", [["1", "a", "b"], ["2", "1", "2"]]),
        ("a,b\r\n1,2", [["1", "a", "b"], ["2", "1", "2"]]),
        ("a,b\r1,2\r", [["1", "a", "b"], ["2", "1", "2"]]),
        (#""x,1","say ""hi""",z"# + "\n", [["1", "x,1", #"say "hi""#, "z"]]),
        ("\"two\nlines\",b\nc,d\n", [["1", "two\nlines", "b"], ["3", "c", "d"]]),
        ("\"two\r\nlines\",b\r\nc,d\r\n", [["1", "two\r\nlines", "b"], ["3", "c", "d"]]),
        (",,\n\"\",x\n", [["1", "", "", ""], ["2", "", "x"]]),
        ("a\n\n\nb\n", [["1", "a"], ["4", "b"]]),
        (#"{"k": "v"},b"# + "\n", [["1", #"{"k": "v"}"#, "b"]]),
    ] as [(String, [[String]])])
    func readsRFC4180Quoting(text: String, expected: [[String]]) throws {
        #expect(try Self.records(text) == expected)
    }

    @Test(arguments: [
        ("\"open,b\n1,2\n", ImportInputError.Code.badQuoting, 1),
        ("a,b\n\"x\"y,2\n", .badQuoting, 2),
        ("a,b\n1,2\n3,\"4\n", .badQuoting, 3),
        ("a,b\n1,2\n" + String(repeating: "x", count: 100) + "\n", .lineTooLong, 3),
    ] as [(String, ImportInputError.Code, Int)])
    func refusesBrokenQuotingAndLongRecordsWithTheirLine(text: String, code: ImportInputError.Code, line: Int) {
        #expect {
            _ = try Self.records(text, maxRecordBytes: 64)
        } throws: { error in
            guard let error = error as? ImportInputError else { return false }
            return error.code == code && error.line == line
        }
    }

    @Test(arguments: [
        ("a,b;c\n", ","), ("a;b;c\n", ";"), ("a\tb\tc\n", "\t"), ("\"x;y\",b,c\n", ","), ("single\n", ","),
    ] as [(String, Character)])
    func findsTheHeadersDelimiter(header: String, delimiter: Character) {
        #expect(CSVReader.delimiter(ofHeader: Array(header.utf8)) == delimiter.asciiValue!)
    }

    // MARK: RevenueCat's export

    static let header =
        "rc_original_app_user_id,rc_last_seen_app_user_id_alias,country,product_identifier,start_time,store,is_sandbox,"
        + "store_transaction_id,original_store_transaction_id,custom_subscriber_attributes"

    /// A row of ``header``.
    static func row(_ original: String, _ lastSeen: String, store: String = "app_store", _ transaction: String, _ first: String) -> String {
        "\(original),\(lastSeen),GB,pro.monthly,2026-01-01 08:27:06,\(store),false,\(transaction),\(first),\"{\"\"$email\"\": {\"\"value\"\": \"\"a@b.c\"\"}}\""
    }

    @Test func readsAppStoreRowsOncePerOriginalTransactionUnderTheLastSeenIdWithAliases() throws {
        let anonymous = "$RCAnonymousID:0a1b2c"
        let text = [
            Self.header,
            Self.row(anonymous, "alice", "1000", "1000"),
            Self.row(anonymous, "alice", "1001", "1000"),  // a renewal: the same history
            Self.row("bob", "bob", "2000", "2000"),
            Self.row("$RCAnonymousID:ffee", "$RCAnonymousID:ffee", "3000", "3000"),
            Self.row("bob", "bob", store: "play_store", "GPA.1", "GPA.1"),
            Self.row("bob", "bob", store: "stripe", "sub_1", "sub_1"),
            Self.row(anonymous, "alice", "4000", "4000"),
        ].joined(separator: "\r\n")
        let export = try RevenueCatExport.parse(Array(text.utf8))
        #expect(
            export.lines == [
                CustomerImport.Line(number: 2, appUserId: "alice", transactionId: "1000", aliases: [anonymous]),
                CustomerImport.Line(number: 4, appUserId: "bob", transactionId: "2000"),
                CustomerImport.Line(number: 5, appUserId: "$RCAnonymousID:ffee", transactionId: "3000"),
                CustomerImport.Line(number: 8, appUserId: "alice", transactionId: "4000", aliases: [anonymous]),
            ])
        #expect(export.rowErrors.isEmpty)
        #expect(export.summary.rows == 7 && export.summary.appStoreRows == 5)
        #expect(export.summary.transactions == 4 && export.summary.customers == 3)
        #expect(export.summary.skipped == ["play_store": 1, "stripe": 1])
        #expect(export.summary.description.contains("skipped 1 play_store rows (Google Play purchases are skipped until a Google Play import exists)"))
    }

    /// Columns are found by name: another order, a semicolon, extra columns, a byte-order mark,
    /// upper case, only `store_transaction_id`.
    @Test(arguments: [
        "\u{FEFF}store;extra;RC_ORIGINAL_APP_USER_ID;store_transaction_id\napp_store;x;carol;5000\n",
        "extra,store_transaction_id,original_store_transaction_id,store,rc_original_app_user_id\ny,5001,5000,app_store,carol\n",
        "rc_original_app_user_id,store,original_store_transaction_id\n\"carol\",\"app_store\",\"5000\"",
    ])
    func findsColumnsByName(text: String) throws {
        let export = try RevenueCatExport.parse(Array(text.utf8))
        #expect(export.lines == [CustomerImport.Line(number: 2, appUserId: "carol", transactionId: "5000")])
    }

    @Test(arguments: [
        ("store,store_transaction_id\napp_store,1\n", "rc_original_app_user_id"),
        ("rc_original_app_user_id,store_transaction_id\na,1\n", "store"),
        ("rc_original_app_user_id,store\na,app_store\n", "original_store_transaction_id or store_transaction_id"),
    ])
    func refusesAHeaderWithoutANeededColumn(text: String, missing: String) {
        #expect {
            _ = try RevenueCatExport.parse(Array(text.utf8))
        } throws: { error in
            guard let error = error as? ImportInputError else { return false }
            return error.code == .missingColumn && error.line == 1 && error.message.hasSuffix(missing)
        }
    }

    @Test(arguments: [
        ([0x1F, 0x8B, 0x08, 0x00], "gzip"), (Array("PAR1xxxx".utf8), "Parquet"), ([], "empty"),
    ] as [([UInt8], String)])
    func refusesWhatIsNotCSV(bytes: [UInt8], named: String) {
        #expect {
            _ = try RevenueCatExport.parse(bytes)
        } throws: { error in
            guard let error = error as? ImportInputError else { return false }
            return error.code == .notCSV && error.message.contains(named)
        }
    }

    /// A bad row is reported with its line; the rows around it are still imported.
    @Test(arguments: [
        ("bad\u{7}id,bad\u{7}id,GB,p,t,app_store,false,6000,6000,{}", "rc_original_app_user_id is not a valid appUserId"),
        ("dave,bad\u{1}id,GB,p,t,app_store,false,6000,6000,{}", "rc_last_seen_app_user_id_alias is not a valid appUserId"),
        ("dave,dave,GB,p,t,app_store,false,,,{}", "no valid original_store_transaction_id or store_transaction_id"),
        ("dave,dave,GB,p,t,app_store,false,60/00,60/00,{}", "no valid original_store_transaction_id or store_transaction_id"),
        ("dave,dave,GB,p,t,,false,6000,6000,{}", "store is empty"),
        ("dave,dave,app_store,6000", "4 fields, the header has 10"),
        ("erin,erin,GB,p,t,app_store,false,1000,1000,{}", "transaction 1000 belongs to another customer on line 2; that line is imported"),
    ])
    func reportsABadRowWithItsLineAndImportsTheOthers(bad: String, message: String) throws {
        let text = [Self.header, Self.row("alice", "alice", "1000", "1000"), bad, Self.row("bob", "bob", "2000", "2000")]
            .joined(separator: "\n")
        let export = try RevenueCatExport.parse(Array(text.utf8))
        #expect(export.lines.map(\.appUserId) == ["alice", "bob"])
        #expect(export.rowErrors == [ImportInputError(.badRow, line: 3, message)])
        #expect(export.rowErrors.first?.description == "line 3: IMPORT_BAD_ROW: \(message)")
    }

    /// Every bad row is counted; the first are listed, so a file of bad rows stays bounded.
    @Test func badRowsAreCountedAndTheFirstListed() throws {
        let bad = (0..<150).map { "x\u{7}\($0),x,GB,p,t,app_store,false,\($0 + 1),\($0 + 1),{}" }
        let export = try RevenueCatExport.parse(Array(([Self.header] + bad).joined(separator: "\n").utf8))
        #expect(export.summary.badRows == 150)
        #expect(export.rowErrors.count == CustomerImport.maxReportedFailures)
        #expect(export.rowErrors.first?.line == 2 && export.summary.description.hasSuffix("bad rows 150"))
    }

    @Test func aRowThatIsNotUTF8IsABadRowNeverRepaired() throws {
        var bytes = Array((Self.header + "\n").utf8)
        bytes += Array("al".utf8) + [0xFF] + Array("ice,alice,GB,p,t,app_store,false,1000,1000,{}\n".utf8)
        let export = try RevenueCatExport.parse(bytes)
        #expect(export.lines.isEmpty)
        #expect(export.rowErrors == [ImportInputError(.badRow, line: 2, "rc_original_app_user_id is not UTF-8")])
    }

    /// Only the App Store's rows are imported; every other store's are counted under its name.
    @Test(arguments: [
        ("app_store", true), (" APP_STORE ", true), ("mac_app_store", false), ("play_store", false), ("stripe", false),
        ("amazon", false), ("promotional", false), ("rc_billing", false), ("paddle", false),
    ])
    func importsTheAppStoreAndCountsOtherStores(store: String, imported: Bool) throws {
        let text = [Self.header, Self.row("a", "a", store: store, "7000", "7000")].joined(separator: "\n")
        let export = try RevenueCatExport.parse(Array(text.utf8))
        #expect(export.lines.count == (imported ? 1 : 0))
        #expect(export.summary.appStoreRows == (imported ? 1 : 0))
        #expect(export.summary.skipped == (imported ? [:] : [store: 1]))
        #expect(export.rowErrors.isEmpty)
    }

    @Test func theMacAppStoreIsImportedWhenAskedAndTheAppStoreThenSkipped() throws {
        let text = [Self.header, Self.row("a", "a", store: "mac_app_store", "7000", "7000"), Self.row("b", "b", "8000", "8000")]
            .joined(separator: "\n")
        let export = try RevenueCatExport.parse(Array(text.utf8), store: "mac_app_store")
        #expect(export.lines == [CustomerImport.Line(number: 2, appUserId: "a", transactionId: "7000")])
        #expect(export.summary.skipped == ["app_store": 1])
    }

    @Test func boundsTheFileTheRecordAndTheTransactions() throws {
        let text = [Self.header, Self.row("a", "a", "1", "1"), Self.row("b", "b", "2", "2")].joined(separator: "\n")
        let bytes = Array(text.utf8)
        func code(_ limits: RevenueCatExport.Limits) -> (ImportInputError.Code, Int?)? {
            do {
                _ = try RevenueCatExport.parse(bytes, limits: limits)
                return nil
            } catch {
                return (error.code, error.line)
            }
        }
        #expect(code(.init(maxFileBytes: Int64(bytes.count - 1))).map(\.0) == .tooLarge)
        let long = code(.init(maxRecordBytes: 40))
        #expect(long?.0 == .lineTooLong && long?.1 == 1)
        let many = code(.init(maxTransactions: 1))
        #expect(many?.0 == .tooLarge && many?.1 == 3)
        #expect(code(.init()) == nil)
    }

    /// The file is read from disk in chunks; a record split across chunks reads as one.
    @Test func readsAFileInChunks() throws {
        let rows = (0..<6000).map { Self.row("user\($0)", "user\($0)", "\(10_000 + $0)", "\(10_000 + $0)") }
        let text = ([Self.header] + rows).joined(separator: "\n")
        #expect(text.utf8.count > 2 * (1 << 18), "several chunks")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("revenuecat-\(UUID()).csv")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let export = try RevenueCatExport.read(path: file.path)
        #expect(export == (try RevenueCatExport.parse(Array(text.utf8))))
        #expect(export.lines.count == 6000 && export.lines.last == CustomerImport.Line(number: 6001, appUserId: "user5999", transactionId: "15999"))
        #expect(throws: ImportInputError.self) { try RevenueCatExport.read(path: file.path + ".missing") }
    }

    /// Options that do not go together are refused before anything is read.
    @Test func theCommandRefusesOptionsThatDoNotGoTogether() async throws {
        let format = try await CLI.run(["import", "--app", "com.example.app", "--from", "stripe", "transactions.csv"])
        #expect(format.status == 2 && format.stderr.contains("--from"))
        let store = try await CLI.run(["import", "--app", "com.example.app", "--store", "mac_app_store", "transactions.csv"])
        #expect(store.status == 2 && store.stderr.contains("--store goes with --from revenuecat"))
    }
}
