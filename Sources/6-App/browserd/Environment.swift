#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads `BROWSERD_*` variables, the second source of every option.
enum Environment {
    static func value(_ name: String) -> String? {
        guard let raw = getenv(name) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }
}

/// An option given neither on the command line nor in the environment takes its default; a value
/// in the environment that does not parse is an error that names the variable.
struct EnvironmentError: Error, CustomStringConvertible {
    let description: String
}

func resolve<T>(_ flag: T?, _ variable: String, default defaultValue: T, parse: (String) -> T?) throws -> T {
    if let flag { return flag }
    guard let text = Environment.value(variable) else { return defaultValue }
    guard let value = parse(text) else {
        throw EnvironmentError(description: "\(variable)=\(text) is not a valid value")
    }
    return value
}
