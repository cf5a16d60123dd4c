import AppStore
import EntitledCrypto
import Foundation

/// Mints StoreKit 1 app receipts (PKCS#7 over the ASN.1 payload) as Apple's receipt signer does,
/// signed by a ``TestCertificateAuthority``'s leaf with its intermediate included.
public struct TestReceipt: Sendable {
    /// One in-app purchase record; dates are epoch milliseconds.
    public struct Purchase: Sendable {
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String?
        public var purchaseDate: Int64
        public var expiresDate: Int64?
        public var cancellationDate: Int64?
        public var webOrderLineItemId: Int64?
        public var quantity: Int64 = 1

        public init(
            productId: String, transactionId: String, originalTransactionId: String? = nil, purchaseDate: Int64,
            expiresDate: Int64? = nil, cancellationDate: Int64? = nil, webOrderLineItemId: Int64? = nil
        ) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.cancellationDate = cancellationDate
            self.webOrderLineItemId = webOrderLineItemId
        }
    }

    public var receiptType: String
    public var bundleId: String
    public var creationDate: Int64
    public var purchases: [Purchase]

    public init(receiptType: String = "Production", bundleId: String, creationDate: Int64, purchases: [Purchase] = []) {
        self.receiptType = receiptType
        self.bundleId = bundleId
        self.creationDate = creationDate
        self.purchases = purchases
    }

    /// The payload's DER (what the PKCS#7 container signs).
    public var payload: [UInt8] {
        var attributes: [[UInt8]] = [
            Self.attribute(0, Self.utf8(receiptType)), Self.attribute(2, Self.utf8(bundleId)),
            Self.attribute(3, Self.utf8("1")), Self.attribute(12, Self.date(creationDate)),
            Self.attribute(19, Self.utf8("1.0")),
        ]
        for purchase in purchases {
            var fields: [[UInt8]] = [
                Self.attribute(1701, Self.integer(purchase.quantity)), Self.attribute(1702, Self.utf8(purchase.productId)),
                Self.attribute(1703, Self.utf8(purchase.transactionId)),
                Self.attribute(1705, Self.utf8(purchase.originalTransactionId ?? purchase.transactionId)),
                Self.attribute(1704, Self.date(purchase.purchaseDate)), Self.attribute(1706, Self.date(purchase.purchaseDate)),
            ]
            if let expires = purchase.expiresDate { fields.append(Self.attribute(1708, Self.date(expires))) }
            fields.append(Self.attribute(1712, purchase.cancellationDate.map(Self.date) ?? Self.tlv(0x16, [])))
            if let id = purchase.webOrderLineItemId { fields.append(Self.attribute(1711, Self.integer(id))) }
            attributes.append(Self.attribute(17, Self.tlv(0x31, fields.flatMap { $0 })))
        }
        return Self.tlv(0x31, attributes.flatMap { $0 })
    }

    /// The base64 receipt, signed by `ca`'s leaf.
    public func signed(by ca: TestCertificateAuthority) throws -> String {
        Base64.encode(try PKCS7.sign(payload, signer: ca.leaf, key: ca.leafKey, certificates: [ca.leaf, ca.intermediate]))
    }

    // MARK: - DER

    public static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var bytes: [UInt8] = []
            var n = content.count
            while n > 0 {
                bytes.insert(UInt8(n & 0xFF), at: 0)
                n >>= 8
            }
            length = [0x80 | UInt8(bytes.count)] + bytes
        }
        return [tag] + length + content
    }

    public static func integer(_ value: Int64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian, Array.init)
        while bytes.count > 1, (bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0) {
            bytes.removeFirst()
        }
        return tlv(0x02, bytes)
    }

    static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }

    /// An IA5String RFC 3339 date, as receipts write them.
    static func date(_ milliseconds: Int64) -> [UInt8] {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        let text = formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds / 1_000)))
        return tlv(0x16, Array(text.utf8))
    }

    static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }
}
