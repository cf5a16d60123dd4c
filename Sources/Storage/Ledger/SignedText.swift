import EntitledCrypto
import Foundation

/// Signed text in the ledger's packed layout (schema version 14): what `facts.signed_packed` and
/// `notifications.body_packed` hold, from which the exact bytes received are rebuilt.
///
/// An Apple V2 notification is ~13 KB, most of it three copies of the same `x5c` certificate
/// chain (the outer JWS's header and, base64url-encoded once more inside its payload, the nested
/// transaction's and renewal's), and its nested JWS were stored again as facts of their own, and
/// the whole notification once more as the raw body. Packed:
/// - a compact JWS is its header's id in `jws_headers` (each distinct header stored once, keyed
///   by its SHA-256), its payload base64url-decoded, and its signature decoded;
/// - a JSON string inside a payload or a body that is the signed text of another fact of the same
///   message is a reference to that fact — its kind and key (`facts.kind`, `jws_sha256`, which is
///   the digest of its signing input) — with its own signature (a twin stored first under another
///   ECDSA encoding has the same key but other signature bytes);
/// - everything else is kept as it is.
/// Each step is taken only where it gives the same bytes back (a base64url segment that does not
/// re-encode to itself stays literal), so every packed text rebuilds byte for byte.
indirect enum SignedPart: Sendable, Hashable {
    /// Bytes as they are.
    case literal([UInt8])
    /// A compact JWS: `header` (the base64url text, stored in `jws_headers`), its decoded payload
    /// (itself packed), its decoded signature.
    case jws(header: JWSHeader, payload: [SignedPart], signature: [UInt8])
    /// The signed text of the fact stored under `kind` and `digest` (hex), with `signature`.
    case reference(kind: String, digest: String, signature: [UInt8])
}

/// A JWS protected header (its base64url text) and its SHA-256, its key in `jws_headers`. Equal
/// and hashed by the digest alone: hashing kilobytes of `x5c` byte by byte was a measurable part
/// of ingest.
struct JWSHeader: Sendable, Hashable {
    var text: [UInt8]
    /// Lower-case hex SHA-256 of `text`.
    var digest: String

    init(_ text: [UInt8]) {
        self.text = text
        digest = Hex.encode(SHA256.hash(text))
    }

    /// The header `text` is: one of `made` with the same bytes, else a new one added to `made`.
    /// A message's JWS usually share one header (the same `x5c` chain signs the notification and
    /// its nested JWS), so its digest is taken once per message, not once per JWS.
    init(_ text: ArraySlice<UInt8>, reusing made: inout [JWSHeader]) {
        let known = text.withUnsafeBytes { wanted in
            made.first { header in
                header.text.count == wanted.count
                    && header.text.withUnsafeBytes { memcmp($0.baseAddress!, wanted.baseAddress!, wanted.count) == 0 }
            }
        }
        if let known {
            self = known
        } else {
            self.init(Array(text))
            made.append(self)
        }
    }

    static func == (a: JWSHeader, b: JWSHeader) -> Bool { a.digest == b.digest }
    func hash(into hasher: inout Hasher) { hasher.combine(digest) }
}

/// The signed texts of one message's facts, by text: what a payload or body may refer to.
struct SignedSiblings {
    struct Entry {
        var kind: String
        var digest: String
        var signature: [UInt8]
        /// `"` + text + `"`: how it appears in JSON (base64url needs no escaping).
        var quoted: [UInt8]
    }

    var entries: [Entry] = []

    /// The compact JWS among `texts` (kind, text, key), longest first so that a text containing
    /// another is replaced whole.
    init(_ texts: [(kind: String, text: String, digest: String)]) {
        self.init(
            split: texts.compactMap { kind, text, digest in
                let bytes = Array(text.utf8)
                return SignedTextPacker.split(bytes).map { (kind, bytes, $0, digest) }
            })
    }

    /// From texts already split (``SignedTextPacker/split(_:)``: each is scanned once).
    init(split texts: [(kind: String, text: [UInt8], split: SignedTextPacker.Split, digest: String)]) {
        for (kind, text, split, digest) in texts {
            guard let signature = SignedTextPacker.urlDecode(split.signature), SignedTextPacker.reencodes(signature, to: split.signature)
            else { continue }
            var quoted = [UInt8(ascii: "\"")]
            quoted.reserveCapacity(text.count + 2)
            quoted += text
            quoted.append(UInt8(ascii: "\""))
            entries.append(Entry(kind: kind, digest: digest, signature: signature, quoted: quoted))
        }
        entries.sort { $0.quoted.count > $1.quoted.count }
    }

