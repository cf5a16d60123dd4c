/// Stored JSON in the ledger: a fact's JSON (`facts.payload_packed`) and the JSON around the
/// signatures of its signed text (``SignedPart`` literals), compressed with a dictionary.
///
/// Stored as `[dictionary id][…]` (varints). The id says how the rest reads:
/// - 0: `[length][bytes]`, the text as it is (what deflate would not make smaller; older versions);
/// - 1 (schema version 16): `[length][bytes]`, raw deflate with ``LedgerDictionary/first`` followed
///   by a caller's `context` — bytes it has anyway when it reads the row (a format 2 signed text's
///   literals were deflated with the row's fact JSON after the dictionary), which it must give
///   again to read it back (``Deflate``);
/// - 2 (current): `[count][length]…[frame]`, one or more texts (a fact's JSON, then its signed
///   text's literals) compressed together as one zstd frame with ``LedgerDictionary/second``
///   (``ZstdDictionary``): each later text refers back to the earlier ones, whose values it
///   mostly repeats, without any dictionary being digested per call.
///
/// Each length is at most ``maxLength`` in all, and decompression must give exactly that.
enum CompressedText {
    /// The longest text stored compressed: a larger length is corruption, not an allocation.
    static let maxLength = 16 << 20
    /// The most texts one row compresses together (a fact's JSON and its literals).
    static let maxTexts = 2

    /// `texts` as stored, compressed together with the current dictionary.
    static func encode(_ texts: [[UInt8]]) throws -> [UInt8] {
        let total = texts.reduce(0) { $0 + $1.count }
        guard total <= maxLength, (1...maxTexts).contains(texts.count) else {
            throw StorageError(.invalidArgument, "text too large to store", detail: "\(total) bytes in \(texts.count) texts")
        }
        var out: [UInt8] = []
        Varint.write(LedgerDictionary.current, to: &out)
        Varint.write(UInt64(texts.count), to: &out)
        for text in texts { Varint.write(UInt64(text.count), to: &out) }
        // Whole-array appends (copies of each text) rather than `Array(texts.joined())`, which
        // walks every byte through a flattening iterator: a tenth of the storage suites' CPU
        // in the unoptimized build.
        var joined: [UInt8] = []
        joined.reserveCapacity(total)
        for text in texts { joined += text }
        out += try LedgerDictionary.zstd.get().compress(joined)
        return out
    }

    /// The texts `stored` holds (one for dictionaries 0 and 1); `context` is what a dictionary 1
    /// row was deflated with.
    /// - Throws: `DATA_CORRUPT` for anything but a well-formed row.
    static func decode(_ stored: ArraySlice<UInt8>, context: [UInt8] = []) throws -> [[UInt8]] {
        var cursor = ByteCursor(data: Array(stored), offset: 0)
        switch try cursor.varint() {
        case 0:
            let length = try cursor.varint()
            let rest = cursor.data[cursor.offset...]
            guard rest.count == length else { throw corrupt("stored length \(rest.count), expected \(length)") }
            return [Array(rest)]
        case LedgerDictionary.firstID:
            let length = try cursor.varint()
            guard length <= UInt64(maxLength) else { throw corrupt("length \(length) above the limit") }
            let rest = cursor.data[cursor.offset...]
            return [try Deflate.decompress(rest, dictionary: LedgerDictionary.first + context, count: Int(length))]
        case LedgerDictionary.current:
            let count = try cursor.varint()
            guard (1...UInt64(maxTexts)).contains(count) else { throw corrupt("\(count) texts") }
            var lengths: [Int] = []
            for _ in 0..<count {
                let length = try cursor.varint()
                guard length <= UInt64(maxLength - lengths.reduce(0, +)) else { throw corrupt("length \(length) above the limit") }
                lengths.append(Int(length))
            }
            let all = try LedgerDictionary.zstd.get().decompress(cursor.data[cursor.offset...], count: lengths.reduce(0, +))
            var start = 0
            return lengths.map { length in
                defer { start += length }
                return Array(all[start..<(start + length)])
            }
        case let id:
            throw corrupt("unknown dictionary \(id)")
        }
    }

