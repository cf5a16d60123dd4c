import AppStore
import AppStoreServerAPI
import EntitledConfig
import EntitledCrypto
import Entitlements
import Storage

/// StoreKit 1 app receipts (and legacy transaction receipts) an app posts for its customer,
/// verified and applied as posted transactions are.
extension Ingest {
    /// What a receipt yields: the app, the facts to apply (empty when history replaces them), and
    /// the transaction ids to look up at Apple when the app has `serverAPI`.
    struct ReceiptContent {
        var app: App
        var facts: [Fact]
        var transactionIds: [String]
        var environment: Environment
    }

    /// Verifies and applies the base64 receipt `text` for `appUserId` (source `client`); returns
    /// the environment the customer's answer is evaluated in. `bundleId` names the app of a legacy
    /// transaction receipt when more than one app has `serverAPI`. A refusal's body to record is
    /// ``storedReceiptBody(_:)``.
    func receipt(_ text: String, bundleId: String?, appUserId: String, now: Int64) async throws(IngestError) -> Environment {
        try await Self.typed { () async throws -> Environment in
            let content = try receiptContent(text, bundleId: bundleId, now: now)
            let claim = Claim(appUserId: appUserId, behaviour: content.app.restoreBehavior)
            if let client = serverAPI[content.app.bundleId], let first = content.transactionIds.first {
                // Apple's migration path: the receipt only names the purchases; the full signed
                // history is what is applied (each transaction as a posted one would be).
                return try await applyHistory(client, transactionId: first, app: content.app, claim: claim, now: now)
                    ?? content.environment
            }
            let message = ReceivedMessage(
                notificationUUID: nil, source: .client, body: storedReceiptBody(text), receivedAt: now,
                bundleId: content.app.bundleId)
            // Receipt facts have no signed form of their own (as V1's): their identity keys them.
            _ = try await ledger.ingest(message, facts: content.facts.map { ($0, nil) }, claim: claim)
            return content.environment
        }
    }

    /// The receipt verified and mapped: an app receipt's in-app records through the verifyReceipt
    /// mapping (``EntitledConfig/App/facts(fromReceipt:)``), or a legacy transaction receipt's id.
    func receiptContent(_ text: String, bundleId: String?, now: Int64) throws -> ReceiptContent {
        let bytes = try ReceiptVerifier.decodeBase64(text)
        if LegacyTransactionReceipt.looksLikePlist(bytes) {
            guard let id = LegacyTransactionReceipt.transactionId(decoded: bytes) else {
                throw VerificationError(.invalidReceipt, "the transaction receipt has no transaction-id")
            }
            // It names no app and carries nothing Apple signed that we can check: only Apple's
            // history, fetched with an app's Server API key, can say what it bought.
            let withServerAPI = configuration.apps.filter { $0.serverAPI != nil }
            guard !withServerAPI.isEmpty else {
                throw VerificationError(.invalidReceipt, "a legacy transaction receipt is applied only for apps with serverAPI")
            }
            let app = try self.app(bundleId ?? (withServerAPI.count == 1 ? withServerAPI[0].bundleId : nil))
            guard app.serverAPI != nil else {
                throw VerificationError(.invalidReceipt, "a legacy transaction receipt is applied only for apps with serverAPI")
            }
            return ReceiptContent(app: app, facts: [], transactionIds: [id], environment: .production)
        }
        let decoded = try ReceiptVerifier.decode(der: bytes)
        guard let claimed = decoded.receipt.bundleId, let app = configuration.app(bundleId: claimed) else {
            throw VerificationError(.receiptWrongBundle, "the receipt is not for a configured app")
        }
        let receipt = try verifier.verifyReceipt(decoded, app: app, now: now)
        let response = receipt.verifyReceiptResponse
        let facts = app.facts(fromReceipt: response)
        do {
            for fact in facts { try fact.checkDates() }
        } catch {
            throw Self.rejection(error)
        }
        return ReceiptContent(
            app: app, facts: facts, transactionIds: receipt.transactionIds,
            environment: Environment(response.environment?.appStoreEnvironment))
    }

    /// Fetches the customer's whole signed history from Apple and applies each transaction as a
    /// posted one; returns the environment Apple answered from (nil when the history was empty).
    func applyHistory(
        _ client: AppStoreServerAPIClient, transactionId: String, app: App, claim: Claim, now: Int64
    ) async throws -> Environment? {
        let history: [Signed<JWSTransactionDecodedPayload>]
        do {
            history = try await client.transactionHistoryAllPages(transactionId)
        } catch {
            throw Rejection(.retryableVerificationFailure, "Apple's transaction history is unavailable: \(error)")
        }
        var environment: Environment?
        for signed in history {
            let fact: TransactionFact
            do { fact = try app.transaction(signed.payload) } catch { throw Self.rejection(error) }
            environment = fact.environment
            let message = ReceivedMessage(
                notificationUUID: nil, source: .client, body: Self.storedBody("signedTransaction", signed.jws, codec: codec), receivedAt: now,
                bundleId: app.bundleId)
            _ = try await commitRecordingUnknown(message, facts: [(.transaction(fact), signed.jws, signed.unknownMembers)], claim: claim)
        }
        return environment
    }

    /// A receipt as the ledger keeps it: its digest, not its bytes (receipts are large and
    /// repeat the customer's whole purchase list at every post).
    func storedReceiptBody(_ text: String) -> [UInt8] {
        Self.storedBody("receiptSHA256", Hex.encode(Digests.hash(Array(text.utf8))), codec: codec)
    }
}