    init() {}
}

/// Packs signed text (see ``SignedPart``). Pure: runs on the caller's thread.
enum SignedTextPacker {
    /// The three segments of a compact JWS, each non-empty base64url; nil for any other text.
    typealias Split = (header: ArraySlice<UInt8>, payload: ArraySlice<UInt8>, signature: ArraySlice<UInt8>)

    static func split(_ bytes: [UInt8]) -> Split? {
        split(bytes, signingInputEnd: bytes.withUnsafeBufferPointer { FactDigest.signingInputEnd($0) })
    }

    /// ``split(_:)`` where ``FactDigest/signingInputEnd(_:)`` of `bytes` is known: `end`.
    static func split(_ bytes: [UInt8], signingInputEnd end: Int) -> Split? {
        guard end < bytes.count, let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        return (bytes[..<firstDot], bytes[(firstDot + 1)..<end], bytes[(end + 1)...])
    }

    static func urlDecode(_ segment: ArraySlice<UInt8>) -> [UInt8]? {
        segment.withUnsafeBytes { Base64.decode(utf8: $0, url: true) }
    }

    /// Whether `decoded` (what `segment` decodes to) base64url-encodes back to exactly `segment`:
    /// no padding, and no stray bits in its last character (an encoder leaves them zero; a decoder
    /// ignores them, so another text decodes to the same bytes). Checked without encoding again:
    /// this runs on every payload received.
    static func reencodes(_ decoded: [UInt8], to segment: ArraySlice<UInt8>) -> Bool {
        guard let last = segment.last, last != UInt8(ascii: "=") else { return segment.isEmpty }
        let value: UInt8
        switch last {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = last - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): value = last - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): value = last - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): value = 62
        case UInt8(ascii: "_"): value = 63
        default: return false
        }
        switch segment.count % 4 {
        case 0: return decoded.count == segment.count / 4 * 3
        case 2: return value & 0x0F == 0 && decoded.count == segment.count / 4 * 3 + 1
        case 3: return value & 0x03 == 0 && decoded.count == segment.count / 4 * 3 + 2
        default: return false
        }
    }

    /// `text` packed: a JWS as header, payload and signature (references to `siblings` inside its
    /// payload), anything else with references to `siblings` where they appear as JSON strings.
    static func pack(_ text: [UInt8], siblings: SignedSiblings) -> [SignedPart] {
        if let jws = packJWS(text, siblings: siblings) { return [jws] }
        return referencing(text, siblings: siblings)
    }

    static func packJWS(_ text: [UInt8], siblings: SignedSiblings) -> SignedPart? {
        split(text).flatMap { packJWS($0, siblings: siblings) }
    }

    static func packJWS(_ split: Split, siblings: SignedSiblings) -> SignedPart? {
        var headers: [JWSHeader] = []
        return packJWS(split, siblings: siblings, headers: &headers)
    }

    /// ``packJWS(_:siblings:)`` for one of a message's texts: `headers` are those its other texts
    /// made (``JWSHeader/init(_:reusing:)``).
    static func packJWS(_ split: Split, siblings: SignedSiblings, headers: inout [JWSHeader]) -> SignedPart? {
        let (header, payload, signature) = split
        guard let payloadBytes = urlDecode(payload), reencodes(payloadBytes, to: payload),
            let signatureBytes = urlDecode(signature), reencodes(signatureBytes, to: signature)
        else { return nil }
        return .jws(
            header: JWSHeader(header, reusing: &headers), payload: referencing(payloadBytes, siblings: siblings),
            signature: signatureBytes)
    }

    /// `bytes` with every quoted sibling text replaced by a reference (the quotes stay literal).
    static func referencing(_ bytes: [UInt8], siblings: SignedSiblings) -> [SignedPart] {
        guard !siblings.entries.isEmpty, !bytes.isEmpty else { return [.literal(bytes)] }
        var parts: [SignedPart] = []
        var literalStart = 0
        bytes.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            var index = 0
            // Only a `"` can start a quoted sibling: jump from one to the next (memchr), compare
            // with memcmp (kilobytes per message, on the request's thread).
            while index < buffer.count, let found = memchr(base + index, Int32(UInt8(ascii: "\"")), buffer.count - index) {
                let at = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
                index = at + 1
                for entry in siblings.entries where buffer.count - at >= entry.quoted.count {
                    let equal = entry.quoted.withUnsafeBufferPointer { memcmp(base + at, $0.baseAddress!, $0.count) == 0 }
                    guard equal else { continue }
                    parts.append(.literal(Array(buffer[literalStart...at])))
                    parts.append(.reference(kind: entry.kind, digest: entry.digest, signature: entry.signature))
                    // The closing quote starts the next literal.
                    literalStart = at + entry.quoted.count - 1
                    index = literalStart + 1
                    break
                }
            }
        }
        if literalStart < bytes.count || parts.isEmpty { parts.append(.literal(Array(bytes[literalStart...]))) }
        return parts
    }

    /// The distinct JWS headers in `parts` (to be given ids before encoding).
    static func headers(in parts: [SignedPart], into set: inout Set<JWSHeader>) {
        for part in parts {
            if case .jws(let header, let payload, _) = part {
                set.insert(header)
                headers(in: payload, into: &set)
            }
        }
    }

    // MARK: Stored form

    /// The stored bytes (``SignedTextFormat``): format 3 when the literals are stored with the fact
    /// (``literals(_:)``, compressed with its JSON on the caller's thread), format 1 otherwise. `headerIDs` maps each header to its
    /// `jws_headers.id`.
    ///
    /// A reference to a fact this message stored itself (`own`, ``OwnFacts``) is stored without
    /// its signature (the stored fact's is the one referenced), as its kind alone when the fact is
    /// the message's only one of its kind; any other keeps its key and signature (an earlier twin
    /// may be stored under other signature bytes).
    static func encode(
        _ parts: [SignedPart], headerIDs: [String: Int64], literalsWithFact: Bool, own: OwnFacts = OwnFacts()
    ) throws -> [UInt8] {
        let stored = try stored(parts, own: own) { header in
            guard let id = headerIDs[header.digest] else { throw StorageError(.internal, "JWS header without an id") }
            return id
        }
        return SignedTextFormat.encode(stored, literalsWithFact: literalsWithFact)
    }

    /// The literals a format 3 row stores with its fact's JSON for `parts`
    /// (``SignedTextFormat/literals(_:)``; no header id is needed for them).
    static func literals(_ parts: [SignedPart]) throws -> [UInt8] {
        SignedTextFormat.literals(try stored(parts) { _ in 0 })
    }

    static func stored(
        _ parts: [SignedPart], own: OwnFacts = OwnFacts(), headerID: (JWSHeader) throws -> Int64
    ) throws -> [StoredPart] {
        try parts.map { part in
            switch part {
            case .literal(let bytes): return .literal(bytes)
            case .jws(let header, let payload, let signature):
                return .jws(
                    header: try headerID(header), payload: try stored(payload, own: own, headerID: headerID),
                    signature: signature)
            case .reference(let kind, let digest, let signature):
                if own.byKind.contains(kind + " " + digest) { return .sibling(kind: kind) }
                guard let key = Hex.decode(digest), key.count == 32 else { throw StorageError(.internal, "reference without a SHA-256 key") }
                return .reference(kind: kind, key: key, signature: own.signatures.contains(kind + " " + digest) ? nil : signature)
            }
        }
    }
}

