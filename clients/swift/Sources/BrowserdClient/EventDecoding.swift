import Foundation

/// How event data is read: the contract's JSON, dates as RFC 3339 (with or without fractions).
enum EventDecoding {
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            do { return try RFC3339Dates().decode(text) } catch {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 date: \(text)"))
            }
        }
        return decoder
    }()

    /// Whether the JSON object `json` has a top-level member `name`.
    static func hasMember(_ name: String, in json: Data) -> Bool {
        (try? JSONSerialization.jsonObject(with: json) as? [String: Any])?[name] != nil
    }
}
