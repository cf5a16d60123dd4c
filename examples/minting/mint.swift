// Mints an Entitled customer token (JWT HS256) with Foundation.
//
//     ENTITLED_CUSTOMER_TOKEN_SECRET=… swift mint.swift USER_ID [SECONDS]
//
// The secret is `customerTokens.secret` of the server's configuration; `sub` is the appUserId (in
// Unicode NFC), `exp` the expiry in seconds, at most `customerTokens.maxLifetimeSeconds` ahead.
// CryptoKit (Apple platforms) or swift-crypto's `Crypto` (Linux: `import Crypto`, the same API)
// computes the HMAC; where neither is at hand (this file runs as a script on Linux), a small
// SHA-256 below does.
import Foundation
#if canImport(CryptoKit)
import CryptoKit
#endif

func base64URL(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

func hmacSHA256(key: Data, message: Data) -> Data {
    #if canImport(CryptoKit)
    return Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    #else
    var block = key.count > 64 ? sha256(key) : key
    block.append(Data(repeating: 0, count: 64 - block.count))
    let inner = sha256(Data(block.map { $0 ^ 0x36 }) + message)
    return sha256(Data(block.map { $0 ^ 0x5c }) + inner)
    #endif
}

func mint(secret: String, appUserId: String, lifetimeSeconds: Int = 3600) throws -> String {
    let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
    let claims: [String: Any] = ["sub": appUserId, "exp": Int(Date().timeIntervalSince1970) + lifetimeSeconds]
    let payload = base64URL(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
    let signature = hmacSHA256(key: Data(secret.utf8), message: Data("\(header).\(payload)".utf8))
    return "\(header).\(payload).\(base64URL(signature))"
}

#if !canImport(CryptoKit)
/// FIPS 180-4 SHA-256, for platforms without CryptoKit in this dependency-free example.
func sha256(_ message: Data) -> Data {
    let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]
    var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    var bytes = [UInt8](message)
    let bitLength = UInt64(bytes.count) * 8
    bytes.append(0x80)
    while bytes.count % 64 != 56 { bytes.append(0) }
    bytes += (0..<8).map { UInt8(truncatingIfNeeded: bitLength >> (56 - 8 * UInt64($0))) }
    func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
    for chunk in stride(from: 0, to: bytes.count, by: 64) {
        var w = (0..<16).map { i in (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[chunk + 4 * i + $1]) } }
        for i in 16..<64 {
            let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w.append(w[i - 16] &+ s0 &+ w[i - 7] &+ s1)
        }
        var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
        for i in 0..<64 {
            let t1 = hh &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ k[i] &+ w[i]
            let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
            (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
        }
        for (i, value) in [a, b, c, d, e, f, g, hh].enumerated() { h[i] = h[i] &+ value }
    }
    return Data(h.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * UInt32($0))) } })
}
#endif

let arguments = CommandLine.arguments
guard arguments.count > 1, let secret = ProcessInfo.processInfo.environment["ENTITLED_CUSTOMER_TOKEN_SECRET"] else {
    FileHandle.standardError.write(Data("usage: ENTITLED_CUSTOMER_TOKEN_SECRET=… swift mint.swift USER_ID [SECONDS]\n".utf8))
    exit(2)
}
print(try mint(secret: secret, appUserId: arguments[1], lifetimeSeconds: arguments.count > 2 ? Int(arguments[2]) ?? 3600 : 3600))
