import Foundation
import JSONCoding

/// `entitled verify`'s engine: verifies signed App Store payloads, one per line, and renders each as one
/// line of JSON.
///
/// A line is a compact JWS or a JSON body `{"signedPayload": "…"}`. Its rendering is the payload as signed,
/// with `signedTransactionInfo`, `signedRenewalInfo` and `signedAppTransactionInfo` replaced by their own
/// verified payloads, keys sorted, and every `…Date` field in the whole milliseconds the verifier reads
/// (Xcode writes fractional ones); or `{"error": "<CODE>", "message": "…"}`. It works on generic JSON, so it
/// does not depend on the typed models.
///
/// Lines are independent: ``verifyLines(_:workers:write:)`` verifies them on several threads and writes
/// them in input order.
public struct SignedPayloadLines: Sendable {
    /// What a line holds.
    public enum Kind: String, CaseIterable, Sendable {
        /// Decided from the payload's keys (see ``SignedPayloadLines/detectKind(_:)``).
        case auto
        case notification, transaction, renewal
        case appTransaction = "app-transaction"
    }

    /// One rendered line.
    public struct Rendered: Sendable, Equatable {
        /// The JSON line, without its newline.
        public var json: [UInt8]
        /// False when it is an `{"error": …}` line.
        public var verified: Bool
    }

    /// The verifier; its mode must not be `.online` (lines are verified synchronously, without OCSP).
    public let verifier: SignedDataVerifier
    /// The kind of every line.
    public let kind: Kind

    /// Renders lines verified by `verifier`, which must not be in `.online` mode.
    public init(verifier: SignedDataVerifier, kind: Kind = .auto) {
        precondition(verifier.configuration.mode != .online, "lines are verified synchronously, without OCSP")
        self.verifier = verifier
        self.kind = kind
    }

    // MARK: - Many lines

    /// Verifies every line of `input` and hands the rendered lines (each with its newline) to `write`, in
    /// input order, one batch at a time on the calling thread. Blank lines are skipped. With `workers` > 1
    /// each batch is verified on that many threads.
    /// - Returns: whether every line verified.
    public func verifyLines(_ input: [UInt8], workers: Int, write: ([UInt8]) throws -> Void) rethrows -> Bool {
        let lines = Self.lineRanges(input)
        let workers = max(1, workers)
        // Large enough to keep every worker busy, small enough that output streams out.
        let batchSize = 256 * workers
        var allVerified = true
        var batchStart = 0
        while batchStart < lines.count {
            let batch = Array(lines[batchStart..<min(batchStart + batchSize, lines.count)])
            batchStart += batch.count
            var results = [Rendered?](repeating: nil, count: batch.count)
            results.withUnsafeMutableBufferPointer { buffer in
                let slots = Slots(buffer: buffer)
                input.withUnsafeBytes { bytes in
                    let source = Source(bytes: bytes)
                    if workers == 1 || batch.count == 1 {
                        for index in batch.indices { slots.set(index, render(line: source.slice(batch[index]))) }
                        return
                    }
                    DispatchQueue.concurrentPerform(iterations: min(workers, batch.count)) { worker in
                        // Interleaved shares: neighbouring lines cost about the same.
                        for index in stride(from: worker, to: batch.count, by: workers) {
                            slots.set(index, render(line: source.slice(batch[index])))
                        }
                    }
                }
            }
            var chunk: [UInt8] = []
            for case let result? in results {
                allVerified = allVerified && result.verified
                chunk += result.json
                chunk.append(UInt8(ascii: "\n"))
            }
            if !chunk.isEmpty { try write(chunk) }
        }
        return allVerified
    }

    /// The byte ranges of the lines of `input`, split at `\n`.
    static func lineRanges(_ input: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        for (index, byte) in input.enumerated() where byte == UInt8(ascii: "\n") {
            ranges.append(start..<index)
            start = index + 1
        }
        if start < input.count { ranges.append(start..<input.count) }
        return ranges
    }

    /// Result slots written by disjoint indices from several threads.
    private struct Slots: @unchecked Sendable {
        let buffer: UnsafeMutableBufferPointer<Rendered?>
        func set(_ index: Int, _ value: Rendered?) { buffer[index] = value }
    }

