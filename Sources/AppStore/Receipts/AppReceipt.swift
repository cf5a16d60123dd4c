import EntitledCrypto

/// A StoreKit 1 app receipt's payload, parsed from its ASN.1 (see ``AppReceipt/parse(payload:)``).
///
/// The payload is `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`; the values
/// used here are themselves DER (UTF8String, IA5String dates, INTEGER). Unknown types are skipped,
/// as Apple adds private ones.
public struct AppReceipt: Sendable, Equatable {
    /// Attribute 0: `Production`, `ProductionSandbox` or `Xcode`.
    public var receiptType: String?
    /// Attribute 2.
    public var bundleId: String?
    /// Attribute 3.
    public var applicationVersion: String?
    /// Attribute 19.
    public var originalApplicationVersion: String?
    /// Attribute 12, epoch milliseconds.
    public var creationDate: Int64?
    /// Attribute 21 (volume purchase receipts), epoch milliseconds.
    public var expirationDate: Int64?
    /// Attribute 17, in receipt order.
    public var inAppPurchases: [InAppPurchase] = []

    public init() {}

    /// One in-app purchase record (attribute 17, itself a receipt-shaped SET).
    public struct InAppPurchase: Sendable, Equatable {
        public var quantity: Int64?             // 1701
        public var productId: String?           // 1702
        public var transactionId: String?       // 1703
        public var purchaseDate: Int64?         // 1704
        public var originalTransactionId: String?  // 1705
        public var originalPurchaseDate: Int64?    // 1706
        public var expiresDate: Int64?          // 1708
        public var webOrderLineItemId: Int64?   // 1711
        public var cancellationDate: Int64?     // 1712
        public var isTrialPeriod: Bool?         // 1713
        public var isInIntroOfferPeriod: Bool?  // 1719
        public var promotionalOfferId: String?  // 1721

        public init() {}
    }

    /// Most in-app records accepted in one receipt: each becomes a fact applied in one request, so
    /// a receipt with thousands costs seconds of CPU. A receipt lists every renewal of a
    /// subscription (ten years of weekly renewals is 520) and only unfinished consumables.
    public static let maxInAppPurchases = 1_000

    /// The error a receipt with more than ``maxInAppPurchases`` in-app records is refused with.
    public static let tooManyInAppPurchases = DERError("more than \(maxInAppPurchases) in-app purchase records")

    /// The receipt's environment, as the V2 API names it (`ProductionSandbox` is Sandbox).
    public var environment: AppStoreEnvironment? {
        switch receiptType {
        case "Production": .production
        case "ProductionSandbox", "Sandbox": .sandbox
        case "Xcode": .xcode
        default: nil
        }
    }

    /// Parses the signed content of an app receipt.
    public static func parse(payload: [UInt8]) throws(DERError) -> AppReceipt {
        var receipt = AppReceipt()
        for (type, value) in try attributes(try DERReader.single(payload)) {
            switch type {
            case 0: receipt.receiptType = try utf8(value)
            case 2: receipt.bundleId = try utf8(value)
            case 3: receipt.applicationVersion = try utf8(value)
            case 12: receipt.creationDate = try date(value)
            case 17:
                guard receipt.inAppPurchases.count < maxInAppPurchases else { throw tooManyInAppPurchases }
                receipt.inAppPurchases.append(try inAppPurchase(value))
            case 19: receipt.originalApplicationVersion = try utf8(value)
            case 21: receipt.expirationDate = try date(value)
            default: continue
            }
        }
        return receipt
    }

    static func inAppPurchase(_ bytes: [UInt8]) throws(DERError) -> InAppPurchase {
        var record = InAppPurchase()
        for (type, value) in try attributes(try DERReader.single(bytes)) {
            switch type {
            case 1701: record.quantity = try integer(value)
            case 1702: record.productId = try identifier(value)
            case 1703: record.transactionId = try identifier(value)
            case 1704: record.purchaseDate = try date(value)
            case 1705: record.originalTransactionId = try identifier(value)
            case 1706: record.originalPurchaseDate = try date(value)
            case 1708: record.expiresDate = try date(value)
            case 1711: record.webOrderLineItemId = try integer(value)
            case 1712: record.cancellationDate = try date(value)
            case 1713: record.isTrialPeriod = try integer(value) != 0
            case 1719: record.isInIntroOfferPeriod = try integer(value) != 0
            case 1721: record.promotionalOfferId = try utf8(value)
            default: continue
            }
        }
        return record
    }

