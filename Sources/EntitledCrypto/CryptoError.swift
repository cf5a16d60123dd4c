internal import COpenSSL

/// A failure in a cryptographic operation.
///
/// A struct with an extensible ``Code`` so codes can be added without breaking callers; equality
/// compares the code only, which keeps test assertions simple.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable failure category, in the SCREAMING_SNAKE style of every other
    /// code (verification, storage, HTTP).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The input bytes are not what the operation expects (bad DER, PEM, base64, key type, length).
        public static let invalidInput = Code(rawValue: "INVALID_INPUT")
        /// OpenSSL reported an internal failure (allocation, provider, encoding).
        public static let openSSL = Code(rawValue: "OPENSSL_ERROR")
        /// An OCSP response was unusable (not successful, not signed by the issuer, stale, wrong certificate).
        public static let invalidOCSPResponse = Code(rawValue: "INVALID_OCSP_RESPONSE")

        /// Every code this module produces.
        public static let all: [Code] = [.invalidInput, .openSSL, .invalidOCSPResponse]
    }

    /// The failure category.
    public var code: Code
    /// A human-readable explanation; may include OpenSSL's own error text. Not for clients.
    public var message: String
    /// Where the error was raised.
    public var file: String
    /// Where the error was raised.
    public var line: Int

    /// An error with `code`, explained by `message`, recording where it was raised.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool { lhs.code == rhs.code }

    public var description: String { "\(code): \(message)" }
}

/// The one doorway for OpenSSL calls: every return code and every returned pointer is checked here,
/// and a failure drains OpenSSL's thread-local error queue into the thrown error so that a stale
/// entry never leaks into a later, unrelated call.
enum OpenSSL {
    /// Checks a call whose success value is 1 (the common OpenSSL convention).
    @inline(__always)
    static func call(
        _ what: StaticString, _ code: CryptoError.Code = .openSSL, file: String = #fileID, line: Int = #line,
        _ body: () -> Int32
    ) throws(CryptoError) {
        let result = body()
        guard result == 1 else {
            throw CryptoError(code, "\(what) failed (\(result))\(drainErrors())", file: file, line: line)
        }
    }

    /// Checks a call that returns an owned or borrowed pointer; nil is the failure.
    @inline(__always)
    static func pointer<T>(
        _ what: StaticString, _ code: CryptoError.Code = .openSSL, file: String = #fileID, line: Int = #line,
        _ body: () -> T?
    ) throws(CryptoError) -> T {
        guard let value = body() else {
            throw CryptoError(code, "\(what) failed\(drainErrors())", file: file, line: line)
        }
        return value
    }

    /// Checks a call whose failure is a negative (or zero when `allowZero` is false) length.
    @inline(__always)
    static func length(
        _ what: StaticString, _ code: CryptoError.Code = .openSSL, allowZero: Bool = false,
        file: String = #fileID, line: Int = #line, _ body: () -> Int32
    ) throws(CryptoError) -> Int {
        let result = body()
        guard result > 0 || (allowZero && result == 0) else {
            throw CryptoError(code, "\(what) failed (\(result))\(drainErrors())", file: file, line: line)
        }
        return Int(result)
    }

    /// Empties the error queue and returns its entries as text (prefixed with ": "), or "" when empty.
    static func drainErrors() -> String {
        var parts: [String] = []
        while true {
            let error = ERR_get_error()
            if error == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(error, &buffer, buffer.count)
            if parts.count < 4 { parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        }
        return parts.isEmpty ? "" : ": " + parts.joined(separator: "; ")
    }

    /// Clears the error queue after a call whose failure is an expected answer (e.g. a bad signature),
    /// so the entry is not mistaken for the cause of a later failure.
    @inline(__always)
    static func clearErrors() { ERR_clear_error() }
}

/// Owns a memory BIO for the duration of a closure.
final class MemoryBIO {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        pointer = try OpenSSL.pointer("BIO_new") { BIO_new(BIO_s_mem()) }
    }

    /// A read-only BIO over `bytes`; the bytes must outlive the BIO, so callers use it within `withUnsafeBytes`.
    init(readOnly bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        pointer = try OpenSSL.pointer("BIO_new_mem_buf") { BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) }
    }

    deinit { BIO_free(pointer) }

    /// Everything written so far.
    var contents: [UInt8] {
        var data: UnsafeMutablePointer<CChar>? = nil
        let count = COpenSSL_BIO_get_mem_data(pointer, &data)
        guard count > 0, let data else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: count))
    }
}
