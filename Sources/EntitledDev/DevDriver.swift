import AppStoreSimulator
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Synchronization

/// Moves `entitled dev`'s virtual time and performs the dashboard's actions, sampling the server's
/// view of every customer after each virtual day into a bounded ring (the dashboard's charts).
///
/// Everything that moves the clock or changes the store goes through here, one request at a time:
/// the auto-advance, `/dev/clock/advance` and `/dev/actions` would otherwise interleave at actor
/// suspension points and sample a half-advanced month.
actor DevDriver {
    /// How the clock moves by itself: one virtual day every `dayEvery` real seconds while `running`.
    struct Pace: Sendable, Codable, Equatable {
        var running: Bool
        var dayEvery: Double
    }

    /// The server's view at one virtual instant, plus the simulator's cumulative delivery counts.
    struct Sample: Sendable, Codable {
        /// Virtual epoch milliseconds.
        var at: Int64
        /// Whole virtual days since `entitled dev` started.
        var day: Int
        var customers: Int
        /// Customers by their best entitlement status (`none` without any entitlement).
        var states: [String: Int]
        var sent: Int
        var accepted: Int
        var failed: Int
        /// Notifications sent during this sample's virtual day, and how many of them are not delivered.
        var notifications = 0
        var failures = 0
    }

    /// A customer as the dashboard lists it.
    struct CustomerView: Sendable {
        var id: String
        var paymentSucceeds: Bool
        var snapshot: CustomerSnapshot?
    }

    /// Fastest auto-advance: faster would spend all the time signing and sampling.
    static let minimumDayEvery = 0.05
    /// The widest single `/dev/clock/advance` (about ten years).
    static let maximumAdvance: Int64 = 3660 * Milliseconds.day
    static let oneDay = AppStoreSimulator.ISODuration("P1D")!
    /// Virtual time each Google Play action takes (milliseconds).
    static let playActionStep: Int64 = 1000
    /// Every status a customer is counted under, best first.
    static let stateNames = EntitlementStatus.allCases.map(\.rawValue) + ["none"]

    nonisolated let simulator: Simulator
    nonisolated let ledger: FactLedger
    nonisolated let policy: Policy
    /// Virtual time when `entitled dev` started: day 0 of the charts.
    nonisolated let origin: Int64
    nonisolated let capacity: Int
    private nonisolated let pace: Mutex<Pace>

    private var samples: [Sample] = []
    /// The sample that fell out of the ring last: the baseline of the first sample's per-day counts.
    private var evicted: Sample?
    /// Timed actions of the seeded scenario, earliest first.
    private var scheduled: [(at: Int64, request: ActionRequest)] = []

    /// Where the state is saved after each turn (nil: nowhere).
    nonisolated let folder: DevDataFolder?
    /// The fake Google Play, when a Play app is simulated.
    nonisolated let play: DevPlay?

    /// - Parameter saved: the state a restart continues from (its origin and scheduled actions;
    ///   the simulator has been restored from it already).
    init(
        simulator: Simulator, ledger: FactLedger, policy: Policy, pace: Pace, capacity: Int = 400,
        folder: DevDataFolder? = nil, saved: DevState? = nil, play: DevPlay? = nil
    ) {
        self.play = play
        self.simulator = simulator
        self.ledger = ledger
        self.policy = policy
        self.origin = saved?.origin ?? simulator.now
        self.capacity = capacity
        self.pace = Mutex(pace)
        self.folder = folder
        self.scheduled = saved?.scheduled.map { ($0.at, $0.request) } ?? []
    }

    // MARK: - Saving

    /// Saves the state now, once it is this caller's turn (at shutdown: after the last action).
    func save() async {
        await acquire()
        defer { release() }
        await saveAfterTurn()
    }

    /// Saves the state; the caller holds the turn, so no action is half done.
    private func saveHoldingTurn() async throws {
        guard let folder else { return }
        let state = DevState(
            origin: origin, scheduled: scheduled.map { DevState.Scheduled(at: $0.at, request: $0.request) },
            simulator: await simulator.savedState(), play: play?.saved())
        try folder.save(state)
    }

    /// After each turn: a failed save is logged, not fatal (the next turn tries again).
    private func saveAfterTurn() async {
        do {
            try await saveHoldingTurn()
        } catch {
            ServerLog.event("dev state not saved", ["error": "\(error)"])
        }
    }

    // MARK: - Pace

    nonisolated var currentPace: Pace { pace.withLock { $0 } }

    /// Changes the auto-advance; `dayEvery` is clamped to ``minimumDayEvery``.
    @discardableResult
    nonisolated func setPace(running: Bool?, dayEvery: Double?) -> Pace {
        pace.withLock { pace in
            if let running { pace.running = running }
            if let dayEvery { pace.dayEvery = max(Self.minimumDayEvery, dayEvery) }
            return pace
        }
    }

    /// Advances one virtual day every `dayEvery` seconds while running, until cancelled. The wait
    /// starts after each day is done, so a slow day delays the next instead of piling up.
    nonisolated func autoAdvance() async {
        let clock = ContinuousClock()
        var last = clock.now
        while !Task.isCancelled {
            let pace = currentPace
            guard pace.running else {
                last = clock.now
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            let due = last + .milliseconds(Int(pace.dayEvery * 1000))
            if clock.now < due {
                // Short naps so that a pause or a new speed takes effect at once.
                try? await Task.sleep(for: min(due - clock.now, .milliseconds(100)))
                continue
            }
            await advanceOneDayIfRunning()
            last = clock.now
        }
    }

    // MARK: - Moving time and acting

    /// Schedules an action at a virtual instant (run when the clock passes it).
    func schedule(_ request: ActionRequest, at: Int64) {
        scheduled.append((at, request))
        scheduled.sort { $0.at < $1.at }
    }

    /// Moves the clock forward by `duration` a virtual day at a time, sampling after each day and
    /// running scheduled actions on the way.
    func advance(by duration: AppStoreSimulator.ISODuration) async throws -> [SignedNotification] {
        await acquire()
        defer { release() }
        let out = try await advanceHoldingTurn(by: duration)
        await saveAfterTurn()
        return out
    }

    /// The auto-advance's day. The pace is read again once it is this day's turn: a pause that came
    /// while it waited behind another request starts nothing.
    private func advanceOneDayIfRunning() async {
        await acquire()
        defer { release() }
        guard currentPace.running else { return }
        _ = try? await advanceHoldingTurn(by: Self.oneDay)
        await saveAfterTurn()
    }

    /// ``advance(by:)`` once the caller holds the turn.
    private func advanceHoldingTurn(by duration: AppStoreSimulator.ISODuration) async throws -> [SignedNotification] {
        let start = simulator.now
        let target = duration.added(to: start)
        guard target - start <= Self.maximumAdvance else {
            throw SimulatorError(code: "INVALID_ACTION", "advance at most ten years at a time")
        }
        var out: [SignedNotification] = []
        var now = start
        while now < target {
            let next = min(target, now + Milliseconds.day)
            while let first = scheduled.first, first.at <= next {
                scheduled.removeFirst()
                if first.at > now { out += try await simulator.advance(to: first.at) }
                out += (try? await perform(first.request)) ?? []
            }
            out += try await simulator.advance(to: next)
            if let play { _ = await play.passTime() }
            now = next
            await sample()
        }
        return out
    }

    /// Performs one simulator action at the virtual now. A purchase without an `appAccountToken` gets
    /// the server customer's, so the dashboard's purchases land on the right customer; a new simulator
    /// customer gets a server customer too. `advance` moves time day by day like ``advance(by:)``.
    func act(_ request: ActionRequest) async throws -> [SignedNotification] {
        if request.action == "advance" {
            guard let text = request.by, let duration = AppStoreSimulator.ISODuration(text) else {
                throw SimulatorError(code: "INVALID_ACTION", "advance needs 'by', an ISO 8601 duration")
            }
            return try await advance(by: duration)
        }
        await acquire()
        defer { release() }
        let out = try await perform(request)
        await sample()
        await saveAfterTurn()
        return out
    }

    /// Performs one Google Play action at the virtual now for the customer `request` names (the
    /// server's customer, created when new, whose `appAccountToken` links the purchase).
    func act(play request: DevPlay.ActionRequest) async throws -> [DevPlay.Push] {
        guard let play else { throw SimulatorError(code: "NO_PLAY_APP", "no Google Play app is simulated", status: 404) }
        await acquire()
        defer { release() }
        // A second passes first: the server orders a token's snapshots by when Google answered, so
        // two actions at one virtual instant (the clock paused) would tie.
        _ = try await simulator.advance(to: simulator.now + Self.playActionStep)
        let out = try await play.act(request, account: try await token(request.customer))
        await sample()
        await saveAfterTurn()
        return out
    }

    /// Whether the dashboard knows `appUserId`: a simulator customer, or one who bought on Google Play.
    nonisolated func knows(_ appUserId: String) async -> Bool {
        if await simulator.store.customers[appUserId] != nil { return true }
        return play?.customers.contains(appUserId) == true
    }

    private func perform(_ request: ActionRequest) async throws -> [SignedNotification] {
        var request = request
        // Only for customers the simulator knows: the ledger creates any name it is asked about.
        if request.action == "purchase", request.appAccountToken == nil, let customer = request.customer,
            await simulator.store.customers[customer] != nil
        {
            request.appAccountToken = try await token(customer)
        }
        let out = try await simulator.perform(request)
        if request.action == "customer", let customer = request.customer { _ = try await token(customer) }
        return out
    }

    private func token(_ appUserId: String) async throws -> String {
        try await ledger.customer(appUserId: appUserId, context: context(now: simulator.now)).customer.appAccountToken
    }

    // MARK: - Reading

    /// Every simulator customer with the server's current answer for them (nil when the ledger failed).
    nonisolated func customers() async -> (now: Int64, customers: [CustomerView]) {
        let now = simulator.now
        let context = context(now: now)
        var views: [CustomerView] = []
        let simulated = await simulator.snapshot().customers
        for customer in simulated {
            let snapshot = try? await ledger.customer(appUserId: customer.id, context: context)
            views.append(CustomerView(id: customer.id, paymentSucceeds: customer.paymentSucceeds, snapshot: snapshot))
        }
        let known = Set(simulated.map(\.id))
        for id in play?.customers ?? [] where !known.contains(id) {
            let snapshot = try? await ledger.customer(appUserId: id, context: context)
            views.append(CustomerView(id: id, paymentSucceeds: true, snapshot: snapshot))
        }
        return (now, views)
    }

    /// A customer's best entitlement status (statuses are ordered best first), `none` without any.
    nonisolated static func status(of state: CustomerState?) -> String {
        let statuses = EntitlementStatus.allCases
        let best = state?.entitlements.map(\.status).min { statuses.firstIndex(of: $0)! < statuses.firstIndex(of: $1)! }
        return best?.rawValue ?? "none"
    }

    /// The current counts, computed now rather than read from the ring (actions through the
    /// simulator's own control API bypass the driver).
    nonisolated func measure() async -> Sample {
        let (now, views) = await customers()
        var states = Dictionary(uniqueKeysWithValues: Self.stateNames.map { ($0, 0) })
        for view in views { states[Self.status(of: view.snapshot?.state), default: 0] += 1 }
        let records = await simulator.sender.history()
        // Google Play's pushes count with the App Store's notifications.
        let pushes = play?.counts ?? DevPlay.Counts()
        let sent = records.count + pushes.sent
        let accepted = records.count(where: \.delivered) + pushes.accepted
        return Sample(
            at: now, day: day(of: now), customers: views.count, states: states, sent: sent, accepted: accepted, failed: sent - accepted)
    }

    /// The ring, oldest first.
    func history() -> [Sample] { samples }

    nonisolated func day(of milliseconds: Int64) -> Int { Int((milliseconds - origin) / Milliseconds.day) }

    /// Adds a sample; one per virtual day (a later one the same day replaces it), the oldest dropped
    /// beyond `capacity`.
    func sample() async {
        var sample = await measure()
        let replacing = samples.last?.day == sample.day
        if replacing { samples.removeLast() }
        let previous = samples.last ?? evicted
        sample.notifications = sample.sent - (previous?.sent ?? 0)
        // A Production retry can turn an earlier failure into a success: never below zero.
        sample.failures = max(0, sample.failed - (previous?.failed ?? 0))
        samples.append(sample)
        if samples.count > capacity { evicted = samples.removeFirst() }
    }

    private nonisolated func context(now: Int64) -> EvaluationContext {
        // What the API answers a plain GET (the grant environments merged), so the dashboard shows it.
        ledger.answerContext(now: now)
    }

    // MARK: - One request at a time (FIFO)

    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }
}
