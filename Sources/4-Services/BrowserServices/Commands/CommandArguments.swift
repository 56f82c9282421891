import BrowserModel

/// Arguments of a command named at run time (`POST …/commands/{name}`): JSON-like values.
public enum CommandArgument: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
}

public typealias CommandArguments = [String: CommandArgument]

extension CommandArguments {
    func string(_ key: String, command: String, required: Bool = false) throws -> String? {
        switch self[key] {
        case .string(let value): return value
        case nil, .null?:
            if required { throw ModelError.invalidCommandArguments(command: command, reason: "'\(key)' is required") }
            return nil
        default: throw ModelError.invalidCommandArguments(command: command, reason: "'\(key)' must be a string")
        }
    }

    /// A string argument that must be there.
    func requiredString(_ key: String, command: String) throws -> String {
        guard let value = try string(key, command: command, required: true) else {
            throw ModelError.invalidCommandArguments(command: command, reason: "'\(key)' is required")
        }
        return value
    }

    func bool(_ key: String, command: String) throws -> Bool? {
        switch self[key] {
        case .bool(let value): return value
        case nil, .null?: return nil
        default: throw ModelError.invalidCommandArguments(command: command, reason: "'\(key)' must be a boolean")
        }
    }

    func only(_ keys: Set<String>, command: String) throws {
        if let unknown = self.keys.first(where: { !keys.contains($0) }) {
            throw ModelError.invalidCommandArguments(command: command, reason: "unknown argument '\(unknown)'")
        }
    }
}
