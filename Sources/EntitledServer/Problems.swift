import HTTPServer
import Storage

/// The one place a storage or ingest failure becomes an HTTP problem (RFC 9457, ``ProblemCode``).
enum Problems {
    /// 503 `STORAGE_UNAVAILABLE`: retry later.
    static let unavailable = HTTPError(
        .storageUnavailable, "storage is unavailable; retry later", headers: ["Retry-After": "10"])

    /// This customer's answer cannot be computed (its projection failed); others are unaffected.
    static let projectionFailed = HTTPError(.projectionFailed, "this customer's entitlements cannot be computed now")

    /// 400 `INVALID_REQUEST`, unless the route names a more precise problem for an argument
    /// storage refuses (history's `INVALID_CURSOR`).
    static let invalidRequest = HTTPError(.invalidRequest, "invalid request")

    /// A storage failure: the request's own error for an argument storage refuses,
    /// 500 `PROJECTION_FAILED`, else 503 `STORAGE_UNAVAILABLE`.
    static func storage(_ error: StorageError, invalidRequest: HTTPError = invalidRequest) -> HTTPError {
        switch error.code {
        case .invalidArgument: invalidRequest
        case .projectionFailed: projectionFailed
        default: unavailable
        }
    }

    /// 503 `RETRYABLE_VERIFICATION_FAILURE`: nothing was recorded; the sender retries.
    static let retryableVerification = HTTPError(
        .retryableVerificationFailure, "verification could not complete; retry later", headers: ["Retry-After": "30"])

    /// A refusal's problem: its code and message (nothing secret is in it).
    static func rejected(_ rejection: Rejection) -> HTTPError {
        HTTPError(rejection.code, rejection.message.isEmpty ? "verification failed" : rejection.message)
    }
}

extension Problems {
    /// Runs a ledger call, its failure answered as ``storage(_:invalidRequest:)`` says.
    static func store<T>(
        invalidRequest: HTTPError = invalidRequest, _ body: () async throws(StorageError) -> T
    ) async throws(HTTPError) -> T {
        do {
            return try await body()
        } catch {
            throw storage(error, invalidRequest: invalidRequest)
        }
    }

    /// Runs a call of a store whose errors are untyped (webhook deliveries, the event feed): a
    /// ``StorageError`` as ``storage(_:invalidRequest:)`` says, anything else 503.
    static func storeAny<T>(_ body: () async throws -> T) async throws(HTTPError) -> T {
        try await store { () async throws(StorageError) in
            do {
                return try await body()
            } catch let error as StorageError {
                throw error
            } catch {
                throw StorageError(.unavailable, "storage call failed", detail: "\(error)")
            }
        }
    }
}

extension Problems {
    /// Runs a console read: its storage failures answered as ``storage(_:invalidRequest:)`` says,
    /// anything else thrown as it is.
    static func consoleRead<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StorageError {
            throw storage(error)
        }
    }
}
