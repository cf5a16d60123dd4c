import Dispatch
import Synchronization

/// Wakes one waiting thread when there is work (``ring()``) or when it must stop (``close()``),
/// so that a storage thread sleeps until something happens instead of polling.
final class Doorbell: Sendable {
    /// Why a wait ended.
    enum Wake: Equatable {
        case rung, deadline, closed
    }

    private struct State {
        var rung = false
        var closed = false
        var sleeping = false
    }

    private let state = Mutex(State())
    private let wakeUp = DispatchSemaphore(value: 0)

    /// Records that there is work and wakes the waiter.
    func ring() { wake { $0.rung = true } }

    /// Ends every wait from now on with `.closed`.
    func close() { wake { $0.closed = true } }

    /// Blocks until rung (the ring is taken), closed, or `deadline` (nil: none).
    func wait(until deadline: DispatchTime? = nil) -> Wake { sleep(until: deadline, takingRings: true) }

    /// Blocks until `deadline` or until closed; a ring meanwhile is kept for the next ``wait(until:)``.
    func pause(until deadline: DispatchTime) -> Wake { sleep(until: deadline, takingRings: false) }

    private func wake(_ change: (inout State) -> Void) {
        let sleeper = state.withLock { state -> Bool in
            change(&state)
            defer { state.sleeping = false }
            return state.sleeping
        }
        if sleeper { wakeUp.signal() }
    }

    private func sleep(until deadline: DispatchTime?, takingRings: Bool) -> Wake {
        while true {
            let outcome = state.withLock { state -> Wake? in
                if state.closed { return .closed }
                if takingRings && state.rung {
                    state.rung = false
                    return .rung
                }
                if let deadline, DispatchTime.now() >= deadline { return .deadline }
                state.sleeping = true
                return nil
            }
            if let outcome { return outcome }
            guard let deadline else {
                wakeUp.wait()
                continue
            }
            if wakeUp.wait(timeout: deadline) == .timedOut {
                // A ring or close that found us sleeping after the timeout has signalled, or is
                // about to: take that signal now so that no stale one cuts a later wait short.
                let signalled = state.withLock { state -> Bool in
                    defer { state.sleeping = false }
                    return !state.sleeping
                }
                if signalled { wakeUp.wait() }
            }
        }
    }
}
