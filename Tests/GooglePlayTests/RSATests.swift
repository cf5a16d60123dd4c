import EntitledCrypto
import Foundation
import GooglePlay
import Testing

@Suite struct RSATests {
    @Test func signatureVerifiesWithTheMatchingKeyOnly() throws {
        let message = Array("header.claims".utf8)
        let signature = try TestKeys.google.rs256Signature(for: message)
        #expect(signature.count == 256)
        #expect(try TestKeys.google.publicKey.isValidRS256Signature(signature, for: message))
        #expect(try !TestKeys.other.publicKey.isValidRS256Signature(signature, for: message))
        #expect(try !TestKeys.google.publicKey.isValidRS256Signature(signature, for: Array("header.claimz".utf8)))
        var flipped = signature
        flipped[10] ^= 1
        #expect(try !TestKeys.google.publicKey.isValidRS256Signature(flipped, for: message))
        #expect(try !TestKeys.google.publicKey.isValidRS256Signature([UInt8](), for: message))
    }

    @Test func jwkModulusAndExponentRebuildTheSameKey() throws {
        let key = try TestKeys.google.publicKey
        #expect(key.exponent == [0x01, 0x00, 0x01])
        #expect(key.modulus.count == 256)
        let rebuilt = try RSAPublicKey(modulus: key.modulus, exponent: key.exponent)
        #expect(rebuilt == key)
        // A leading zero byte (some encoders add one) changes nothing.
        #expect(try RSAPublicKey(modulus: [0] + key.modulus, exponent: key.exponent) == key)
    }

    @Test func weakOrBrokenKeysAreRefused() {
        // A 1024-bit modulus (128 bytes with the top bit set).
        #expect(throws: CryptoError(.invalidInput, "")) { try RSAPublicKey(modulus: [0x80] + [UInt8](repeating: 1, count: 127), exponent: [1, 0, 1]) }
        #expect(throws: CryptoError(.invalidInput, "")) { try RSAPublicKey(modulus: [], exponent: [1, 0, 1]) }
        #expect(throws: CryptoError(.invalidInput, "")) { try RSAPublicKey(subjectPublicKeyInfo: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(throws: CryptoError(.invalidInput, "")) { try RSAPrivateKey(bits: 1024) }
        #expect(throws: CryptoError(.invalidInput, "")) { try RSAPrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
    }

    @Test func pemRoundTripAndECKeysRefused() throws {
        let pem = try TestKeys.serviceAccount.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let back = try RSAPrivateKey(pem: pem)
        #expect(try back.publicKey == TestKeys.serviceAccount.publicKey)
        let ec = try P256PrivateKey().pkcs8PEM()
        #expect(throws: CryptoError(.invalidInput, "")) { try RSAPrivateKey(pem: ec) }
    }
}
