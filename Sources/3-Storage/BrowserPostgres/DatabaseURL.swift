import Foundation

/// A PostgreSQL address as `--database-url` takes it:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
///
/// The password may come from a file instead (`--database-password-file`), so it stays out of the
/// process list and the environment. ``description`` never shows it.
public struct DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable {
        /// Plain TCP (a loopback or private-network server).
        case disable
        /// TLS when the server offers it (libpq's default).
        case prefer
        /// TLS or no connection, with the server's certificate verified.
        case require
    }

    public var username: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    public var tls: TLSMode

    /// Why a URL cannot be used.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses `text`.
    /// - Throws: ``Invalid`` saying what is wrong (never echoing the password).
    public init(_ text: String) throws {
        func invalid(_ why: String) -> Invalid { Invalid(description: "--database-url: \(why) (expected postgres://user:password@host:port/database)") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw invalid("not a URL")
        }
        guard scheme == "postgres" || scheme == "postgresql" else { throw invalid("the scheme must be postgres, not \(scheme)") }
        guard let host = components.host, !host.isEmpty else { throw invalid("no host") }
        guard let user = components.percentEncodedUser.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw invalid("no user name")
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw invalid("port \(port) is out of range") }
        var database = String(components.path.drop { $0 == "/" })
        database = database.removingPercentEncoding ?? database
        guard !database.contains("/") else { throw invalid("the path must be one database name") }
        var tls = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                    throw invalid("sslmode must be disable, prefer or require")
                }
                tls = mode
            default:
                throw invalid("unknown parameter \(item.name) (only sslmode is understood)")
            }
        }
        self.username = user
        self.password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        self.database = database.isEmpty ? user : database
        self.tls = tls
    }

    /// The address as a URL again, password included (for a child process; never log it).
    public var absoluteString: String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text }
        let password = self.password.map { ":" + encoded($0) } ?? ""
        return "postgres://\(encoded(username))\(password)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(encoded(database))?sslmode=\(tls.rawValue)"
    }

    /// The address with the password left out, for logs.
    public var description: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)?sslmode=\(tls.rawValue)"
    }
}
