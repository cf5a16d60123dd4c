import AppStore
import EntitledKit
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Testing

@testable import EntitledServer

/// JSON documents read back for comparison (`RawJSON.parse`, in ScenarioSupport.swift).
extension RawJSON {
    var json: Data { get throws { try JSONEncoder().encode(self) } }

    /// The document with every member `shape` declares nullable set to `null`, at every depth.
    func nullingEveryNullable(_ type: AnswerType) -> RawJSON {
        switch (type, self) {
        case (.nullable, _): .null
        case (.array(let item), .array(let items)): .array(items.map { $0.nullingEveryNullable(item) })
        case (.map(let shape), .object(let members)): .object(members.mapValues { $0.nullingEveryNullable(.object(shape)) })
        case (.object(let shape), .object(let members)):
            .object(
                Dictionary(
                    uniqueKeysWithValues: members.map { name, value in
                        (name, shape.members.first { $0.name == name }.map { value.nullingEveryNullable($0.type) } ?? value)
                    }))
        default: self
        }
    }
}

/// What in a JSON document differs from the answer's declared members: a member missing or extra
/// (`exact`), or of another type. Not `exact`: only members the document has are checked (a client
/// leaves out what it does not model and what it holds as nil).
func answerMismatches(_ value: RawJSON, _ type: AnswerType, at path: String = "$", exact: Bool = true) -> [String] {
    switch (type, value) {
    case (.nullable, .null): return []
    case (.nullable(let inner), _): return answerMismatches(value, inner, at: path, exact: exact)
    case (.string, .string), (.boolean, .bool), (.integer, .integer), (.number, .integer), (.number, .double): return []
    case (.timestamp, .string(let text)):
        return text.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z/) == nil ? ["\(path): \(text) is no timestamp"] : []
    case (.array(let item), .array(let items)):
        return items.enumerated().flatMap { answerMismatches($1, item, at: "\(path)[\($0)]", exact: exact) }
    case (.map(let shape), .object(let members)):
        return members.flatMap { answerMismatches($1, .object(shape), at: "\(path).\($0)", exact: exact) }
    case (.object(let shape), .object(let members)):
        let declared = Dictionary(uniqueKeysWithValues: shape.members.map { ($0.name, $0.type) })
        var found = members.keys.sorted().flatMap { name -> [String] in
            guard let type = declared[name] else { return ["\(path).\(name) is not a member of \(shape)"] }
            return answerMismatches(members[name]!, type, at: "\(path).\(name)", exact: exact)
        }
        if exact { found += declared.keys.filter { members[$0] == nil }.sorted().map { "\(path).\($0) is missing" } }
        return found
    default:
        return ["\(path): \(value) is not \(type)"]
    }
}

/// The customer answer's members are declared once (``AnswerShape``); every writer and reader of the
/// answer, and its schema, is held to that list.
@Suite("Answer fields")
struct AnswerFieldTests {
    /// Answers as `CustomerBody` sends them (only groups with a current subscription are listed).
    static func bodies() -> [CustomerBody] {
        AnswerJSONTests.bodies().map { body in
            var body = body
            body.subscriptions = body.subscriptions.filter { $0.group.current != nil }
            return body
        }
    }

    @Test("the Foundation encoder writes exactly the declared members", arguments: 0..<4)
    func foundationEncoder(index: Int) throws {
        let answer = try RawJSON.parse(try JSONEncoder.entitledDefault.encode(Self.bodies()[index]))
        #expect(answerMismatches(answer, .object(.customer)) == [])
    }

    @Test("the fast writer writes exactly the declared members", arguments: 0..<4)
    func fastWriter(index: Int) throws {
        let answer = try RawJSON.parse(AnswerJSON.encode(Self.bodies()[index]))
        #expect(answerMismatches(answer, .object(.customer)) == [])
    }

