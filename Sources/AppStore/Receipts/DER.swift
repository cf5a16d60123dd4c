/// A small, strict BER/DER reader: just what app receipts need (PKCS#7 framing, SETs of
/// `SEQUENCE { INTEGER, INTEGER, OCTET STRING }`, integers, strings).
///
/// Every length is checked against the bytes that remain, nesting is bounded by ``maxDepth``, and
/// Apple's indefinite-length (BER) framing of Xcode receipts is accepted with the same checks.
/// Nothing here traps: a bad input is a ``DERError``.
public struct DERError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One element: its identifier octet and its content bytes (indices into the original buffer).
public struct DERElement: Sendable {
    /// The identifier octet (class, constructed bit and tag number below 31).
    public var identifier: UInt8
    /// The content octets (for an indefinite-length element: without the end-of-contents octets).
    public var content: ArraySlice<UInt8>
    /// How deep this element lies (the outermost is 0).
    public var depth: Int

    public var isConstructed: Bool { identifier & 0x20 != 0 }
    /// The tag number with class and constructed bit removed.
    public var tagNumber: UInt8 { identifier & 0x1F }
    /// Universal or context-specific class bits (top two bits).
    public var tagClass: UInt8 { identifier & 0xC0 }

    public static let integer: UInt8 = 0x02
    public static let octetString: UInt8 = 0x04
    public static let objectIdentifier: UInt8 = 0x06
    public static let utf8String: UInt8 = 0x0C
    public static let ia5String: UInt8 = 0x16
    public static let sequence: UInt8 = 0x30
    public static let set: UInt8 = 0x31
    /// `[0]` constructed, context-specific (PKCS#7's explicit content).
    public static let contextZero: UInt8 = 0xA0

    /// The children of a constructed element.
    public func children() throws(DERError) -> [DERElement] {
        guard isConstructed else { throw DERError("element 0x\(String(identifier, radix: 16)) is not constructed") }
        var reader = DERReader(content, depth: depth + 1)
        var result: [DERElement] = []
        while !reader.isAtEnd {
            guard result.count < DERReader.maxChildren else { throw DERError("too many elements") }
            result.append(try reader.next())
        }
        return result
    }

    /// The one child of a constructed element with no other content.
    public func onlyChild() throws(DERError) -> DERElement {
        let children = try children()
        guard children.count == 1 else { throw DERError("expected one element, found \(children.count)") }
        return children[0]
    }

    /// Requires this element's identifier to be `expected`.
    @discardableResult
    public func expect(_ expected: UInt8) throws(DERError) -> DERElement {
        guard identifier == expected else {
            throw DERError("expected 0x\(String(expected, radix: 16)), found 0x\(String(identifier, radix: 16))")
        }
        return self
    }

    /// An OCTET STRING's bytes; a constructed (BER) one is the concatenation of its parts.
    public func octets() throws(DERError) -> [UInt8] {
        guard tagNumber == 0x04, tagClass == 0 else { throw DERError("not an OCTET STRING") }
        guard isConstructed else { return Array(content) }
        var bytes: [UInt8] = []
        for child in try children() { bytes += try child.octets() }
        return bytes
    }

    /// An INTEGER that fits in 64 bits (two's complement, minimal or not).
    public func int64() throws(DERError) -> Int64 {
        try expect(Self.integer)
        guard !content.isEmpty, content.count <= 8 else { throw DERError("INTEGER of \(content.count) bytes") }
        var value: Int64 = (content.first! & 0x80) != 0 ? -1 : 0
        for byte in content { value = (value << 8) | Int64(byte) }
        return value
    }

    /// A UTF8String or IA5String as text (invalid UTF-8 is an error, not replaced).
    public func string() throws(DERError) -> String {
        guard identifier == Self.utf8String || identifier == Self.ia5String else { throw DERError("not a string") }
        guard let text = String(validating: content, as: UTF8.self) else { throw DERError("string is not UTF-8") }
        return text
    }

    /// An OBJECT IDENTIFIER in dotted form.
    public func objectIdentifier() throws(DERError) -> String {
        try expect(Self.objectIdentifier)
        guard let first = content.first, content.count <= 64 else { throw DERError("bad OBJECT IDENTIFIER") }
        var arcs: [UInt64] = [UInt64(min(first / 40, 2)), UInt64(first) - UInt64(min(first / 40, 2)) * 40]
        var value: UInt64 = 0
        for byte in content.dropFirst() {
            guard value < (1 << 56) else { throw DERError("OBJECT IDENTIFIER arc too large") }
            value = (value << 7) | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 {
                arcs.append(value)
                value = 0
            }
        }
        guard content.last! & 0x80 == 0 else { throw DERError("truncated OBJECT IDENTIFIER") }
        return arcs.map(String.init).joined(separator: ".")
    }
}

/// Reads consecutive elements from a byte range.
public struct DERReader: Sendable {
    /// Deepest nesting accepted (receipts need 8).
    public static let maxDepth = 24
    /// Most children read from one constructed element.
    public static let maxChildren = 100_000

    private let bytes: ArraySlice<UInt8>
    private var position: Int
    private let depth: Int

    /// A reader over `bytes`, whose elements lie at `depth`.
    public init(_ bytes: ArraySlice<UInt8>, depth: Int = 0) {
        self.bytes = bytes
        self.position = bytes.startIndex
        self.depth = depth
    }

    public var isAtEnd: Bool { position >= bytes.endIndex }

    /// Parses exactly one element that fills `bytes`.
    public static func single(_ bytes: [UInt8]) throws(DERError) -> DERElement {
        var reader = DERReader(bytes[...])
        let element = try reader.next()
        guard reader.isAtEnd else { throw DERError("trailing bytes") }
        return element
    }

    /// The next element; its whole extent (including nested indefinite-length parts) is checked.
    public mutating func next() throws(DERError) -> DERElement {
        guard depth <= Self.maxDepth else { throw DERError("nested deeper than \(Self.maxDepth)") }
        guard position < bytes.endIndex else { throw DERError("unexpected end") }
        let identifier = bytes[position]
        guard identifier & 0x1F != 0x1F else { throw DERError("high tag numbers are not supported") }
        position += 1
        guard position < bytes.endIndex else { throw DERError("missing length") }
        let first = bytes[position]
        position += 1
        if first == 0x80 {
            // Indefinite length (BER): constructed only; children until end-of-contents.
            guard identifier & 0x20 != 0 else { throw DERError("indefinite length on a primitive") }
            let start = position
            var inner = DERReader(bytes[start...], depth: depth + 1)
            var count = 0
            while true {
                guard inner.position + 1 < bytes.endIndex else { throw DERError("missing end-of-contents") }
                if bytes[inner.position] == 0, bytes[inner.position + 1] == 0 { break }
                count += 1
                guard count <= Self.maxChildren else { throw DERError("too many elements") }
                _ = try inner.next()
            }
            let end = inner.position
            position = end + 2
            return DERElement(identifier: identifier, content: bytes[start..<end], depth: depth)
        }
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let octets = Int(first & 0x7F)
            guard octets <= 4 else { throw DERError("length of \(octets) octets") }
            guard bytes.endIndex - position >= octets else { throw DERError("truncated length") }
            for _ in 0..<octets {
                length = (length << 8) | Int(bytes[position])
                position += 1
            }
        }
        guard length <= bytes.endIndex - position else { throw DERError("length \(length) beyond the input") }
        let content = bytes[position..<(position + length)]
        position += length
        return DERElement(identifier: identifier, content: content, depth: depth)
    }
}
