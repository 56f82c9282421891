import Foundation
import HTTPServer

/// A JSON object body with typed, checked accessors. Every problem becomes a 400 (not JSON, or not an
/// object) or a 422 (a member of the wrong type or out of range) whose detail names the member.
struct RequestBody {
    private let members: [String: JSONValue]

    /// Parses the request's body as a JSON object whose members are all in `allowed` (a short list:
    /// searched in order, which costs less than hashing into a set made for each request).
    /// An empty body counts as `{}`. A body that is not `application/json` gets 415.
    init(_ request: HTTPRequest, allowed: [String]) throws {
        if request.body.isEmpty {
            members = [:]
            return
        }
        let contentType = request.headers["Content-Type"] ?? ""
        guard Self.isJSON(contentType) else {
            throw APIProblem.unsupportedMediaType(contentType.isEmpty ? "none" : contentType.lowercased())
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(request.body)
        } catch let error as JSONParser.SyntaxError {
            throw APIProblem.malformedJSON("\(error.message) at byte \(error.offset)")
        }
        guard case .object(let list) = value else {
            throw APIProblem.malformedJSON("the body must be a JSON object, not \(value.typeName)")
        }
        if let path = Self.unstorableText(in: value, path: "") {
            throw APIProblem.invalidField(path, "contains U+0000 (NUL), which browserd does not store: remove it")
        }
        var members: [String: JSONValue] = [:]
        for (key, value) in list {
            guard allowed.contains(key) else {
                throw APIProblem.invalidField(key, "is not a known member (allowed: \(allowed.sorted().joined(separator: ", ")))")
            }
            members[key] = value
        }
        self.members = members
    }

    /// The path (`title`, `args.items[2]`) of the first string or member name holding text that no store
    /// keeps exactly — U+0000: PostgreSQL's text cannot hold it and C APIs end a string there — or nil.
    /// Refused here, at the edge, it is never discovered in a commit shared with other profiles.
    static func unstorableText(in value: JSONValue, path: String) -> String? {
        switch value {
        case .string(let text):
            return text.utf8.contains(0) ? (path.isEmpty ? "(body)" : path) : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = unstorableText(in: item, path: "\(path)[\(index)]") { return found }
            }
            return nil
        case .object(let members):
            for (key, member) in members {
                let memberPath = path.isEmpty ? key : "\(path).\(key)"
                if key.utf8.contains(0) { return memberPath }
                if let found = unstorableText(in: member, path: memberPath) { return found }
            }
            return nil
        case .null, .bool, .number:
            return nil
        }
    }

    /// Whether a `Content-Type` value names JSON (``MediaType/isJSON(_:)``, which the HTTP edge's
    /// cross-site check uses too).
    static func isJSON(_ contentType: String) -> Bool { MediaType.isJSON(contentType) }

    func has(_ key: String) -> Bool { members[key] != nil }

    /// Whether the member is present and explicitly null.
    func isNull(_ key: String) -> Bool { members[key] == .null }

    func string(_ key: String, maxLength: Int = 1_024, required: Bool = false) throws -> String? {
        switch members[key] {
        case nil:
            if required { throw APIProblem.invalidField(key, "is required") }
            return nil
        case .string(let value)?:
            guard value.unicodeScalars.count <= maxLength else {
                throw APIProblem.invalidField(key, "is longer than \(maxLength) characters (Unicode code points, as JSON Schema counts)")
            }
            return value
        case .null?:
            throw Self.nullNotAllowed(key)
        case let other?:
            throw APIProblem.invalidField(key, "must be a string, not \(other.typeName)")
        }
    }

    /// A member that must be there: a string of at most `maxLength` code points.
    func requiredString(_ key: String, maxLength: Int = 1_024) throws -> String {
        guard let value = try string(key, maxLength: maxLength, required: true) else { throw APIProblem.invalidField(key, "is required") }
        return value
    }

    /// A member that must be there: an integer within `range`.
    func requiredInt(_ key: String, range: ClosedRange<Int>) throws -> Int {
        guard let value = try int(key, range: range, required: true) else { throw APIProblem.invalidField(key, "is required") }
        return value
    }

    /// A member that must be there: an array of strings.
    func requiredStrings(_ key: String, maxCount: Int = 10_000) throws -> [String] {
        guard let value = try strings(key, maxCount: maxCount, required: true) else { throw APIProblem.invalidField(key, "is required") }
        return value
    }

    func int(_ key: String, range: ClosedRange<Int>, required: Bool = false) throws -> Int? {
        switch members[key] {
        case nil:
            if required { throw APIProblem.invalidField(key, "is required") }
            return nil
        case .number(let value, let isInteger)?:
            guard isInteger || value == value.rounded(), value.magnitude < 1e15 else {
                throw APIProblem.invalidField(key, "must be an integer")
            }
            let int = Int(value)
            guard range.contains(int) else {
                throw APIProblem.invalidField(key, "must be from \(range.lowerBound) to \(range.upperBound), got \(int)")
            }
            return int
        case .null?:
            throw Self.nullNotAllowed(key)
        case let other?:
            throw APIProblem.invalidField(key, "must be an integer, not \(other.typeName)")
        }
    }

    func double(_ key: String, range: ClosedRange<Double>) throws -> Double? {
        switch members[key] {
        case nil: return nil
        case .number(let value, _)?:
            guard range.contains(value) else {
                throw APIProblem.invalidField(key, "must be from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        case .null?:
            throw Self.nullNotAllowed(key)
        case let other?:
            throw APIProblem.invalidField(key, "must be a number, not \(other.typeName)")
        }
    }

    func bool(_ key: String) throws -> Bool? {
        switch members[key] {
        case nil: return nil
        case .bool(let value)?: return value
        case .null?:
            throw Self.nullNotAllowed(key)
        case let other?: throw APIProblem.invalidField(key, "must be a boolean, not \(other.typeName)")
        }
    }

    func strings(_ key: String, maxCount: Int = 10_000, required: Bool = false) throws -> [String]? {
        switch members[key] {
        case nil:
            if required { throw APIProblem.invalidField(key, "is required") }
            return nil
        case .array(let items)?:
            guard items.count <= maxCount else { throw APIProblem.invalidField(key, "has more than \(maxCount) items") }
            return try items.map {
                guard case .string(let value) = $0, value.unicodeScalars.count <= 256 else {
                    throw APIProblem.invalidField(key, "must be an array of ids (strings)")
                }
                return value
            }
        case .null?:
            throw Self.nullNotAllowed(key)
        case let other?:
            throw APIProblem.invalidField(key, "must be an array, not \(other.typeName)")
        }
    }

    /// Members given as null where the contract does not allow it are refused like any wrong type.
    private static func nullNotAllowed(_ key: String) -> HTTPError {
        APIProblem.invalidField(key, "must not be null (leave it out instead)")
    }

    /// The raw value of a member (for open-ended members such as command arguments).
    func value(_ key: String) -> JSONValue? { members[key] }
}
