/// A background loop of the server, after swift-service-lifecycle's `Service`: ``run()`` works
/// until its task is cancelled, then returns. A failed pass is the service's own to log and retry;
/// it never ends the loop.
///
/// ``buildApplication(configuration:clock:store:verifier:rejectionBudget:fastPaths:metrics:outbound:apiSleeper:)``
/// returns the configured ones (``AssembledServer/services``); ``ServiceRunner`` runs them for
/// `serve`, `dev` and the benchmarks.
public protocol Service: Sendable {
    /// Runs until the calling task is cancelled.
    func run() async
}

/// Runs services side by side in one task group and stops them by cancelling it.
public struct ServiceRunner: Sendable {
    public let services: [any Service]

    public init(_ services: [any Service]) {
        self.services = services
    }

    /// Runs every service until the calling task is cancelled; returns once each has returned.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for service in services {
                group.addTask { await service.run() }
            }
        }
    }

    /// Starts ``run()`` in a task of its own.
    public func start() -> RunningServices {
        RunningServices(task: Task { await run() })
    }
}

/// Services started by ``ServiceRunner/start()``.
public struct RunningServices: Sendable {
    let task: Task<Void, Never>

    /// Cancels every service without waiting for them.
    public func cancel() {
        task.cancel()
    }

    /// Cancels every service and waits until each has returned.
    public func stop() async {
        task.cancel()
        await task.value
    }

    /// Cancels every service and waits at most `limit` for them; false when one was still running
    /// (a pass stuck in a call to a frozen database cannot be interrupted, and is left behind).
    public func stop(within limit: Duration) async -> Bool {
        task.cancel()
        let task = self.task
        return await finishes(within: limit) { await task.value }
    }
}

/// Its ``WebhookDispatcher/run()`` passes until cancelled.
extension WebhookDispatcher: Service {}
