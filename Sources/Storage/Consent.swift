/// Whether a customer consented to the app sharing consumption data with Apple (table
/// `customer_consents`), as the app's backend recorded it (`PUT /v1/customers/{appUserId}/consent`).
/// An answer to a `CONSUMPTION_REQUEST` says `customerConsented` only when this says so.
public protocol ConsentStore: Sendable {
    /// Records (or replaces) the customer's consent.
    func recordConsent(appUserId: String, consented: Bool, now: Int64) async throws
    /// The recorded consent; nil when none was recorded.
    func consent(appUserId: String) async throws -> Bool?
}


extension SessionBackedStore {
    func recordConsent(appUserId: String, consented: Bool, now: Int64) async throws {
        _ = try await write { session in
            try session.query(
                """
                INSERT INTO customer_consents (app_user_id, consented, recorded_at) VALUES (\(appUserId), \(consented), \(now))
                ON CONFLICT (app_user_id) DO UPDATE SET consented = excluded.consented, recorded_at = excluded.recorded_at
                """)
        }
    }

    func consent(appUserId: String) async throws -> Bool? {
        try await read { session in
            try session.value("SELECT consented FROM customer_consents WHERE app_user_id = \(appUserId)", as: Bool.self)
        }
    }
}