    /// The input, read (never written) by several threads.
    private struct Source: @unchecked Sendable {
        let bytes: UnsafeRawBufferPointer
        func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[range]) }
    }

    // MARK: - One line

    /// Verifies one line and renders it; nil when the line is blank.
    public func render(line: UnsafeRawBufferPointer) -> Rendered? {
        var trimmed = line[...]
        while let first = trimmed.first, Self.isWhitespace(first) { trimmed = trimmed.dropFirst() }
        while let last = trimmed.last, Self.isWhitespace(last) { trimmed = trimmed.dropLast() }
        if trimmed.isEmpty { return nil }
        var out: [UInt8] = []
        do {
            let object = try verify(line: UnsafeRawBufferPointer(rebasing: trimmed))
            JSONLineWriter.write(object, into: &out)
            return Rendered(json: out, verified: true)
        } catch {
            JSONLineWriter.write(.object([("error", .string(error.code.rawValue)), ("message", .string(error.message))]), into: &out)
            return Rendered(json: out, verified: false)
        }
    }

    /// Verifies one line and renders it; nil when the line is blank.
    public func render(line: String) -> Rendered? {
        var text = line
        return text.withUTF8 { render(line: UnsafeRawBufferPointer($0)) }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    /// The verified payload of one (trimmed) line, nested signed fields verified and in place.
    func verify(line: UnsafeRawBufferPointer) throws(VerificationError) -> StrictJSONValue {
        var token: String
        if line.first == UInt8(ascii: "{") {
            guard case .string(let signed)? = StrictJSONReader.parse(line, depthLimit: depthLimit)?["signedPayload"] else {
                throw VerificationError(.invalidJWTFormat, "a JSON line must be an object with a signedPayload string")
            }
            token = signed
        } else {
            token = String(decoding: line, as: UTF8.self)
        }
        var resolved = kind
        var object: StrictJSONValue?
        if kind == .auto {
            // The payload is parsed once: the verified payload JSON is exactly these bytes.
            let parsed = try payloadObject(CompactJWS.parse(token, limits: verifier.configuration.limits).payload)
            resolved = try Self.detectKind(parsed)
            object = parsed
        }
        let json = try verify(token, kind: resolved)
        var result: StrictJSONValue
        if let object { result = object } else { result = try payloadObject(json) }
        guard resolved == .notification else { return result }
        // Nested signed fields are separate JWS, each verified on its own.
        for (container, field, nestedKind) in [
            ("data", "signedTransactionInfo", Kind.transaction), ("data", "signedRenewalInfo", .renewal),
            ("appData", "signedAppTransactionInfo", .appTransaction),
        ] {
            guard case .object(var holder)? = result[container],
                let position = holder.firstIndex(where: { $0.0 == field }), case .string(let nested) = holder[position].1
            else { continue }
            holder[position].1 = try payloadObject(verify(nested, kind: nestedKind))
            result = result.replacing(container, with: .object(holder))
        }
        return result
    }

    private var depthLimit: Int { verifier.configuration.limits.maxJSONDepth + 1 }

    private func payloadObject(_ json: [UInt8]) throws(VerificationError) -> StrictJSONValue {
        guard let value = StrictJSONReader.parse(json, depthLimit: depthLimit), case .object = value else {
            throw VerificationError(.malformedPayload, "payload is not a JSON object")
        }
        return value
    }

    /// Guesses the kind from the (not yet verified) payload's keys: notificationType, transactionId,
    /// autoRenewStatus/autoRenewProductId/renewalDate, receiptType/appTransactionId; otherwise bundleId
    /// means a transaction, and originalTransactionId or environment renewal info.
    public static func detectKind(_ payload: StrictJSONValue) throws(VerificationError) -> Kind {
        func has(_ key: String) -> Bool { payload[key] != nil }
        if has("notificationType") { return .notification }
        if has("transactionId") { return .transaction }
        if has("autoRenewStatus") || has("autoRenewProductId") || has("renewalDate") { return .renewal }
        if has("receiptType") || has("appTransactionId") { return .appTransaction }
        // Minimal payloads (Apple's own test data has some): a bundleId means a transaction, since
        // renewal info is the one kind without it.
        if has("bundleId") { return .transaction }
        if has("originalTransactionId") || has("environment") { return .renewal }
        throw VerificationError(.malformedPayload, "cannot tell the payload kind from its keys; use --kind")
    }

    /// The signed payload JSON of `token`, verified as `kind`.
    private func verify(_ token: String, kind: Kind) throws(VerificationError) -> [UInt8] {
        switch kind {
        case .notification, .auto: try verifier.verifySynchronously(token, as: NotificationFields.self).payloadJSON
        case .transaction: try verifier.verifySynchronously(token, as: TransactionFields.self).payloadJSON
        case .renewal: try verifier.verifySynchronously(token, as: RenewalFields.self).payloadJSON
        case .appTransaction: try verifier.verifySynchronously(token, as: AppTransactionFields.self).payloadJSON
        }
    }
}

