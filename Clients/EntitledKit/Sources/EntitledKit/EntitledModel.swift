#if canImport(SwiftUI) && canImport(Combine)
    import Combine
    import Foundation
    import SwiftUI

    /// The customer's latest answer for SwiftUI: an `ObservableObject` (available at the client's
    /// whole platform floor) fed by ``Entitled/customerUpdates``.
    ///
    /// ```swift
    /// @StateObject var model = EntitledModel(Entitled.shared!)
    /// var body: some View {
    ///     if model.isEntitled("pro") { ProView() } else { PaywallView() }
    /// }
    /// ```
    @MainActor
    public final class EntitledModel: ObservableObject {
        /// The latest answer (nil until the first one arrives).
        @Published public private(set) var answer: CustomerAnswer?
        /// The latest failure of ``refresh()`` (nil after a success).
        @Published public private(set) var error: (any Error)?
        public let entitled: Entitled
        /// Cancelled in `deinit`, which is nonisolated; written only in `init`.
        nonisolated(unsafe) private var task: Task<Void, Never>?

        /// Starts following `entitled`'s answers and asks for the current one.
        public init(_ entitled: Entitled) {
            self.entitled = entitled
            let updates = entitled.customerUpdates
            task = Task { [weak self] in
                for await answer in updates { self?.answer = answer }
            }
            Task { await refresh() }
        }

        deinit { task?.cancel() }

        /// Whether the latest answer grants `entitlement` (false before any answer).
        public func isEntitled(_ entitlement: String) -> Bool { answer?.grants(entitlement) ?? false }

        /// Fetches the answer now (it arrives through the stream too).
        public func refresh() async {
            do {
                answer = try await entitled.refresh()
                error = nil
            } catch { self.error = error }
        }
    }
#endif
