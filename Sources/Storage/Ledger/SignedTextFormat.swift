import EntitledCrypto

/// Packed signed text as stored: ``SignedPart`` with each header's `jws_headers` id and each
/// reference's key as its 32 bytes.
indirect enum StoredPart: Sendable, Hashable {
    case literal([UInt8])
    case jws(header: Int64, payload: [StoredPart], signature: [UInt8])
    /// `signature` nil: the referenced fact's own (its stored text is used whole).
    case reference(kind: String, key: [UInt8], signature: [UInt8]?)
    /// The stored text, whole, of the one fact of `kind` that the same message stored (the row's
    /// `notification_id`, or the notification itself for its body): no key needed.
    case sibling(kind: String)
}

/// The bytes of `facts.signed_packed` and `notifications.body_packed`: a format byte, then the
/// parts, each a tag and length-prefixed fields (0 literal; 1 JWS: header id, payload parts,
/// signature; 2 reference: kind, 32-byte key, signature; 3 reference whose signature is the
/// referenced fact's own: kind, 32-byte key — 65 bytes less for each of a notification's nested
/// texts and for its body; 4 (schema version 38) reference to the only fact of its kind that the
/// same message stored: kind — 32 bytes less again; 5 (schema version 44) the same with the kind's
/// one-byte code, ``LedgerCodes``, instead of its name, which tag 4 keeps for a kind without one).
///
/// - Format 1 (schema version 14): literals inline.
/// - Format 2 (schema version 16, read only): after the format byte, the length of a
///   ``CompressedText`` and that text, which is every literal's bytes in order, deflated with the
///   row's context (a fact's JSON); a literal part is then only its length, its bytes the next ones
///   of that text. Only the JSON is compressed: signatures and keys are random bytes.
/// - Format 3 (current): as format 2, but the literals' bytes are stored with the fact's JSON, as
///   the second text of its `payload_packed` (``FactPayload``), compressed with it in one frame.
enum SignedTextFormat {
    static let inline: UInt8 = 1
    static let compressed: UInt8 = 2
    static let literalsWithFact: UInt8 = 3

    /// `parts` stored: in format 3 when their literals are stored with the fact (``literals(_:)``
    /// given to ``FactPayload/encode(_:literals:)``), else in format 1.
    static func encode(_ parts: [StoredPart], literalsWithFact: Bool) -> [UInt8] {
        var out: [UInt8] = [literalsWithFact ? Self.literalsWithFact : inline]
        write(parts, inline: !literalsWithFact, to: &out)
        return out
    }

    /// Every literal's bytes of `parts`, in order.
    static func literals(_ parts: [StoredPart]) -> [UInt8] {
        var literals: [UInt8] = []
        func collect(_ parts: [StoredPart]) {
            for part in parts {
                switch part {
                case .literal(let bytes): literals += bytes
                case .jws(_, let payload, _): collect(payload)
                case .reference, .sibling: break
                }
            }
        }
        collect(parts)
        return literals
    }

    /// The parts of stored bytes of any format; `context` is the row's fact's texts (formats 2 and 3).
    static func decode(_ bytes: [UInt8], context: FactTexts) throws -> [StoredPart] {
        var cursor = ByteCursor(data: bytes, offset: 0)
        var literals: ByteCursor?
        switch try cursor.byte() {
        case inline: literals = nil
        case compressed:
            let count = try cursor.varint()
            guard count <= UInt64(bytes.count - cursor.offset) else { throw ByteCursor.truncated }
            let texts = try CompressedText.decode(try cursor.fixed(Int(count)), context: context.json)
            guard texts.count == 1 else { throw SignedTextReader.corrupt("literals of \(texts.count) texts") }
            literals = ByteCursor(data: texts[0], offset: 0)
        case literalsWithFact:
            guard let text = context.literals else { throw SignedTextReader.corrupt("the fact stores no literals") }
            literals = ByteCursor(data: text, offset: 0)
        case let format: throw SignedTextReader.corrupt("unknown packed format \(format)")
        }
        let parts = try read(&cursor, literals: &literals)
        guard cursor.offset == bytes.count else { throw SignedTextReader.corrupt("trailing bytes") }
        if let literals, literals.offset != literals.data.count { throw SignedTextReader.corrupt("literals left over") }
        return parts
    }

