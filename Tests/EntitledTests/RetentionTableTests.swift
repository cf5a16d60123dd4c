@testable import EntitledServer
import Testing

/// The retention commands' lists (messages, images) as columns.
@Suite struct RetentionTableTests {
    @Test(
        "each column is as wide as its widest cell and two spaces; the last is not padded",
        arguments: [
            ([["a", "bb", "c"], ["ccc", "d"], ["e"]], "a    bb  c\nccc  d\ne"),
            ([["only"]], "only"),
            ([], ""),
            ([["id-1", "APPROVED"], ["id-22", "PENDING"]], "id-1   APPROVED\nid-22  PENDING"),
        ] as [([[String]], String)])
    func columns(rows: [[String]], expected: String) {
        #expect(RetentionCalls.table(rows) == expected)
    }
}
