/// The JSON member names a model reads, taken from its own `Decodable` conformance: a decoder
/// that answers "absent" to every key and writes down each key it is asked about. So the list can
/// never drift from the model's `CodingKeys` (an Apple field added to a model is known at once).
///
/// Works for the App Store models, whose members are all optional (a required member ends the
/// recording at that key; every model's test checks its list is complete).
public enum KnownKeys {
    /// The top-level member names `Model` decodes.
    public static func of<Model: Decodable>(_ model: Model.Type) -> Set<String> {
        let recorder = Recorder()
        _ = try? Model(from: recorder)
        return recorder.keys
    }

    private final class Recorder: Decoder {
        var keys: Set<String> = []
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Container<Key>(recorder: self))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Self.stop }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { throw Self.stop }

        static let stop = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "recording keys only"))
    }

    private struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool {
            recorder.keys.insert(key.stringValue)
            return false
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            recorder.keys.insert(key.stringValue)
            return true
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            recorder.keys.insert(key.stringValue)
            throw Recorder.stop
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            recorder.keys.insert(key.stringValue)
            throw Recorder.stop
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            recorder.keys.insert(key.stringValue)
            throw Recorder.stop
        }

        func superDecoder() throws -> any Decoder { throw Recorder.stop }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw Recorder.stop }
    }
}