    /// Inline: format 1; else a literal is only its length.
    private static func write(_ parts: [StoredPart], inline: Bool, to out: inout [UInt8]) {
        Varint.write(UInt64(parts.count), to: &out)
        for part in parts {
            switch part {
            case .literal(let bytes):
                out.append(0)
                if inline { Varint.writeBytes(bytes, to: &out) } else { Varint.write(UInt64(bytes.count), to: &out) }
            case .jws(let header, let payload, let signature):
                out.append(1)
                Varint.write(UInt64(header), to: &out)
                write(payload, inline: inline, to: &out)
                Varint.writeBytes(signature, to: &out)
            case .reference(let kind, let key, let signature):
                out.append(signature == nil ? 3 : 2)
                Varint.writeBytes(Array(kind.utf8), to: &out)
                out += key
                if let signature { Varint.writeBytes(signature, to: &out) }
            case .sibling(let kind):
                if let code = LedgerCodes.code(kind, in: LedgerCodes.kinds) {
                    out.append(5)
                    Varint.write(UInt64(code), to: &out)
                } else {
                    out.append(4)
                    Varint.writeBytes(Array(kind.utf8), to: &out)
                }
            }
        }
    }

    private static func read(_ cursor: inout ByteCursor, literals: inout ByteCursor?) throws -> [StoredPart] {
        let count = try cursor.varint()
        // Each part takes at least one byte: a count above what is left is corruption.
        guard count <= UInt64(cursor.data.count - cursor.offset) else { throw ByteCursor.truncated }
        var parts: [StoredPart] = []
        for _ in 0..<count {
            switch try cursor.byte() {
            case 0:
                if literals != nil {
                    let length = try cursor.varint()
                    guard length <= UInt64(literals!.data.count - literals!.offset) else { throw ByteCursor.truncated }
                    parts.append(.literal(Array(try literals!.fixed(Int(length)))))
                } else {
                    parts.append(.literal(try cursor.lengthPrefixed()))
                }
            case 1:
                let header = try cursor.varint()
                guard header <= UInt64(Int64.max) else { throw ByteCursor.truncated }
                let payload = try read(&cursor, literals: &literals)
                parts.append(.jws(header: Int64(header), payload: payload, signature: try cursor.lengthPrefixed()))
            case 2, 3:
                let own = cursor.data[cursor.offset - 1] == 3
                let kind = String(decoding: try cursor.lengthPrefixed(), as: UTF8.self)
                let key = Array(try cursor.fixed(32))
                parts.append(.reference(kind: kind, key: key, signature: own ? nil : try cursor.lengthPrefixed()))
            case 4:
                parts.append(.sibling(kind: String(decoding: try cursor.lengthPrefixed(), as: UTF8.self)))
            case 5:
                let code = try cursor.varint()
                guard let kind = LedgerCodes.word(code, in: LedgerCodes.kinds) else { throw SignedTextReader.corrupt("unknown kind code \(code)") }
                parts.append(.sibling(kind: kind))
            case let tag:
                throw SignedTextReader.corrupt("unknown part \(tag)")
            }
        }
        return parts
    }
}

/// Unsigned LEB128 varints (the packed formats' lengths and ids).
enum Varint {
    static func write(_ value: UInt64, to out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    static func writeBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        write(UInt64(bytes.count), to: &out)
        out += bytes
    }
}

/// Reads stored bytes; running past the end is a `DATA_CORRUPT` error.
struct ByteCursor {
    let data: [UInt8]
    var offset: Int

    mutating func byte() throws -> UInt8 {
        guard offset < data.count else { throw Self.truncated }
        defer { offset += 1 }
        return data[offset]
    }

    mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try byte()
            guard shift < 63 else { throw Self.truncated }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    mutating func fixed(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count <= data.count - offset else { throw Self.truncated }
        defer { offset += count }
        return data[offset..<(offset + count)]
    }

    mutating func lengthPrefixed() throws -> [UInt8] {
        let count = try varint()
        guard count <= UInt64(data.count - offset) else { throw Self.truncated }
        return Array(try fixed(Int(count)))
    }

    static var truncated: StorageError { SignedTextReader.corrupt("truncated") }
}