/// The facts a message stores itself, by key (``FactRow/referenceKey``): what its packed texts
/// may refer to without a signature, or by kind alone.
struct OwnFacts: Sendable {
    /// References stored without their signature: the stored fact's is the one referenced.
    var signatures: Set<String> = []
    /// References stored as the kind alone (``StoredPart/sibling(kind:)``): the message's only
    /// fact of that kind, found by the message and the kind. A subset of ``signatures``.
    var byKind: Set<String> = []

    /// Only those of `stored` (the keys a message's insert found new).
    func keeping(_ stored: Set<String>) -> OwnFacts {
        OwnFacts(signatures: signatures.intersection(stored), byKind: byKind.intersection(stored))
    }
}

/// Rebuilds packed signed text. Headers and referenced facts are looked up through the session
/// (headers cached for the reader's life: a header row never changes).
final class SignedTextReader {
    let session: any SQLSession
    private var headers: [Int64: [UInt8]] = [:]

    init(session: any SQLSession) { self.session = session }

    /// The one reconstruction: a row's signed text from its raw column (the old layout, or text
    /// that was not packed), its packed column and, for a fact, its texts (``FactPayload``: what a
    /// format 2 row's literals were deflated with, where a format 3 row's are stored).
    /// `message`: the row's message (a fact's `notification_id`, a body's notification), which a
    /// reference by kind (``StoredPart/sibling(kind:)``) is found by.
    func text(raw: [UInt8], packed: [UInt8]?, context: FactTexts = .none, message: Int64?) throws -> [UInt8] {
        guard let packed, !packed.isEmpty else { return raw }
        return try unpack(packed, context: context, message: message, depth: 0)
    }

