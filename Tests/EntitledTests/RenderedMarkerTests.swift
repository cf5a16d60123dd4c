import Entitlements
import Testing

@testable import EntitledServer

@Suite("Rendered answers' marker search")
struct RenderedMarkerTests {
    @Test("the rendered-body marker search finds the first occurrence, or none", arguments: [
        ("abcabc", "bc", 1), ("abc", "abcd", nil), ("aaab", "aab", 1), ("xyz", "z", 2), ("xyz", "q", nil),
    ] as [(String, String, Int?)])
    func markerSearch(haystack: String, needle: String, expected: Int?) {
        #expect(RenderedCustomer.offset(of: Array(needle.utf8), in: Array(haystack.utf8)) == expected)
    }
}