    /// EntitledKit reads no member the server does not declare, each as its declared type, and
    /// requires none the server may send as null (but the ids, null only in the answer an event
    /// of an unlinked subscription carries, which no client reads).
    @Test("EntitledKit's CustomerAnswer reads only declared members", arguments: 0..<4)
    func entitledKitDecoder(index: Int) throws {
        let sent = try RawJSON.parse(try JSONEncoder.entitledDefault.encode(Self.bodies()[index]))
        let answer = try CustomerAnswer.decode(try sent.json)
        // Synthesized coding: the members it writes back are the members it reads.
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let read = try RawJSON.parse(try encoder.encode(answer))
        #expect(answerMismatches(read, .object(.customer), exact: false) == [])
        guard case .object(var nulled) = sent.nullingEveryNullable(.object(.customer)), case .object(let members) = sent else {
            Issue.record("an answer is an object")
            return
        }
        nulled["appUserId"] = members["appUserId"]
        nulled["appAccountToken"] = members["appAccountToken"]
        _ = try CustomerAnswer.decode(try RawJSON.object(nulled).json)
    }

    /// The comparison itself: a member left out, one added and one of another type are all found.
    @Test func mismatchesAreFound() throws {
        guard case .object(var members) = try RawJSON.parse(AnswerJSON.encode(Self.bodies()[1])) else {
            Issue.record("an answer is an object")
            return
        }
        members["storefront"] = nil
        members["storefrontID"] = .string("143441")
        members["state"] = .integer(1)
        #expect(
            answerMismatches(.object(members), .object(.customer)) == [
                "$.state: integer(1) is not string", "$.storefrontID is not a member of customer", "$.storefront is missing",
            ])
        #expect(answerMismatches(.object(["serverTime": .string("yesterday")]), .object(.customer), exact: false) == [
            "$.serverTime: yesterday is no timestamp"
        ])
    }

    /// docs/openapi.yaml's `Customer` schema and the schemas it refers to declare the same members,
    /// required and typed alike. The spec describes entitlements and grants with one `Grant` schema
    /// whose `source` and `grantId` (entitlements only) are not required.
    @Test func openAPISchemaDeclaresTheSameMembers() throws {
        let schemas = try OpenAPISchemas(text: String(contentsOf: OpenAPISpec.url, encoding: .utf8))
        #expect(schemas.mismatches(schemas.named("Customer"), .object(.customer), at: "Customer") == [])
    }
}