    /// References nest (a body → its notification → its transaction): at most this deep.
    static let maxDepth = 4

    func unpack(_ packed: [UInt8], context: FactTexts, message: Int64?, depth: Int) throws -> [UInt8] {
        guard depth <= Self.maxDepth else { throw Self.corrupt("references nest too deep") }
        var out: [UInt8] = []
        try render(try SignedTextFormat.decode(packed, context: context), message: message, depth: depth, into: &out)
        return out
    }

    private func render(_ parts: [StoredPart], message: Int64?, depth: Int, into out: inout [UInt8]) throws {
        for part in parts {
            switch part {
            case .literal(let bytes):
                out += bytes
            case .jws(let header, let payload, let signature):
                out += try self.header(header)
                out.append(UInt8(ascii: "."))
                var text: [UInt8] = []
                try render(payload, message: message, depth: depth, into: &text)
                out += Base64.urlEncode(text).utf8
                out.append(UInt8(ascii: "."))
                out += Base64.urlEncode(signature).utf8
            case .reference(let kind, let key, let signature):
                let referenced = try fact(kind: kind, key: key, depth: depth)
                guard let signature else {
                    out += referenced
                    continue
                }
                guard let end = referenced.lastIndex(of: UInt8(ascii: ".")) else { throw Self.corrupt("referenced fact is no JWS") }
                out += referenced[..<end]
                out.append(UInt8(ascii: "."))
                out += Base64.urlEncode(signature).utf8
            case .sibling(let kind):
                guard let message else { throw Self.corrupt("a reference by kind outside a message") }
                let rows = try session.rows(
                    "SELECT notification_id, jws, signed_packed, payload, payload_packed FROM facts WHERE notification_id = \(message) AND kind = \(kind)",
                    as: StoredSignedText.self)
                guard rows.count == 1 else { throw Self.corrupt("message \(message) stored \(rows.count) facts of kind \(kind)") }
                out += try text(of: rows[0], depth: depth)
            }
        }
    }

    private func header(_ id: Int64) throws -> [UInt8] {
        if let cached = headers[id] { return cached }
        guard let text = try session.value("SELECT header FROM jws_headers WHERE id = \(id)", as: String.self) else {
            throw Self.corrupt("JWS header \(id) is missing")
        }
        let header = Array(text.utf8)
        headers[id] = header
        return header
    }

    private func fact(kind: String, key: [UInt8], depth: Int) throws -> [UInt8] {
        guard
            let row = try session.row(
                "SELECT notification_id, jws, signed_packed, payload, payload_packed FROM facts WHERE \(LedgerKeys.fact(kind: kind, key: key, dialect: session.dialect))",
                as: StoredSignedText.self)
        else { throw Self.corrupt("referenced fact \(kind) \(Hex.encode(key)) is missing") }
        return try text(of: row, depth: depth)
    }

    /// A referenced fact's text, one level deeper, read in its own message.
    private func text(of row: StoredSignedText, depth: Int) throws -> [UInt8] {
        guard let packed = row.signedPacked, !packed.isEmpty else { return Array(row.jws.utf8) }
        return try unpack(packed, context: try row.context, message: row.notificationId, depth: depth + 1)
    }

    static func corrupt(_ what: String) -> StorageError {
        StorageError(.corrupt, "stored signed text cannot be rebuilt", detail: what)
    }
}
