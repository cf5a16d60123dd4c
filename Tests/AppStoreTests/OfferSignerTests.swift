import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation
import Testing

/// Offer signatures made with Apple's own test signing key (`testSigningKey.p8`), checked the way
/// StoreKit and Apple's signature creators define them: the v1 string with OpenSSL, the JWS
/// headers and exactly Apple's claim sets.
struct OfferSignerTests {
    static func signer() throws -> (OfferSigner, P256PublicKey) {
        let pem = try String(
            contentsOf: AppleFixtures.pythonResources.appendingPathComponent("certs/testSigningKey.p8"), encoding: .utf8)
        let key = try P256PrivateKey(pem: pem)
        let credentials = ServerAPICredentials(bundleId: "bundleId", keyId: "keyId", issuerId: "issuerId", privateKey: key)
        return (OfferSigner(credentials: credentials), try key.publicKey)
    }

    static let fields = OfferSigner.V1Fields(
        productId: "productId", offerId: "offerId", appAccountToken: UUID(uuidString: "C9A0E11C-4B7F-4F43-8C55-5C3A8C3F6A11")!,
        nonce: UUID(uuidString: "2A1B8C5E-5F0B-4DF4-B6E4-1C3A0C1E9F02")!, timestamp: 1_698_148_900_000)

    /// `openssl dgst -sha256 -verify` over the documented string.
    static func opensslVerifies(message: String, derSignature: [UInt8], publicKeyPEM: String) throws -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("offer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(message.utf8).write(to: directory.appendingPathComponent("message"))
        try Data(derSignature).write(to: directory.appendingPathComponent("signature.der"))
        try publicKeyPEM.write(to: directory.appendingPathComponent("key.pem"), atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.currentDirectoryURL = directory
        process.arguments = ["dgst", "-sha256", "-verify", "key.pem", "-signature", "signature.der", "message"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func v1MessageIsTheDocumentedString() throws {
        let (signer, _) = try Self.signer()
        #expect(
            signer.v1Message(Self.fields)
                == "bundleId\u{2063}keyId\u{2063}productId\u{2063}offerId\u{2063}c9a0e11c-4b7f-4f43-8c55-5c3a8c3f6a11"
                + "\u{2063}2a1b8c5e-5f0b-4df4-b6e4-1c3a0c1e9f02\u{2063}1698148900000")
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func v1SignatureVerifiesWithOpenSSL() throws {
        let (signer, publicKey) = try Self.signer()
        let signed = try signer.promotionalV1(Self.fields)
        #expect(signed.keyId == "keyId")
        #expect(signed.nonce == "2a1b8c5e-5f0b-4df4-b6e4-1c3a0c1e9f02")
        #expect(signed.timestamp == 1_698_148_900_000)
        let der = try #require(Base64.decode(signed.signature))
        let message = signer.v1Message(Self.fields)
        #expect(try Self.opensslVerifies(message: message, derSignature: der, publicKeyPEM: publicKey.pem))
        #expect(publicKey.isValidSignature(der: der, for: Array(message.utf8)))
        // Another field (here the offer) does not verify: the signature binds every field.
        var other = Self.fields
        other.offerId = "otherOffer"
        #expect(try !Self.opensslVerifies(message: signer.v1Message(other), derSignature: der, publicKeyPEM: publicKey.pem))
    }

    /// The header and claims of `jws`, after checking its ES256 signature with `key`.
    static func verified(_ jws: String, key: P256PublicKey) throws -> (header: [String: Any], claims: [String: Any]) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let signature = try #require(Base64.urlDecode(parts[2]))
        #expect(key.isValidES256Signature(raw: signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        let headerBytes = try #require(Base64.urlDecode(parts[0]))
        let claimBytes = try #require(Base64.urlDecode(parts[1]))
        let header = try #require(try JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any])
        return (header, claims)
    }

    static let nonce = UUID(uuidString: "2A1B8C5E-5F0B-4DF4-B6E4-1C3A0C1E9F02")!

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [String?.some("transactionId"), nil])
    func promotionalJWSCarriesApplesClaims(transactionId: String?) throws {
        let (signer, publicKey) = try Self.signer()
        let jws = try signer.promotionalJWS(
            productId: "productId", offerId: "offerId", transactionId: transactionId, nonce: Self.nonce, issuedAtSeconds: 1_698_148_900)
        let (header, claims) = try Self.verified(jws, key: publicKey)
        #expect(header as NSDictionary == ["alg": "ES256", "kid": "keyId", "typ": "JWT"] as NSDictionary)
        var expected: [String: Any] = [
            "iss": "issuerId", "iat": 1_698_148_900, "aud": "promotional-offer", "bid": "bundleId",
            "nonce": "2a1b8c5e-5f0b-4df4-b6e4-1c3a0c1e9f02", "productId": "productId", "offerIdentifier": "offerId",
        ]
        if let transactionId { expected["transactionId"] = transactionId }
        #expect(claims as NSDictionary == expected as NSDictionary)
        #expect(claims["exp"] == nil)
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [true, false])
    func introductoryEligibilityJWSCarriesApplesClaims(allow: Bool) throws {
        let (signer, publicKey) = try Self.signer()
        let jws = try signer.introductoryEligibilityJWS(
            productId: "productId", allowIntroductoryOffer: allow, transactionId: "transactionId", nonce: Self.nonce,
            issuedAtSeconds: 1_698_148_900)
        let (header, claims) = try Self.verified(jws, key: publicKey)
        #expect(header as NSDictionary == ["alg": "ES256", "kid": "keyId", "typ": "JWT"] as NSDictionary)
        let expected: [String: Any] = [
            "iss": "issuerId", "iat": 1_698_148_900, "aud": "introductory-offer-eligibility", "bid": "bundleId",
            "nonce": "2a1b8c5e-5f0b-4df4-b6e4-1c3a0c1e9f02", "productId": "productId", "allowIntroductoryOffer": allow,
            "transactionId": "transactionId",
        ]
        #expect(claims as NSDictionary == expected as NSDictionary)
    }
}