    /// The one text `stored` holds, or the first of several (a fact's JSON before its literals).
    static func first(_ stored: ArraySlice<UInt8>) throws -> [UInt8] {
        try decode(stored)[0]
    }

    /// `text` in the layout of dictionary 1 (deflated with `context` after it), which only older
    /// versions wrote: what they left, for tests of reading it.
    static func deflated(_ text: [UInt8], context: [UInt8] = []) throws -> [UInt8] {
        var out: [UInt8] = []
        Varint.write(LedgerDictionary.firstID, to: &out)
        Varint.write(UInt64(text.count), to: &out)
        return out + (try Deflate.compress(text, dictionary: LedgerDictionary.first + context))
    }

    static func corrupt(_ what: String) -> StorageError {
        StorageError(.corrupt, "stored text cannot be decompressed", detail: what)
    }
}

/// The dictionaries stored JSON is compressed with, by id. A dictionary once used is never
/// changed (rows name it): a better one is added under a new id and becomes ``current``; rows
/// keep theirs until rewritten.
enum LedgerDictionary {
    /// The id of ``first``, zlib's preset dictionary (schema version 16).
    static let firstID: UInt64 = 1
    /// The id new rows are written with: ``second``, zstd.
    static let current: UInt64 = 2

    /// Dictionary 2 digested once for the process (``ZstdDictionary``), at level 4: on a
    /// notification's texts levels 5 and 6 save about 1 % more bytes for twice the instructions,
    /// level 3 costs 15 % more bytes, level 19 twenty times the instructions for 5 % fewer bytes
    /// (docs/storage.md, "Compressed JSON").
    static let zstd = Result { try ZstdDictionary(second, level: 4) }

