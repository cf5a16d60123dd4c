/// The store's subscriptions by original transaction id, with the indexes the simulation needs to stay
/// fast with many customers: by customer, family views by purchaser, and a min-heap of due times
/// (renewal, grace end, billing-retry end) with lazy deletion.
public struct SubscriptionTable: Sendable, Sequence {
    /// An (original transaction id, subscription) pair, as a dictionary iterates.
    public typealias Element = (key: String, value: SimulatedSubscription)

    private var storage: [String: SimulatedSubscription] = [:]
    /// Original transaction ids of each customer's subscriptions (purchased and family views).
    private(set) var byCustomer: [String: [String]] = [:]
    /// Family members' views of each purchased subscription.
    private(set) var views: [String: [String]] = [:]
    private var heap: [(time: Int64, id: String)] = []

    /// An empty table.
    public init() {}

    /// The subscription with this original transaction id. Setting keeps the indexes current.
    public subscript(id: String) -> SimulatedSubscription? {
        get { storage[id] }
        set {
            let old = storage[id]
            storage[id] = newValue
            guard let newValue else { return }
            if old == nil {
                byCustomer[newValue.customerId, default: []].append(id)
                if let source = newValue.sharedFrom { views[source, default: []].append(id) }
            }
            if let due = Self.dueTime(newValue), due != old.flatMap(Self.dueTime) { push(due, id) }
        }
    }

    /// Every subscription.
    public var values: Dictionary<String, SimulatedSubscription>.Values { storage.values }
    /// How many subscriptions (purchased and family views).
    public var count: Int { storage.count }
    /// Iterates (id, subscription) pairs in no particular order.
    public func makeIterator() -> Dictionary<String, SimulatedSubscription>.Iterator { storage.makeIterator() }

    /// The ids of `customerId`'s subscriptions.
    func ids(of customerId: String) -> [String] { byCustomer[customerId] ?? [] }

    /// The family views of purchased subscription `id`, in creation order.
    func views(of id: String) -> [String] { views[id] ?? [] }

    /// When something is next due for a purchased subscription: the renewal of an active one, the end of a
    /// grace period, or the end of 60 days of billing retry. Nil for ended ones and family views.
    static func dueTime(_ sub: SimulatedSubscription) -> Int64? {
        guard !sub.isFamilyShared else { return nil }
        let retryEnd = (sub.billingRetryStart ?? sub.expiresDate) + SimulatedStore.billingRetryWindow
        switch sub.state {
        case .active: return sub.expiresDate
        case .gracePeriod: return Swift.min(sub.gracePeriodExpires ?? sub.expiresDate, retryEnd)
        case .billingRetry: return retryEnd
        case .expired, .revoked: return nil
        }
    }

    /// The earliest due (time, id), ties broken by id; stale heap entries are dropped on the way.
    mutating func nextDue() -> (time: Int64, id: String)? {
        while let top = heap.first {
            if let sub = storage[top.id], Self.dueTime(sub) == top.time { return top }
            pop()
        }
        return nil
    }

    private static func less(_ a: (time: Int64, id: String), _ b: (time: Int64, id: String)) -> Bool {
        a.time != b.time ? a.time < b.time : a.id < b.id
    }

    private mutating func push(_ time: Int64, _ id: String) {
        heap.append((time, id))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func pop() {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, Self.less(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count, Self.less(heap[right], heap[smallest]) { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
