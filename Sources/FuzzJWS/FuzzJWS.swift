import AppStore
import EntitledCrypto
import Foundation

/// One fuzz input through the parsing path the verifier runs before any signature check: JWS
/// splitting and base64url, the header reader, the nesting scan, `JSONDecoder` on the payload, and
/// DER parsing of whatever `x5c` holds. Any input must end in a value or a typed error, never a crash;
/// and wherever `TapeJSONDecoder` answers, it must answer what `JSONDecoder` answers.
func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    _ = JSONNestingScan.nestingDepth(of: bytes, limit: 32)
    let raw = Array(bytes)
    agree(JWSTransactionDecodedPayload.self, raw)
    agree(ResponseBodyV2DecodedPayload.self, raw)
    agree(RawJSON.self, raw)
    _ = StrictJSONReader.parse(bytes, depthLimit: 16)
    _ = Base64.decode(utf8: bytes, url: true)
    _ = Base64.decode(utf8: bytes, url: false)
    guard let jws = try? CompactJWS.parse(utf8: bytes) else { return }
    _ = jws.algorithm
    if let chain = jws.certificateChain {
        for entry in chain.prefix(4) {
            if let der = Base64.decode(entry) { _ = try? X509Certificate(der: der) }
        }
    }
    _ = try? JSONDecoder().decode(FuzzPayload.self, from: Data(jws.payload))
    agree(FuzzPayload.self, jws.payload)
    agree(JWSTransactionDecodedPayload.self, jws.payload)
    agree(JWSRenewalInfoDecodedPayload.self, jws.payload)
    agree(ResponseBodyV2DecodedPayload.self, jws.payload)
    _ = ECDSASignature.rawFromDER(jws.signature)
    _ = ECDSASignature.derFromRaw(jws.signature)
}

/// Crashes (a finding) when the fast decoder answers and Foundation answers otherwise.
func agree<T: Decodable & Equatable>(_ type: T.Type, _ bytes: [UInt8]) {
    guard let fast = TapeJSONDecoder.decodeWithoutFallback(type, from: bytes) else { return }
    guard let foundation = try? JSONDecoder().decode(type, from: Data(bytes)), foundation == fast else {
        fatalError("TapeJSONDecoder and JSONDecoder disagree on \(T.self)")
    }
}

/// A payload shape with the kinds of fields the real models have (strings, integers, nesting).
private struct FuzzPayload: Decodable, Equatable {
    struct Inner: Decodable, Equatable {
        var environment: String?
        var bundleId: String?
        var appAppleId: Int64?
        var signedTransactionInfo: String?
    }
    var notificationType: String?
    var signedDate: Int64?
    var price: Double?
    var data: Inner?
    var items: [Inner]?
}

#if FUZZING
    /// libFuzzer's driver, linked in by `-sanitize=fuzzer`. Called from `main` because SwiftPM points
    /// an executable's `main` at the module's own entry point, so libFuzzer's `main` cannot be used.
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// libFuzzer's per-input callback (libFuzzer's own objects reference it by name).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzJWSTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        fuzzOne(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
        return 0
    }

    @main
    enum FuzzJWSMain {
        static func main() {
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzJWSTestOneInput(data, size) })
        }
    }
#else
    /// Without the fuzzer: runs each file named on the command line (a corpus or a crash reproducer)
    /// through the same function, so the target builds and runs as a plain executable.
    @main
    enum FuzzJWSMain {
        static func main() {
            var count = 0
            for path in CommandLine.arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    FileHandle.standardError.write(Data("FuzzJWS: no such file \(path)\n".utf8))
                    exit(2)
                }
                let files =
                    isDirectory.boolValue
                    ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                    : [path]
                for file in files {
                    guard let data = FileManager.default.contents(atPath: file) else { continue }
                    data.withUnsafeBytes { fuzzOne($0) }
                    count += 1
                }
            }
            print("FuzzJWS: ran \(count) inputs")
        }
    }
#endif
