/// Follows the tokens of a paged answer (`revision`, `paginationToken`) and stops one that never
/// ends: a token seen before in the same walk, or more than ``maxPages`` pages.
///
/// Every walk over Apple's pages goes through one, so a host answering `hasMore` forever costs at
/// most ``maxPages`` requests, not an unbounded loop.
public struct PageTrail: Sendable {
    /// Pages read at most.
    public let maxPages: Int
    /// Pages read so far.
    public private(set) var pages = 0
    private var seen: Set<String> = []
    /// Apple's tokens are tens of bytes; a longer one is not followed (and never kept).
    static let maxTokenBytes = 1024

    public init(maxPages: Int) { self.maxPages = maxPages }

    /// Records one page read and returns the token to ask for next, or nil when the walk is done.
    /// - Throws: `invalidResponse` ("endless pagination …") when `token` repeats, is oversized,
    ///   or the page cap is reached while Apple still has more.
    public mutating func next(hasMore: Bool, token: String?) throws(ServerAPIError) -> String? {
        pages += 1
        guard hasMore, let token else { return nil }
        guard token.utf8.count <= Self.maxTokenBytes else {
            throw .invalidResponse(message: "endless pagination: a page token of \(token.utf8.count) bytes after \(pages) pages")
        }
        guard seen.insert(token).inserted else {
            throw .invalidResponse(message: "endless pagination: a page token repeated after \(pages) pages")
        }
        guard pages < maxPages else {
            throw .invalidResponse(message: "endless pagination: more than \(maxPages) pages")
        }
        return token
    }
}
