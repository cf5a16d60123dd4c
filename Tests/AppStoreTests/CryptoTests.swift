import AppStoreTesting
import EntitledCrypto
import Foundation
import Testing

@Suite("EntitledCrypto")
struct CryptoTests {
    @Test func sha256KnownAnswer() {
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash([UInt8]()).first == 0xe3)
    }

    @Test func hmacRFC4231Case2() throws {
        let mac = try HMACSHA256.authenticationCode(
            for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(Hex.encode(mac)
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // The empty key is legal.
        #expect(try HMACSHA256.authenticationCode(for: [1, 2, 3], key: [UInt8]()).count == 32)
    }

    @Test(arguments: [
        ([] as [UInt8], "", ""), ([0x00], "00", "00"), ([0x0f, 0xa0], "0fa0", "0F:A0"),
        ([0xde, 0xad, 0xbe, 0xef], "deadbeef", "DE:AD:BE:EF"),
    ])
    func hexEncodesAndDecodes(bytes: [UInt8], lower: String, fingerprint: String) {
        #expect(Hex.encode(bytes) == lower)
        #expect(Hex.encode(bytes, uppercase: true, separator: ":") == fingerprint)
        #expect(Hex.decode(lower) == bytes)
        #expect(Hex.decode(lower.uppercased()) == bytes)
    }

    @Test(arguments: ["0", "abc", "0g", "zz", "0x00", " 00", "00:11"])
    func hexRejectsWhatIsNotHex(_ text: String) {
        #expect(Hex.decode(text) == nil)
    }

    @Test func fingerprintIsColonSeparatedUppercaseHexOfTheDigest() {
        #expect(SHA256.fingerprint(Array("abc".utf8)) == "BA:78:16:BF:8F:01:CF:EA:41:41:40:DE:5D:AE:22:23:B0:03:61:A3:96:17:7A:9C:B4:10:FF:61:F2:00:15:AD")
    }

    /// Crypto codes look like every other code (they were camelCase: `invalidInput`, `openSSL`, `invalidOCSPResponse`).
    @Test func cryptoCodesAreScreamingSnake() {
        #expect(CryptoError.Code.all.map(\.rawValue) == ["INVALID_INPUT", "OPENSSL_ERROR", "INVALID_OCSP_RESPONSE"])
        for code in CryptoError.Code.all {
            #expect(code.rawValue.wholeMatch(of: /[A-Z][A-Z0-9]*(_[A-Z0-9]+)*/) != nil, "\(code)")
        }
        #expect(CryptoError(.invalidInput, "x").description == "INVALID_INPUT: x")
    }

    @Test func constantTimeCompare() {
        #expect(ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(ConstantTime.equals([UInt8](), [UInt8]()))
    }

    @Test(arguments: 0..<40)
    func base64RoundTripsAgainstFoundation(length: Int) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let standard = Base64.encode(bytes)
        #expect(standard == Data(bytes).base64EncodedString())
        #expect(Base64.decode(standard) == bytes)
        let url = Base64.urlEncode(bytes)
        #expect(!url.contains("=") && !url.contains("+") && !url.contains("/"))
        #expect(Base64.urlDecode(url) == bytes)
    }

    @Test func base64RejectsGarbage() {
        #expect(Base64.urlDecode("a") == nil)  // dangling single character
        #expect(Base64.urlDecode("ab+c") == nil)  // standard alphabet in url mode
        #expect(Base64.decode("ab c") == nil)
        #expect(Base64.decode("QQ==") == [0x41])
        #expect(Base64.decode("QR==") == nil)  // non-zero unused bits: not canonical
        #expect(Base64.urlDecode("") == [])
    }

    @Test func es256SignVerifyAndTamper() throws {
        let key = try P256PrivateKey()
        let message = Array("header.payload".utf8)
        let signature = try key.es256Signature(for: message)
        #expect(signature.count == 64)
        let publicKey = try key.publicKey
        #expect(publicKey.isValidES256Signature(raw: signature, for: message))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!publicKey.isValidES256Signature(raw: flipped, for: message))
        #expect(!publicKey.isValidES256Signature(raw: signature, for: Array("header.payloaD".utf8)))
        #expect(!publicKey.isValidES256Signature(raw: Array(signature.prefix(63)), for: message))
        #expect(!publicKey.isValidES256Signature(raw: [UInt8](repeating: 0, count: 64), for: message))
        let other = try P256PrivateKey().publicKey
        #expect(!other.isValidES256Signature(raw: signature, for: message))
    }

    @Test func rawAndDERSignaturesConvert() throws {
        let key = try P256PrivateKey()
        for index in 0..<50 {
            let message = Array("message \(index)".utf8)
            let der = try key.signature(der: message)
            let raw = try #require(ECDSASignature.rawFromDER(der))
            #expect(ECDSASignature.derFromRaw(raw) == der)
            #expect(try key.publicKey.isValidSignature(der: der, for: message))
        }
        // Leading zeros and high bits: r = 0x00…01, s = 0xFF….
        let raw = [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0xFF, count: 32)
        let der = try #require(ECDSASignature.derFromRaw(raw))
        #expect(der.prefix(5) == [0x30, 0x26, 0x02, 0x01, 0x01])
        #expect(ECDSASignature.rawFromDER(der) == raw)
        #expect(ECDSASignature.rawFromDER([0x30, 0x03, 0x02, 0x01, 0x01]) == nil)
    }

    @Test func pemAndPKCS8RoundTrip() throws {
        let key = try P256PrivateKey()
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let again = try P256PrivateKey(pem: pem)
        #expect(try again.publicKey == key.publicKey)
        let publicPEM = try key.publicKey.pem
        #expect(try P256PublicKey(pem: publicPEM) == key.publicKey)
        #expect(throws: CryptoError.self) { try P256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func readsApplesTestSigningKey() throws {
        let url = AppleFixturePaths.root.appendingPathComponent(
            "app-store-server-library-python/tests/resources/certs/testSigningKey.p8")
        let pem = try String(contentsOf: url, encoding: .utf8)
        let key = try P256PrivateKey(pem: pem)
        let signature = try key.es256Signature(for: [1, 2, 3])
        #expect(try key.publicKey.isValidES256Signature(raw: signature, for: [1, 2, 3] as [UInt8]))
    }

    @Test func mintedChainHasExpectedFields() throws {
        let ca = try TestCertificateAuthority()
        #expect(ca.root.subject.contains("CN=Test Root CA"))
        #expect(ca.intermediate.issuer == ca.root.subject)
        #expect(ca.leaf.issuer == ca.intermediate.subject)
        #expect(ca.leaf.notBefore == 1_609_459_200 && ca.leaf.notAfter == 2_177_452_800)
        #expect(ca.leaf.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        #expect(ca.leaf.extensionValue(oid: "1.2.840.113635.100.6.11.1") == [0x05, 0x00])
        #expect(!ca.leaf.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(ca.intermediate.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(ca.root.isCertificateAuthority && ca.intermediate.isCertificateAuthority && !ca.leaf.isCertificateAuthority)
        #expect(ca.leaf.isSigned(by: ca.intermediate))
        #expect(ca.intermediate.isSigned(by: ca.root))
        #expect(ca.root.isSigned(by: ca.root))
        #expect(!ca.leaf.isSigned(by: ca.root))
        #expect(try ca.leaf.p256PublicKey() == ca.leafKey.publicKey)
        #expect(try X509Certificate(der: ca.leaf.derBytes) == ca.leaf)
        #expect(try X509Certificate(pem: ca.leaf.pem) == ca.leaf)
    }

    @Test func certificateParsingIsStrict() throws {
        let ca = try TestCertificateAuthority()
        #expect(throws: CryptoError.self) { try X509Certificate(der: Array("abc".utf8)) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: [UInt8]()) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: ca.leaf.derBytes + [0]) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: Array(ca.leaf.derBytes.dropLast())) }
    }

    @Test func chainVerificationAtAGivenTime() throws {
        let ca = try TestCertificateAuthority()
        let store = try X509TrustStore(roots: [ca.root])
        let inside: Int64 = 1_761_962_975
        let chain = try store.verify(leaf: ca.leaf, intermediates: [ca.intermediate], at: inside).get()
        #expect(chain == [ca.leaf, ca.intermediate, ca.root])
        guard case .failure(.expired) = store.verify(leaf: ca.leaf, intermediates: [ca.intermediate], at: 2_280_946_846)
        else { Issue.record("expected expiry"); return }
        guard case .failure(.expired) = store.verify(leaf: ca.leaf, intermediates: [ca.intermediate], at: 1_500_000_000)
        else { Issue.record("expected not yet valid"); return }
        guard case .failure(.untrusted) = store.verify(leaf: ca.leaf, intermediates: [], at: inside)
        else { Issue.record("expected missing intermediate"); return }
        let other = try TestCertificateAuthority(options: .init(name: "Other"))
        let otherStore = try X509TrustStore(roots: [other.root])
        guard case .failure(.untrusted) = otherStore.verify(leaf: ca.leaf, intermediates: [ca.intermediate], at: inside)
        else { Issue.record("expected untrusted"); return }
    }

    @Test func ocspRequestEncodes() throws {
        let ca = try TestCertificateAuthority(options: .init(ocspResponderURL: "http://127.0.0.1:1/"))
        #expect(ca.leaf.ocspResponderURLs == ["http://127.0.0.1:1/"])
        let request = try OCSP.requestDER(for: ca.leaf, issuer: ca.intermediate)
        #expect(request.first == 0x30 && request.count > 40)
        #expect(throws: CryptoError.self) {
            try OCSP.status(inResponse: [0x30, 0x00], for: ca.leaf, issuer: ca.intermediate, trustedRoots: [ca.root], at: 0)
        }
    }
}