    /// Dictionary 1: Apple's field names and typical values (its V2 notification, transaction and
    /// renewal payloads, in the order Apple writes their members), then the engine's facts as the
    /// projectors write them (sorted keys). Rarer members first: deflate codes nearer matches
    /// (the end) in fewer bits.
    static let first: [UInt8] = Array(
        #"""
        "revocationDate":,"revocationReason":0,"revocationType":"REFUND_FULL","isUpgraded":true,"offerType":1,\#
        "offerIdentifier":"","offerDiscountType":"FREE_TRIAL","PAY_AS_YOU_GO","PAY_UP_FRONT","offerPeriod":"P1M",\#
        "expirationIntent":1,"isInBillingRetryPeriod":false,"gracePeriodExpiresDate":,"priceIncreaseStatus":0,\#
        "eligibleWinBackOfferIds":[],"renewalPrice":,"FAMILY_SHARED","Non-Consumable","Consumable",\#
        "Non-Renewing Subscription","RENEWAL","DID_CHANGE_RENEWAL_PREF","DID_CHANGE_RENEWAL_STATUS",\#
        "AUTO_RENEW_ENABLED","DID_FAIL_TO_RENEW","GRACE_PERIOD","BILLING_RETRY","EXPIRED","VOLUNTARY",\#
        "GRACE_PERIOD_EXPIRED","OFFER_REDEEMED","PRICE_INCREASE","REFUND","REFUND_DECLINED","REFUND_REVERSED",\#
        "CONSUMPTION_REQUEST","RENEWAL_EXTENDED","REVOKE","TEST","ONE_TIME_CHARGE","RESUBSCRIBE","UPGRADE",\#
        "DOWNGRADE","EUR","GBP","JPY",{"fact":{"cancellationDate":,"cancellationReason":,"isInIntroOfferPeriod":false,\#
        "isTrialPeriod":false,"promotionalOfferId":"","offerCodeRefName":"","receiptDate":,"priceConsentStatus":,\#
        "revocationType":"","subscriptionGroupId":"","webOrderLineItemId":"","storefront":"","storefrontId":"",\#
        "transactionReason":"purchase","price":,"currency":"","offerType":"introductory","offerDiscountType":"freeTrial",\#
        "ownership":"familyShared","productType":"nonConsumable","Sandbox"},"kind":"appTransaction"}{"notificationType":"DID_RENEW",\#
        "subtype":"AUTO_RENEW_DISABLED","notificationUUID":"","data":{"appAppleId":,"bundleId":"",\#
        "bundleVersion":"","environment":"Sandbox","signedTransactionInfo":"","signedRenewalInfo":"",\#
        "status":1},"version":"2.0","signedDate":{"transactionId":"","originalTransactionId":"","webOrderLineItemId":"",\#
        "bundleId":"","productId":"","subscriptionGroupIdentifier":"","purchaseDate":,"originalPurchaseDate":,\#
        "expiresDate":,"quantity":1,"type":"Auto-Renewable Subscription","appAccountToken":"","inAppOwnershipType":"PURCHASED",\#
        "signedDate":,"environment":"Production","transactionReason":"PURCHASE","storefront":"USA",\#
        "storefrontId":"143441","price":,"currency":"USD","appTransactionId":"{"originalTransactionId":"",\#
        "autoRenewProductId":"","productId":"","autoRenewStatus":1,"renewalPrice":,"currency":"USD",\#
        "signedDate":,"environment":"Production","recentSubscriptionStartDate":,"renewalDate":,"appTransactionId":"{"fact":{"environment":"Production",\#
        "notificationUUID":"","originalTransactionId":"","productId":"","signedDate":,"subtype":"INITIAL_BUY",\#
        "transactionId":"","type":"SUBSCRIBED"},"kind":"notification"}{"fact":{"autoRenewStatus":true,\#
        "eligibleWinBackOfferIds":[],"environment":"Production","originalTransactionId":"","productId":"",\#
        "signedDate":},"kind":"renewalInfo"}{"fact":{"appAccountToken":"","environment":"Production",\#
        "expiresDate":,"isUpgraded":false,"originalTransactionId":"","ownership":"purchased","productId":"",\#
        "productType":"autoRenewable","purchaseDate":,"quantity":1,"signedDate":,"transactionId":""},\#
        "kind":"transaction"}
        """#.utf8)
}

/// A fact's JSON as stored (schema version 16): `facts.payload_packed`, the JSON compressed
/// (``CompressedText``), with `facts.payload` then `''`; rows written before version 16 keep the
/// text in `payload` (and `payload_packed` NULL) until the rewrite reaches them. In the current
/// layout the fact's signed text's literals are compressed with its JSON, as a second text
/// (``SignedTextFormat`` format 3).
enum FactPayload {
    /// `json`, and the literals of the fact's signed text when it has some, as stored.
    static func encode(_ json: String, literals: [UInt8]? = nil) throws -> [UInt8] {
        try CompressedText.encode([Array(json.utf8)] + (literals.map { [$0] } ?? []))
    }

    /// A fact's JSON columns, as every query that reads one names them.
    struct Columns: Decodable {
        var payload: String
        var payloadPacked: [UInt8]?
    }

    /// The JSON of the row's `payload` and `payload_packed` columns.
    static func bytes(_ row: SQLRow) throws -> [UInt8] {
        let columns = try row.decode(Columns.self)
        return try bytes(payload: columns.payload, packed: columns.payloadPacked)
    }

    /// The JSON of a fact whose `payload` and `payload_packed` are these.
    static func bytes(payload: String, packed: [UInt8]?) throws -> [UInt8] {
        try texts(payload: payload, packed: packed).json
    }

    /// The texts of the row's `payload` and `payload_packed` columns.
    static func texts(_ row: SQLRow) throws -> FactTexts {
        let columns = try row.decode(Columns.self)
        return try texts(payload: columns.payload, packed: columns.payloadPacked)
    }

    /// The JSON and stored literals of a fact whose `payload` and `payload_packed` are these.
    static func texts(payload: String, packed: [UInt8]?) throws -> FactTexts {
        guard let packed else { return FactTexts(json: Array(payload.utf8)) }
        let texts = try CompressedText.decode(packed[...])
        return FactTexts(json: texts[0], literals: texts.count > 1 ? texts[1] : nil)
    }

    static func text(_ row: SQLRow) throws -> String {
        String(decoding: try bytes(row), as: UTF8.self)
    }
}

/// What a fact's packed signed text is read with (``SignedTextFormat``): the fact's JSON (a
/// format 2 row's literals were deflated with it) and the literals stored with it (format 3).
struct FactTexts: Sendable, Equatable {
    var json: [UInt8]
    var literals: [UInt8]? = nil

    /// No fact: a notification body's (format 1) or a test's.
    static let none = FactTexts(json: [])
}