/// `components.schemas` of docs/openapi.yaml, read by indentation (enough YAML for our own file).
struct OpenAPISchemas {
    indirect enum Node {
        case scalar(String)
        case map([String: Node])
        case list([Node])

        subscript(key: String) -> Node? { if case .map(let members) = self { members[key] } else { nil } }
        var text: String? { if case .scalar(let text) = self { text } else { nil } }
        /// A flow sequence (`[a, "null"]`) or a single scalar, as its items.
        var items: [String] {
            guard let text else { return [] }
            guard text.hasPrefix("[") else { return [text.trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))] }
            return text.dropFirst().dropLast().split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " \"'"))
            }
        }
    }

    private let schemas: Node

    init(text: String) throws {
        var lines: [(indent: Int, content: String)] = []
        var inSchemas = false
        for raw in text.split(separator: "\n") {
            let content = raw.trimmingCharacters(in: .whitespaces)
            guard !content.isEmpty, !content.hasPrefix("#") else { continue }
            let indent = raw.prefix { $0 == " " }.count
            if indent <= 2 { inSchemas = indent == 2 && content == "schemas:" } else if inSchemas { lines.append((indent, content)) }
        }
        var index = 0
        schemas = Self.block(&lines, &index, indent: 4)
    }

    func named(_ name: String) -> Node { schemas[name] ?? .map([:]) }

    /// A mapping or sequence whose entries are at `indent`.
    private static func block(_ lines: inout [(indent: Int, content: String)], _ index: inout Int, indent: Int) -> Node {
        if index < lines.count, lines[index].content.hasPrefix("- ") {
            var items: [Node] = []
            while index < lines.count, lines[index].indent == indent, lines[index].content.hasPrefix("- ") {
                let item = String(lines[index].content.dropFirst(2))
                if item.contains(": ") || item.hasSuffix(":") {
                    lines[index] = (indent + 2, item)
                    items.append(block(&lines, &index, indent: indent + 2))
                } else {
                    items.append(.scalar(item))
                    index += 1
                }
            }
            return .list(items)
        }
        var members: [String: Node] = [:]
        while index < lines.count, lines[index].indent >= indent {
            guard lines[index].indent == indent else {
                index += 1  // a plain scalar's continuation
                continue
            }
            let content = lines[index].content
            let split = content.firstRange(of: ": ") ?? (content.hasSuffix(":") ? content.index(before: content.endIndex)..<content.endIndex : nil)
            guard let split else { break }
            let key = content[..<split.lowerBound].trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
            var value = content[split.upperBound...].trimmingCharacters(in: .whitespaces)
            index += 1
            if value.isEmpty {
                let deeper = index < lines.count && (lines[index].indent > indent || lines[index].content.hasPrefix("- "))
                members[key] = deeper ? block(&lines, &index, indent: lines[index].indent) : .scalar("")
                continue
            }
            if ["|", "|-", ">", ">-"].contains(value) {
                while index < lines.count, lines[index].indent > indent { index += 1 }
                members[key] = .scalar("")
                continue
            }
            while value.hasPrefix("["), !value.hasSuffix("]"), index < lines.count {
                value += " " + lines[index].content
                index += 1
            }
            members[key] = .scalar(value)
        }
        return .map(members)
    }

    /// A schema with `$ref`, `allOf: [one]` and `oneOf: [one, null]` resolved: the schema and
    /// whether it allows null.
    private func resolve(_ node: Node) -> (node: Node, nullable: Bool) {
        if let ref = node["$ref"]?.items.first {
            let name = String(ref.split(separator: "/").last ?? "")
            if name == "NullableTimestamp" { return (named("Timestamp"), true) }
            return resolve(named(name))
        }
        if case .list(let parts) = node["allOf"], parts.count == 1 { return resolve(parts[0]) }
        if case .list(let parts) = node["oneOf"] {
            let others = parts.filter { $0["type"]?.text?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) != "null" }
            if others.count == 1, parts.count == 2 { return (resolve(others[0]).node, true) }
        }
        let types = node["type"]?.items ?? []
        return (node, types.contains("null"))
    }

    func mismatches(_ schema: Node, _ type: AnswerType, at path: String) -> [String] {
        let (node, nullable) = resolve(schema)
        var expected = type
        if case .nullable(let inner) = type {
            guard nullable else { return ["\(path) is not nullable"] }
            expected = inner
        } else if nullable {
            return ["\(path) is nullable"]
        }
        let types = Set(node["type"]?.items ?? []).subtracting(["null"])
        switch expected {
        case .nullable: return ["\(path): nullable twice"]
        case .string, .integer, .number, .boolean:
            return types == ["\(expected)"] ? [] : ["\(path): \(types) is not \(expected)"]
        case .timestamp:
            return types == ["string"] && node["format"]?.text == "date-time" ? [] : ["\(path) is no timestamp"]
        case .array(let item):
            guard types == ["array"], let items = node["items"] else { return ["\(path) is no array"] }
            return mismatches(items, item, at: "\(path)[]")
        case .map(let shape):
            guard types == ["object"], let values = node["additionalProperties"] else { return ["\(path) is no map"] }
            return mismatches(values, .object(shape), at: "\(path){}")
        case .object(let shape):
            guard types == ["object"], case .map(let properties) = node["properties"] else { return ["\(path) is no object"] }
            let names = shape.members.map(\.name)
            let entitlement = AnswerShape.entitlement.members.map(\.name)
            let grant = AnswerShape.grant.members.map(\.name)
            let listed = shape == .grant ? entitlement : names
            let required = shape == .entitlement ? grant : names
            var found: [String] = []
            if Set(properties.keys) != Set(listed) { found.append("\(path) lists \(properties.keys.sorted()), not \(listed.sorted())") }
            if Set(node["required"]?.items ?? []) != Set(required) { found.append("\(path) requires other members than \(required.sorted())") }
            for member in shape.members {
                guard let property = properties[member.name] else { continue }
                found += mismatches(property, member.type, at: "\(path).\(member.name)")
            }
            return found
        }
    }
}
