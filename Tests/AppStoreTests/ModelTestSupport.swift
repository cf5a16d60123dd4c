import AppStore
import Foundation

// What the model suites share: a body from text, and encoding through AppStoreJSON.

func json(_ text: String) -> Data { Data(text.utf8) }

func encodedString<T: Encodable>(_ value: T) throws -> String {
    String(decoding: try AppStoreJSON.encode(value), as: UTF8.self)
}

func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
    try AppStoreJSON.decode(T.self, from: AppStoreJSON.encode(value))
}
