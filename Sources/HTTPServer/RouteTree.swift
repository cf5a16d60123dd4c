#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The routes' patterns as a tree of segments, so that a request finds the routes its path binds
/// to by walking its own segments once, instead of comparing itself with every route of its length.
///
/// Each node is reached by a sequence of segments; its children are a literal segment's bytes or a
/// parameter. A route is listed at the node its whole pattern leads to. ``matches(_:)`` returns
/// every route whose pattern binds the path (all literals equal, as many segments), in
/// registration order: exactly the routes ``Router``'s plain scan would bind, in the order it tries
/// them, so the choice among them stays the router's.
struct RouteTree: Sendable {
    private struct Node: Sendable {
        /// Literal children: the segment's bytes and the child's index in `nodes`.
        var literals: [(bytes: [UInt8], node: Int)] = []
        /// The child for a `{name}` segment (every name leads to the same node).
        var parameter: Int?
        /// The routes (indices into the router's list) whose pattern ends here, ascending.
        var routes: [Int] = []
    }

    private var nodes = [Node()]

    /// Lists route `index` under `segments`. Indices must be added in ascending order.
    mutating func insert(_ segments: [Router.Segment], route index: Int) {
        var current = 0
        for segment in segments {
            switch segment {
            case .literal(let literal):
                let bytes = Array(literal.utf8)
                if let found = nodes[current].literals.first(where: { $0.bytes == bytes }) {
                    current = found.node
                } else {
                    nodes.append(Node())
                    nodes[current].literals.append((bytes, nodes.count - 1))
                    current = nodes.count - 1
                }
            case .parameter:
                if let next = nodes[current].parameter {
                    current = next
                } else {
                    nodes.append(Node())
                    nodes[current].parameter = nodes.count - 1
                    current = nodes.count - 1
                }
            }
        }
        nodes[current].routes.append(index)
    }

    /// The routes whose pattern binds `parts`, in ascending (registration) order.
    func matches(_ parts: [Substring]) -> [Int] {
        var found: [Int] = []
        collect(node: 0, depth: 0, parts, into: &found)
        // Two branches (a literal and a parameter) can both lead to routes: restore the order.
        if found.count > 1 { found.sort() }
        return found
    }

    private func collect(node index: Int, depth: Int, _ parts: [Substring], into found: inout [Int]) {
        let node = nodes[index]
        guard depth < parts.count else {
            found.append(contentsOf: node.routes)
            return
        }
        let part = parts[depth].utf8
        for child in node.literals where Self.equal(child.bytes, part) {
            collect(node: child.node, depth: depth + 1, parts, into: &found)
        }
        if let parameter = node.parameter { collect(node: parameter, depth: depth + 1, parts, into: &found) }
    }

    /// Byte equality without iterating a generic sequence (a path is native UTF-8, so contiguous).
    private static func equal(_ bytes: [UInt8], _ part: Substring.UTF8View) -> Bool {
        guard bytes.count == part.count else { return false }
        return part.withContiguousStorageIfAvailable { stored in
            bytes.withUnsafeBufferPointer { mine in
                mine.count == 0 || memcmp(mine.baseAddress!, stored.baseAddress!, mine.count) == 0
            }
        } ?? bytes.elementsEqual(part)
    }
}
