import AppStore
import Entitlements
import Foundation
import HTTPServer
import JSONCoding

/// A customer's answer rendered once, when their projection changes: the exact JSON
/// `GET /v1/customers/{appUserId}` sends, with `serverTime` left at the epoch so that a read only
/// splices in its own time. Reads then decode and encode nothing.
///
/// It is rendered from the customer's stored state (``Storage/CustomerDocument``) on the first read
/// after that state changes, and stored beside it (``Storage/LedgerStore/storeAnswer(_:appUserId:document:)``)
/// as one line of metadata, one line of what the offerings read needs (``CustomerAudience``, JSON;
/// empty when none was rendered), then the body —
/// `entitled-answer/VERSION SCOPE NEXT OFFSET\n{audience}\n{…}`, where VERSION is ``formatVersion``,
/// SCOPE the environments the answer merges (``EvaluationContext/scope``),
/// NEXT the next instant at which time alone changes the answer (ms, or `-`) and OFFSET where
/// `serverTime`'s value starts in the body. A server meeting an answer of an older version
/// renders it again from the stored state (``ProjectionCache``), so changing the answer's JSON
/// needs no `rebuild`.
public struct RenderedCustomer: Sendable, Equatable {
    /// The format of the stored documents this binary writes. Raise it whenever the answer's JSON
    /// or this header changes: stored answers of an older format are then re-rendered lazily.
    /// 2: answers merge the grant environments; subscriptions say their `environment`.
    /// 3: `offers` lists the offers eligible now; subscriptions carry Apple's `winBackOfferIds`.
    /// 4: `storefront` and `storefrontId`; consumables carry `purchased`, `refunded` and `spent`.
    /// 5: `aliases` (the customer's other ids); entitlements say their `source` (`purchase` or
    /// `grant`) and `grantId`.
    /// 6: entitlements and subscriptions say their `store` (`appStore`, `playStore`).
    /// 7: a second line holds the customer's ``CustomerAudience`` for the offerings read.
    public static let formatVersion = 7

    /// What the stored document says before the body: its header and the audience line.
    let head: Head
    private let body: [UInt8]

    /// The environments the answer merges, as ``EvaluationContext/scope`` writes them.
    public var scope: String { head.scope }
    /// The next instant (ms) at which time alone changes the answer, if any.
    public var nextChangeAt: Int64? { head.nextChangeAt }
    /// The ``CustomerAudience`` line as rendered (JSON); empty when none was. Equal lines are the
    /// same audience, so it also keys the offerings read's held answers (``OfferingAnswerCache``).
    var audienceLine: [UInt8] { head.audienceLine }

