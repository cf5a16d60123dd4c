/// A row type read by column name without Codable: the hot reads' rows. Its initialiser asks the
/// reader for each column by name; the names resolve to positions through the statement's plan
/// (``SQLRowPlan``) as with ``SQLRow/decode(_:)``, so after a statement's first row each column
/// costs one comparison of its name, and none of Codable's containers, metadata lookups or
/// per-property dispatch. Such a type stays `Decodable` too: the Codable decoding is the
/// reference its initialiser is checked against.
protocol SQLRowReadable {
    init(row: SQLRowReader) throws
}

/// One row's columns read by name (snake_case or camelCase, as ``SQLColumns`` finds them), with
/// the same conversions and errors as the Codable decoding: a column the result lacks is an
/// error, optional or not.
struct SQLRowReader {
    let lookup: SQLColumnLookup
    private var row: SQLRow { lookup.row }

    func text(_ name: String) throws -> String { try row.text(lookup.position(name)) }
    func optionalText(_ name: String) throws -> String? { try row.optionalText(lookup.position(name)) }
    func int(_ name: String) throws -> Int64 { try row.int(lookup.position(name)) }
    func optionalInt(_ name: String) throws -> Int64? { try row.optionalInt(lookup.position(name)) }
}

extension SQLRow {
    /// The row read into `Row` by its ``SQLRowReadable`` initialiser, through the statement's plan
    /// for `Row` (recorded by the first row read or decoded into `Row`).
    func read<Row: SQLRowReadable>(_ type: Row.Type) throws -> Row {
        try withPlan(for: Row.self) { try Row(row: SQLRowReader(lookup: $0)) }
    }
}
