import Entitlements
import Synchronization

/// Charts computed before, by key. `chartPoints` is a pure function of the request and the rows,
/// so a suite that reads exactly the rows it read on another backend (the SQLite file and memory
/// stores return them in the same order) takes those points rather than computing them again;
/// rows that differ in anything, order included (PostgreSQL's), are computed anew.
enum ChartPointsMemo {
    private static let computed = Mutex<[String: (rows: ChartRows, points: [[ChartPoint]])]>([:])

    /// Each request's points from `rows`. `key` names the requests (one key, one list of
    /// requests) and where the rows came from.
    static func points(_ requests: [ChartRequest], rows: ChartRows, key: String) -> [[ChartPoint]] {
        if let known = computed.withLock({ $0[key] }), known.rows == rows { return known.points }
        let points = requests.map { chartPoints($0, rows: rows) }
        computed.withLock { if $0[key] == nil { $0[key] = (rows, points) } }
        return points
    }
}
