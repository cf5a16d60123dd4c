import AppStore
import EntitledCrypto
import Foundation
import HTTPClient

/// Where an S3-compatible store is and how its objects are addressed.
///
/// Without an `endpoint` it is AWS: `https://BUCKET.s3.REGION.amazonaws.com/KEY` (virtual-host
/// style; path style on `s3.REGION.amazonaws.com` for a bucket with dots, which a wildcard
/// certificate does not cover). With one (MinIO, R2, GCS interop, moto) it is path style:
/// `ENDPOINT/BUCKET/KEY`, which every S3-compatible store serves.
public struct S3Location: Sendable, Hashable {
    /// `scheme://host[:port]` of an S3-compatible store; nil for AWS.
    public var endpoint: URL?
    /// The signing region (`us-east-1` for most non-AWS stores; R2 takes `auto`).
    public var region: String
    public var bucket: String

    public init(endpoint: URL?, region: String, bucket: String) {
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
    }

    /// Whether the bucket is in the path rather than the host name.
    public var pathStyle: Bool { endpoint != nil || bucket.contains(".") }

    /// The scheme, the `Host` header and the encoded path of `key` (nil: the bucket itself).
    func address(key: String?) -> (scheme: String, host: String, encodedPath: String) {
        let keyPath = key.map { "/" + $0 } ?? "/"
        if let endpoint {
            let port = endpoint.port.map { ":\($0)" } ?? ""
            return (endpoint.scheme ?? "https", (endpoint.host ?? "") + port, SigV4Signer.encodePath("/\(bucket)" + (key.map { "/" + $0 } ?? "")))
        }
        let regional = "s3.\(region).amazonaws.com"
        if pathStyle { return ("https", regional, SigV4Signer.encodePath("/\(bucket)" + (key.map { "/" + $0 } ?? ""))) }
        return ("https", "\(bucket).\(regional)", SigV4Signer.encodePath(keyPath))
    }
}

/// An S3 client for exports: PutObject, multipart uploads and GetObject, signed with SigV4 over
/// the project's ``OutboundHTTP``, retrying 5xx, 429 and network failures with ``RetryPolicy``.
public struct S3Client: Sendable {
    public var location: S3Location
    public var signer: SigV4Signer
    public var http: any OutboundHTTP
    public var clock: any EpochClock
    public var retry: RetryPolicy
    public var sleeper: any Sleeper
    public var random: @Sendable () -> Double
    /// One request's deadline (a part of ``S3Uploader/partSize`` bytes must fit in it).
    public var timeoutSeconds: Double

    public init(
        location: S3Location, credentials: AWSCredentials, http: any OutboundHTTP, clock: any EpochClock,
        retry: RetryPolicy = RetryPolicy(), sleeper: any Sleeper = TaskSleeper(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }, timeoutSeconds: Double = 300
    ) {
        self.location = location
        self.signer = SigV4Signer(credentials: credentials, region: location.region)
        self.http = http
        self.clock = clock
        self.retry = retry
        self.sleeper = sleeper
        self.random = random
        self.timeoutSeconds = timeoutSeconds
    }

    /// PutObject: `body` as `key`, whole.
    public func putObject(key: String, body: [UInt8], contentType: String) async throws(ExportError) {
        try ObjectKey.validate(key)
        _ = try await send("PUT", key: key, headers: ["Content-Type": contentType], body: body)
    }

    /// GetObject: the bytes of `key` (bounded by the transport's response cap).
    public func getObject(key: String) async throws(ExportError) -> [UInt8] {
        try ObjectKey.validate(key)
        return try await send("GET", key: key).body
    }

    /// CreateMultipartUpload: the new upload's id.
    public func createMultipartUpload(key: String, contentType: String) async throws(ExportError) -> String {
        try ObjectKey.validate(key)
        let response = try await send("POST", key: key, query: [("uploads", "")], headers: ["Content-Type": contentType])
        guard let id = S3XML.element("UploadId", in: response.body), !id.isEmpty else {
            throw ExportError(.invalidResponse, "CreateMultipartUpload answered without an UploadId", status: response.status)
        }
        return id
    }