    private static let prefix = Array("entitled-answer/".utf8)
    private static let magic = Array("entitled-answer/\(formatVersion) ".utf8)
    private static let epoch = Array("1970-01-01T00:00:00.000Z".utf8)
    private static let timeMarker = Array(#""serverTime":"1970-01-01T00:00:00.000Z""#.utf8)

    /// Renders `body` (its `serverTime` is ignored), the answer for `scope`, with `codec`, and
    /// `audience`, what the offerings read needs of the same state (nil: none, for a rendering
    /// only its bytes are wanted of). Nil only if the body does not encode or its `serverTime`
    /// member is not found (neither happens).
    public init?(body: CustomerBody, scope: String, audience: CustomerAudience? = nil, codec: JSONCodec = JSONCodec()) {
        var body = body
        body.serverTime = 0
        guard let bytes = try? codec.encodeAnswer(body) else { return nil }
        // Keys are sorted and escaped, so the marker can only be the serverTime member itself.
        guard let marker = Self.offset(of: Self.timeMarker, in: bytes) else { return nil }
        head = Head(
            scope: scope, nextChangeAt: body.nextChangeAt, audienceLine: audience?.line ?? [],
            timeOffset: marker + Self.timeMarker.count - Self.epoch.count - 1)
        self.body = bytes
    }

    /// Where `needle` first starts in `haystack`: memchr for its first byte, memcmp for the rest.
    /// Not the generic `firstRange(of:)`, which Foundation's `DataProtocol` supplies for byte
    /// arrays and which cost more than the encoding itself.
    static func offset(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard let first = needle.first, needle.count <= haystack.count else { return nil }
        return haystack.withUnsafeBytes { h -> Int? in
            needle.withUnsafeBytes { n -> Int? in
                var start = 0
                let last = h.count - n.count
                while start <= last {
                    guard let hit = memchr(h.baseAddress! + start, Int32(first), last - start + 1) else { return nil }
                    let index = UnsafeRawPointer(hit) - h.baseAddress!
                    if memcmp(h.baseAddress! + index, n.baseAddress!, n.count) == 0 { return index }
                    start = index + 1
                }
                return nil
            }
        }
    }

    /// The format version a stored document declares; nil when it is no rendered answer at all.
    public static func formatVersion(of document: [UInt8]) -> Int? {
        guard document.starts(with: prefix) else { return nil }
        let digits = document[prefix.count...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        guard (1...9).contains(digits.count), document.dropFirst(prefix.count + digits.count).first == UInt8(ascii: " ")
        else { return nil }
        return Int(String(decoding: digits, as: UTF8.self))
    }

    /// What a stored document says before its body: its header and the audience line. The
    /// offerings read needs nothing else, so it reads this alone and never copies the body.
    struct Head: Sendable, Equatable {
        let scope: String
        let nextChangeAt: Int64?
        /// ``RenderedCustomer/audienceLine``.
        let audienceLine: [UInt8]
        /// Where `serverTime`'s value starts in the body.
        let timeOffset: Int

        init(scope: String, nextChangeAt: Int64?, audienceLine: [UInt8], timeOffset: Int) {
            self.scope = scope
            self.nextChangeAt = nextChangeAt
            self.audienceLine = audienceLine
            self.timeOffset = timeOffset
        }

        /// The head of a stored document of this ``RenderedCustomer/formatVersion``; nil when it
        /// is not one (another version, or written by another projector).
        init?(document: [UInt8]) {
            guard let (head, _) = Self.read(document) else { return nil }
            self = head
        }

        /// The head of a stored document of this format and where its body starts in it.
        static func read(_ document: [UInt8]) -> (head: Head, bodyStart: Int)? {
            guard document.starts(with: RenderedCustomer.magic), let newline = document.firstIndex(of: UInt8(ascii: "\n")) else {
                return nil
            }
            let fields = document[RenderedCustomer.magic.count..<newline].split(separator: UInt8(ascii: " "))
            guard fields.count == 3, let offset = Int(String(decoding: fields[2], as: UTF8.self)), offset >= 0,
                let secondNewline = document[(newline + 1)...].firstIndex(of: UInt8(ascii: "\n"))
            else { return nil }
            let next = String(decoding: fields[1], as: UTF8.self)
            let nextChangeAt: Int64?
            if next == "-" {
                nextChangeAt = nil
            } else if let value = Int64(next) {
                nextChangeAt = value
            } else {
                return nil
            }
            let head = Head(
                scope: String(decoding: fields[0], as: UTF8.self), nextChangeAt: nextChangeAt,
                audienceLine: Array(document[(newline + 1)..<secondNewline]), timeOffset: offset)
            return (head, secondNewline + 1)
        }

        /// The header line and the audience line, as stored before the body.
        var bytes: [UInt8] {
            let header = "entitled-answer/\(RenderedCustomer.formatVersion) \(scope) \(nextChangeAt.map(String.init) ?? "-") \(timeOffset)\n"
            return Array(header.utf8) + audienceLine + [UInt8(ascii: "\n")]
        }

        /// What the offerings read needs of the answer's state, read with `codec`; nil when none
        /// was rendered or it does not read.
        func audience(codec: JSONCodec = JSONCodec()) -> CustomerAudience? {
            audienceLine.isEmpty ? nil : try? codec.decode(CustomerAudience.self, from: audienceLine)
        }

        /// Whether the answer this head begins still holds at `now` for the environments `scope` names.
        func holds(at now: Int64, scope: String) -> Bool {
            scope == self.scope && (nextChangeAt.map { $0 > now } ?? true)
        }
    }

    /// Reads a stored document of this ``formatVersion``; nil when it is not one (another
    /// version, or written by another projector).
    public init?(document: [UInt8]) {
        guard let (head, bodyStart) = Head.read(document) else { return nil }
        self.init(head: head, bodyStart: bodyStart, document: document)
    }

    /// The stored `document` whose head ``Head/read(_:)`` read as `head`, its body starting at
    /// `bodyStart`; nil when the body has no `serverTime` where the head says.
    init?(head: Head, bodyStart: Int, document: [UInt8]) {
        let body = Array(document[bodyStart...])
        guard head.timeOffset + Self.epoch.count <= body.count,
            body[head.timeOffset..<(head.timeOffset + Self.epoch.count)].elementsEqual(Self.epoch)
        else { return nil }
        self.head = head
        self.body = body
    }

    /// What the projection stores.
    public var document: [UInt8] { head.bytes + body }

    /// The bytes it holds: its body and its head's audience line and scope.
    var byteCount: Int { body.count + head.audienceLine.count + head.scope.utf8.count }

    /// What the offerings read needs of the same state, read with `codec`; nil when none was
    /// rendered or it does not read.
    public func audience(codec: JSONCodec = JSONCodec()) -> CustomerAudience? { head.audience(codec: codec) }

    /// The body to send at `serverTime` (ms).
    public func body(serverTime: Int64) -> [UInt8] {
        var bytes = body
        bytes.replaceSubrange(
            head.timeOffset..<(head.timeOffset + Self.epoch.count), with: ISO8601.format(milliseconds: serverTime).utf8)
        return bytes
    }

    /// Whether this answer still holds at `now` for the environments `scope` names.
    public func holds(at now: Int64, scope: String) -> Bool { head.holds(at: now, scope: scope) }
}