    /// The `(type, value)` pairs of a receipt-shaped SET.
    static func attributes(_ set: DERElement) throws(DERError) -> [(Int64, [UInt8])] {
        try set.expect(DERElement.set)
        var result: [(Int64, [UInt8])] = []
        for element in try set.children() {
            let fields = try element.expect(DERElement.sequence).children()
            guard fields.count == 3 else { throw DERError("attribute with \(fields.count) fields") }
            result.append((try fields[0].int64(), try fields[2].octets()))
        }
        return result
    }

    static func utf8(_ value: [UInt8]) throws(DERError) -> String { try DERReader.single(value).string() }
    static func integer(_ value: [UInt8]) throws(DERError) -> Int64 { try DERReader.single(value).int64() }

    /// A product or transaction id: text without control characters (a NUL would end it for C
    /// readers and make two ids look the same in logs).
    static func identifier(_ value: [UInt8]) throws(DERError) -> String {
        let text = try utf8(value)
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw DERError("an identifier with a control character")
        }
        return text
    }

    /// An IA5String RFC 3339 date (`2023-10-19T01:45:36Z`, fractions allowed); empty means absent.
    static func date(_ value: [UInt8]) throws(DERError) -> Int64? {
        let text = try DERReader.single(value).string()
        if text.isEmpty { return nil }
        guard let milliseconds = RFC3339.milliseconds(text) else { throw DERError("bad date '\(text.prefix(40))'") }
        return milliseconds
    }
}

/// RFC 3339 UTC timestamps, as receipts write them, without Foundation's formatters.
enum RFC3339 {
    /// `YYYY-MM-DDTHH:MM:SS[.fff…]Z` → epoch milliseconds; nil for anything else.
    static func milliseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b.count <= 40, b.last == UInt8(ascii: "Z"), b[4] == UInt8(ascii: "-"),
            b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"), b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard (48...57).contains(b[index]) else { return nil }
                value = value * 10 + Int64(b[index] - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month), (1...31).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var millis: Int64 = 0
        if b.count > 20 {
            guard b[19] == UInt8(ascii: "."), b.count > 21, b.count <= 30 else { return nil }
            guard let fraction = number(20..<(b.count - 1)) else { return nil }
            let digits = b.count - 21
            millis = digits >= 3 ? fraction / pow10(digits - 3) : fraction * pow10(3 - digits)
        } else {
            guard b.count == 20 else { return nil }
        }
        let seconds = CivilTime.epochSeconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return seconds * 1_000 + millis
    }

    private static func pow10(_ n: Int) -> Int64 {
        var value: Int64 = 1
        for _ in 0..<min(n, 18) { value *= 10 }
        return value
    }
}

extension AppReceipt {
    /// The receipt in the shape Apple's `verifyReceipt` answered it, so that a parsed receipt is
    /// applied by the same mapping as a verifyReceipt response (one path for receipt facts).
    /// A record without an original transaction id (Xcode receipts) is its own original.
    public var verifyReceiptResponse: VerifyReceiptResponse {
        let environment: LegacyEnvironment? =
            switch self.environment {
            case .production?: .production
            case .sandbox?: .sandbox
            case let other?: LegacyEnvironment(rawValue: other.rawValue)
            case nil: nil
            }
        let inApp = inAppPurchases.map { record in
            LatestReceiptInfo(
                quantity: record.quantity.map(String.init), productId: record.productId, transactionId: record.transactionId,
                originalTransactionId: record.originalTransactionId ?? record.transactionId,
                webOrderLineItemId: record.webOrderLineItemId.map(String.init),
                purchaseDateMs: record.purchaseDate.map(String.init),
                originalPurchaseDateMs: (record.originalPurchaseDate ?? record.purchaseDate).map(String.init),
                expiresDateMs: record.expiresDate.map(String.init), cancellationDateMs: record.cancellationDate.map(String.init),
                isTrialPeriod: record.isTrialPeriod.map { $0 ? "true" : "false" },
                isInIntroOfferPeriod: record.isInIntroOfferPeriod.map { $0 ? "true" : "false" },
                promotionalOfferId: record.promotionalOfferId)
        }
        return VerifyReceiptResponse(
            status: 0, environment: environment,
            receipt: LegacyReceipt(
                receiptType: receiptType, bundleId: bundleId, applicationVersion: applicationVersion,
                originalApplicationVersion: originalApplicationVersion, receiptCreationDateMs: creationDate.map(String.init),
                expirationDateMs: expirationDate.map(String.init), inApp: inApp))
    }

    /// Every transaction id in the receipt, in order, without repeats.
    public var transactionIds: [String] {
        var seen = Set<String>()
        return inAppPurchases.compactMap(\.transactionId).filter { seen.insert($0).inserted }
    }
}
