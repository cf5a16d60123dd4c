@testable import EntitledServer
import Storage
import Testing

/// What `entitled check` and `entitled rebuild` print about customers is for a terminal: a
/// placeholder key holds a control character and is storage's, so it never reaches the output.
@Suite struct MaintenanceReportTests {
    @Test func anUnlinkedSubscriptionIsNamedByItsTransactionNotItsKey() {
        let report = RebuildReport(
            customers: 2, differences: 1, changedCustomers: [UnlinkedSubscription.key("2000000123"), "alice"],
            failedCustomers: [ProjectionFailure(appUserId: UnlinkedSubscription.key("2000000456"), reason: "no facts")])
        let lines = DatabaseMaintenance.customerLines(report, changed: "differs")
        #expect(lines == [
            "  differs: unlinked subscription 2000000123", "  differs: alice",
            "  failed: unlinked subscription 2000000456: no facts",
        ])
        #expect(!lines.joined().unicodeScalars.contains { $0.properties.generalCategory == .control })
    }
}
