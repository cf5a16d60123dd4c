import AppStore
import EntitledCrypto
import Foundation
import FuzzSupport

/// One fuzz input through everything that reads an app receipt before trusting it: the DER reader,
/// the PKCS#7 framing, the receipt payload (as framing content and as a bare payload), the legacy
/// transaction receipt reader, and OpenSSL's PKCS#7 parse and signature check. Any input must end
/// in a value or a typed error, never a crash.
func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    let raw = Array(bytes)
    if let element = try? DERReader.single(raw), element.isConstructed {
        _ = try? element.children()
        _ = try? element.octets()
    }
    _ = try? AppReceipt.parse(payload: raw)
    if let decoded = try? ReceiptVerifier.decode(der: raw) {
        _ = decoded.receipt.verifyReceiptResponse
        _ = decoded.receipt.transactionIds
    }
    _ = LegacyTransactionReceipt.transactionId(decoded: raw)
    _ = try? PKCS7.verifySignature(der: raw)
}

@main
enum FuzzReceiptMain {
    static func main() { FuzzMain.run("FuzzReceipt", fuzzOne) }
}
