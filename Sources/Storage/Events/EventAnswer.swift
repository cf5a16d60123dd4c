/// An event's `answer` as stored (schema version 42): the customer's state document at the event,
/// compressed with the ledger's dictionary (``CompressedText``) in `events.answer_packed`, with
/// `events.answer` then `''`. Rows of an older layout keep the text in `answer` (and
/// `answer_packed` NULL) until the migration compresses them; both read alike, and the bytes read
/// are exactly those written, so what the feed, the webhooks and the integrations deliver does
/// not depend on the layout.
enum EventAnswer {
    /// `answer` as `events.answer_packed` holds it.
    static func encode(_ answer: [UInt8]) throws -> [UInt8] {
        try CompressedText.encode([answer])
    }

    /// The answer of a row whose `answer` and `answer_packed` are these.
    static func bytes(answer: String, packed: [UInt8]?) throws -> [UInt8] {
        guard let packed else { return Array(answer.utf8) }
        return try CompressedText.first(packed[...])
    }

    /// Version 42: compresses the answers of the events stored before it, in `seq` order, 500 rows
    /// per statement batch, in the migration's transaction.
    static func compressStored(_ session: any SQLSession) throws {
        var after: Int64 = 0
        while true {
            let rows = try session.rows(
                "SELECT seq, answer FROM events WHERE seq > \(after) AND answer_packed IS NULL ORDER BY seq LIMIT 500", as: PlainAnswer.self)
            guard let last = rows.last else { return }
            after = last.seq
            _ = try session.pipeline(
                try rows.map { "UPDATE events SET answer = '', answer_packed = \(try encode(Array($0.answer.utf8))) WHERE seq = \($0.seq)" as SQLQuery })
        }
    }

    private struct PlainAnswer: Decodable {
        var seq: Int64
        var answer: String
    }
}