extension StrictJSONValue {
    /// This object with member `key`'s value replaced.
    fileprivate func replacing(_ key: String, with value: StrictJSONValue) -> StrictJSONValue {
        guard case .object(var members) = self, let index = members.firstIndex(where: { $0.0 == key }) else { return self }
        members[index].1 = value
        return .object(members)
    }
}

/// Compact JSON with sorted keys and unescaped slashes, as `JSONSerialization` writes with
/// `[.sortedKeys, .withoutEscapingSlashes]`; numbers keep their signed text, except `…Date` fields,
/// which are floored to whole milliseconds as ``EpochMilliseconds`` reads them.
enum JSONLineWriter {
    static func write(_ value: StrictJSONValue, key: String? = nil, into out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .number(let text):
            if let key, key.hasSuffix("Date"), text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }),
                let whole = EpochMilliseconds.floored(text)
            {
                out += Array(String(whole).utf8)
            } else {
                out += Array(text.utf8)
            }
        case .string(let text): string(text, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.0 < $1.0 }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                string(member.0, into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.1, key: member.0, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func string(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0..<0x20:
                out += Array("\\u00".utf8)
                out += [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// The few fields the verifier reads, per kind. Everything else passes through as JSON.

private struct AppFields: Decodable {
    var environment: AppStoreEnvironment?
    var bundleId: String?
    var appAppleId: Int64?
    var externalPurchaseId: String?
}

private struct NotificationFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    @EpochMilliseconds var signedDate: Int64?
    var data: AppFields?
    var summary: AppFields?
    var externalPurchaseToken: AppFields?
    var appData: AppFields?

    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
    private var app: AppFields? { data ?? summary ?? externalPurchaseToken ?? appData }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? {
        if let token = externalPurchaseToken, data == nil, summary == nil {
            // External purchase tokens carry no environment; Apple infers it from the id's prefix.
            return token.externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
        }
        return app?.environment
    }
    var verificationBundleId: String? { app?.bundleId }
    var verificationAppAppleId: Int64? { app?.appAppleId }
}

private struct TransactionFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    @EpochMilliseconds var signedDate: Int64?
    var environment: AppStoreEnvironment?
    var bundleId: String?
    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { environment }
    var verificationBundleId: String? { bundleId }
    var verificationAppAppleId: Int64? { nil }
}

private struct RenewalFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    @EpochMilliseconds var signedDate: Int64?
    var environment: AppStoreEnvironment?
    static var appIdentifierChecks: AppIdentifierChecks { [] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { environment }
    var verificationBundleId: String? { nil }
    var verificationAppAppleId: Int64? { nil }
}

private struct AppTransactionFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    @EpochMilliseconds var signedDate: Int64?
    @EpochMilliseconds var receiptCreationDate: Int64?
    var receiptType: AppStoreEnvironment?
    var bundleId: String?
    var appAppleId: Int64?
    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
    // Apple falls back to receiptCreationDate when an app transaction has no signedDate.
    var verificationSignedDate: Int64? { signedDate ?? receiptCreationDate }
    var verificationEnvironment: AppStoreEnvironment? { receiptType }
    var verificationBundleId: String? { bundleId }
    var verificationAppAppleId: Int64? { appAppleId }
}
