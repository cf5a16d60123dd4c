import HTTPClient

/// Retries without waiting (the scenario runs in virtual time).
struct NoWait: Sleeper {
    func sleep(milliseconds: Int64) async throws {}
}
