import Foundation

/// An error that renders itself as an RFC 9457 `application/problem+json` response.
public protocol HTTPResponseError: Error {
    /// The HTTP status code.
    var status: Int { get }
    /// A stable, machine-readable code such as `NOT_FOUND` (clients switch on it).
    var code: String { get }
    /// A human-readable explanation of this occurrence; never contains secrets or raw C/DB messages.
    var detail: String? { get }
    /// Extra response headers (e.g. `Allow`, `WWW-Authenticate`, `Retry-After`).
    var headers: HTTPHeaders { get }
}

extension HTTPResponseError {
    public var headers: HTTPHeaders { [:] }

    /// The problem+json response for this error.
    public func response(requestId: String?) -> Response {
        let problem = ProblemDetails(
            type: "urn:entitled:problem:\(code)", title: HTTPStatus.reason(status), status: status,
            detail: detail, code: code, requestId: requestId)
        let body = (try? JSONEncoder.entitledDefault.encode(problem)).map(Array.init) ?? Array("{}".utf8)
        var headers = self.headers
        headers.set("Content-Type", "application/problem+json")
        return Response(status: status, headers: headers, body: body)
    }
}

/// The RFC 9457 body, with the stable `code` and the request id as extension members.
public struct ProblemDetails: Codable, Sendable, Equatable {
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    public var code: String
    public var requestId: String?
}

/// A general-purpose HTTP error with a stable code.
public struct HTTPError: HTTPResponseError, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var detail: String?
    public var extraHeaders: [String: String]

    public init(status: Int, code: String, detail: String? = nil, headers: [String: String] = [:]) {
        self.status = status
        self.code = code
        self.detail = detail
        self.extraHeaders = headers
    }

    public var headers: HTTPHeaders {
        var result = HTTPHeaders()
        for (name, value) in extraHeaders.sorted(by: { $0.key < $1.key }) { result.add(name, value) }
        return result
    }

    public var description: String { "\(status) \(code)\(detail.map { ": \($0)" } ?? "")" }

    public static func notFound(_ detail: String = "no such resource") -> HTTPError {
        HTTPError(status: 404, code: "NOT_FOUND", detail: detail)
    }
    public static func methodNotAllowed(allow: [HTTPMethod]) -> HTTPError {
        HTTPError(
            status: 405, code: "METHOD_NOT_ALLOWED", detail: "allowed: \(allow.map(\.rawValue).joined(separator: ", "))",
            headers: ["Allow": allow.map(\.rawValue).joined(separator: ", ")])
    }
    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(status: 413, code: "PAYLOAD_TOO_LARGE", detail: "the request body exceeds \(limit) bytes")
    }
    public static func uriTooLong(limit: Int) -> HTTPError {
        HTTPError(status: 414, code: "URI_TOO_LONG", detail: "the request URL exceeds \(limit) bytes")
    }
    public static func headerFieldsTooLarge(limit: Int) -> HTTPError {
        HTTPError(
            status: 431, code: "HEADERS_TOO_LARGE", detail: "the request line and headers exceed \(limit) bytes",
            headers: ["Connection": "close"])
    }
    /// 413 for a body sent to a route that takes none; it is refused before it is read.
    public static let bodyNotAllowed = HTTPError(
        status: 413, code: "BODY_NOT_ALLOWED", detail: "this endpoint takes no request body")
    public static func badRequest(_ detail: String, code: String = "BAD_REQUEST") -> HTTPError {
        HTTPError(status: 400, code: code, detail: detail)
    }
    public static let internalError = HTTPError(status: 500, code: "INTERNAL_ERROR", detail: "an internal error occurred")
    public static let shuttingDown = HTTPError(
        status: 503, code: "SHUTTING_DOWN", detail: "the server is shutting down", headers: ["Retry-After": "1"])
}

/// Reason phrases for the statuses this server produces.
public enum HTTPStatus {
    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 431: "Request Header Fields Too Large"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: "HTTP \(status)"
        }
    }
}
