import Synchronization

/// What a store's PostgreSQL connections sent and waited for, counted in the one place every
/// libpq call goes through (``PostgresConnection``): the deterministic measure of a write's cost
/// on the wire, where rates on a shared machine are noise.
///
/// A round trip is one wait for the server's answer (a query, a pipeline up to its sync, a
/// prepare); a statement is one SQL statement executed (each of a pipeline's, each transaction
/// control statement sent along); a prepare is one statement text parsed for a connection (once
/// per text and connection).
struct PostgresTraffic: Sendable, Equatable {
    var roundTrips = 0
    var statements = 0
    var prepares = 0

    static func - (lhs: Self, rhs: Self) -> Self {
        Self(roundTrips: lhs.roundTrips - rhs.roundTrips, statements: lhs.statements - rhs.statements, prepares: lhs.prepares - rhs.prepares)
    }

    /// The counts of a store's connections (``PostgresStore/traffic``), shared by their threads.
    final class Counter: Sendable {
        private let roundTrips = Atomic<Int>(0)
        private let statements = Atomic<Int>(0)
        private let prepares = Atomic<Int>(0)

        /// The counts so far.
        var current: PostgresTraffic {
            PostgresTraffic(
                roundTrips: roundTrips.load(ordering: .relaxed), statements: statements.load(ordering: .relaxed),
                prepares: prepares.load(ordering: .relaxed))
        }

        /// Counts one round trip that executed `count` statements.
        func roundTrip(statements count: Int) {
            roundTrips.add(1, ordering: .relaxed)
            statements.add(count, ordering: .relaxed)
        }

        /// Counts one round trip that prepared a statement.
        func prepared() {
            roundTrips.add(1, ordering: .relaxed)
            prepares.add(1, ordering: .relaxed)
        }
    }
}