    /// UploadPart: part `number` (1-based) of upload `uploadId`; its ETag.
    public func uploadPart(key: String, uploadId: String, number: Int, body: [UInt8]) async throws(ExportError) -> String {
        // A type of its own, or the transport would label the bytes a form, which some stores parse.
        let response = try await send(
            "PUT", key: key, query: [("partNumber", String(number)), ("uploadId", uploadId)],
            headers: ["Content-Type": "application/octet-stream"], body: body)
        guard let etag = response.headers["etag"], !etag.isEmpty else {
            throw ExportError(.invalidResponse, "UploadPart \(number) answered without an ETag", status: response.status)
        }
        return etag
    }

    /// CompleteMultipartUpload: the parts, in order, become the object.
    public func completeMultipartUpload(key: String, uploadId: String, etags: [String]) async throws(ExportError) {
        var xml = "<CompleteMultipartUpload>"
        for (index, etag) in etags.enumerated() {
            xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(S3XML.escape(etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await send(
            "POST", key: key, query: [("uploadId", uploadId)], headers: ["Content-Type": "application/xml"], body: Array(xml.utf8))
        // S3 may answer 200 and still fail the completion, with an <Error> body.
        if let code = S3XML.element("Code", in: response.body), S3XML.element("Error", in: response.body) != nil {
            throw ExportError(.unavailable, "CompleteMultipartUpload failed", status: response.status, storeCode: code)
        }
    }

    /// AbortMultipartUpload: the store forgets the upload's parts.
    public func abortMultipartUpload(key: String, uploadId: String) async throws(ExportError) {
        _ = try await send("DELETE", key: key, query: [("uploadId", uploadId)])
    }

    /// One signed request, re-signed for each attempt (a retry later than the signature's
    /// 15-minute window is still accepted) and retried while the failure is transient.
    func send(
        _ method: String, key: String?, query: [(String, String)] = [], headers: [String: String] = [:], body: [UInt8] = []
    ) async throws(ExportError) -> OutboundResponse {
        let address = location.address(key: key)
        let queryText = SigV4Signer.canonicalQuery(query)
        guard let url = URL(string: "\(address.scheme)://\(address.host)\(address.encodedPath)" + (queryText.isEmpty ? "" : "?" + queryText))
        else { throw ExportError(.invalidRequest, "cannot build the URL of \(key ?? "the bucket")") }
        let payloadHash = Hex.encode(SHA256.hash(body))
        var attempt = 0
        while true {
            attempt += 1
            var toSign = headers
            toSign["Host"] = address.host
            let date = Date(timeIntervalSince1970: Double(clock.nowMilliseconds()) / 1000)
            let signed = try signer.sign(
                SigV4Signer.Request(method: method, encodedPath: address.encodedPath, query: query, headers: toSign, payloadHash: payloadHash),
                at: date)
            let failure: ExportError
            var retryAfter: Int64?
            do {
                let response = try await http.send(
                    OutboundRequest(method: method, url: url, headers: signed, body: body, timeoutSeconds: timeoutSeconds))
                if (200..<300).contains(response.status) { return response }
                let storeCode = S3XML.element("Code", in: response.body)
                let operation = "\(method) \(key ?? location.bucket)"
                guard response.status >= 500 || response.status == 429 else {
                    throw ExportError(.refused, "\(operation) was refused", status: response.status, storeCode: storeCode)
                }
                failure = ExportError(.unavailable, "\(operation) failed", status: response.status, storeCode: storeCode)
                retryAfter = retry.retryAfterMilliseconds(response.headers["retry-after"])
            } catch let error as ExportError {
                throw error
            } catch let error as OutboundHTTPError {
                if error.kind == .invalidRequest || error.kind == .cancelled {
                    throw ExportError(.invalidRequest, "\(method) \(key ?? location.bucket): \(error.message)")
                }
                failure = ExportError(.unavailable, "\(method) \(key ?? location.bucket): \(error.message)")
            } catch {
                failure = ExportError(.unavailable, "\(method) \(key ?? location.bucket): \(error)")
            }
            guard await retry.waitBeforeRetry(after: attempt, retryable: true, retryAfterMilliseconds: retryAfter, sleeper: sleeper, random: random)
            else { throw failure }
        }
    }
}

/// The few elements of S3's XML answers the client reads; no general XML parser is needed for
/// flat, store-generated documents.
enum S3XML {
    /// The text of the first `<name>` element in `body`, entities decoded.
    static func element(_ name: String, in body: [UInt8]) -> String? {
        let text = String(decoding: body.prefix(1 << 20), as: UTF8.self)
        guard let open = text.range(of: "<\(name)>"), let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        let start = open.upperBound
        return unescape(String(text[start..<close.lowerBound]))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&#34;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }
}
