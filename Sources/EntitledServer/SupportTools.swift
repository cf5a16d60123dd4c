import AppStore
import AppStoreServerAPI
import EntitledConfig
import Foundation
import HTTPServer
import Storage

/// Apple's App Store Server API as the support and console routes call it: the client of the
/// app a request names, Apple's failures as problems, and Apple's id formats.
struct AppleCalls: Sendable {
    let configuration: Configuration
    /// The App Store Server API client of each app with `serverAPI`, by bundleId.
    let serverAPI: [String: AppStoreServerAPIClient]

    /// The client of the app named by `bundleId` (the path's, or the `bundleId` query), or of the
    /// only app with `serverAPI` when none is named.
    func client(_ request: Request, bundleId named: String? = nil) throws -> (bundleId: String, client: AppStoreServerAPIClient) {
        let bundleId = named ?? request.query["bundleId"]
        if let bundleId {
            guard configuration.app(bundleId: bundleId) != nil else { throw HTTPError(.appNotFound, "no app with this bundleId") }
            guard let client = serverAPI[bundleId] else { throw Self.serverAPINotConfigured(bundleId) }
            return (bundleId, client)
        }
        guard let only = serverAPI.first else { throw Self.serverAPINotConfigured(nil) }
        guard serverAPI.count == 1 else { throw HTTPError(.invalidRequest, "several apps have serverAPI: name one with bundleId") }
        return (only.key, only.value)
    }

    static func serverAPINotConfigured(_ bundleId: String?) -> HTTPError {
        HTTPError(
            .serverAPINotConfigured,
            (bundleId.map { "app \($0) has" } ?? "no app has") + " no serverAPI in the configuration (see docs/configuration.md)")
    }

    /// Calls Apple; its failures become `APPLE_NOT_FOUND` (404) or `APPLE_API_FAILED` (502), with
    /// the client's code and Apple's `errorCode` in the detail.
    func call<T>(_ body: () async throws(ServerAPIError) -> T) async throws(HTTPError) -> T {
        do {
            return try await body()
        } catch {
            let appleCode = error.appleErrorCode.map { " (Apple errorCode \($0.rawValue))" } ?? ""
            if case .apple(404, _, _) = error { throw HTTPError(.appleNotFound, "Apple knows no such item" + appleCode) }
            throw HTTPError(.appleAPIFailed, "\(error.code)\(appleCode): \(error.description)")
        }
    }

    /// An id of Apple's as it appears in its answers and on receipt emails (an order id, a
    /// transaction id): 1–64 letters and digits.
    static func isAppleId(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
    }

    /// The path's originalTransactionId, refused (400 `INVALID_REQUEST`) unless Apple could have made it.
    static func originalTransactionId(_ request: Request) throws -> String {
        let otid = try request.parameter("originalTransactionId")
        guard isAppleId(otid) else { throw HTTPError(.invalidRequest, "originalTransactionId is 1…64 letters and digits") }
        return otid
    }
}

/// The audit record every support action leaves (``SupportAction``), in the console store.
struct SupportAuditor: Sendable {
    let ledger: FactLedger
    let clock: any EpochClock

    /// The store of the console's reads and of support actions.
    var consoleStore: any ConsoleStore { ledger.store }

    /// Runs a support action and records it (``SupportAction``) with its outcome: `OK`, or the
    /// problem code it answered. The record is written before the answer goes out; when it
    /// cannot be written the request fails (503), and an extension repeated with the same
    /// `requestIdentifier` is not applied twice by Apple.
    func audited(
        _ audit: inout SupportAudit, store: any ConsoleStore, _ body: (inout SupportAudit) async throws -> Response
    ) async throws -> Response {
        let response: Response
        do {
            response = try await body(&audit)
            audit.detail["outcome"] = "OK"
        } catch {
            audit.detail["outcome"] = (error as? HTTPError)?.code ?? "INTERNAL"
            try await record(audit, store: store)
            throw error
        }
        try await record(audit, store: store)
        return response
    }

    private func record(_ audit: SupportAudit, store: any ConsoleStore) async throws {
        let detail = String(decoding: try JSONEncoder.entitledDefault.encode(audit.detail), as: UTF8.self)
        let action = SupportAction(
            action: audit.action, subject: audit.subject, actor: audit.actor, detail: detail, recordedAt: clock.nowMilliseconds())
        let ids = audit.appUserIds
        try await Problems.consoleRead { try await store.recordSupportAction(action, appUserIds: ids) }
    }

    /// The customers owning `originalTransactionId` (for the audit record).
    func owners(of originalTransactionId: String, store: any ConsoleStore) async throws -> [String] {
        try await Problems.consoleRead { try await store.exactCustomers([originalTransactionId]) }.map(\.appUserId)
    }
}
