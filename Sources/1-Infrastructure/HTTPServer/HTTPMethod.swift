#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP request method, kept as the client sent it (methods are case-sensitive, RFC 9110 §9.1).
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let patch = HTTPMethod("PATCH")
    public static let delete = HTTPMethod("DELETE")
    public static let options = HTTPMethod("OPTIONS")
    public static let trace = HTTPMethod("TRACE")
    public static let connect = HTTPMethod("CONNECT")
    /// The safe method with a body (draft-ietf-httpbis-safe-method-w-body), registered with IANA.
    public static let query = HTTPMethod("QUERY")

    /// The methods of RFC 9110, PATCH and QUERY, as the client spelled them (a route answers 405 to those it
    /// does not declare); nil for any other, which is answered 501 before anything is kept or counted
    /// under its name.
    static func known(_ raw: UnsafePointer<CChar>) -> HTTPMethod? {
        for method in [get, post, patch, delete, put, head, options, trace, connect, query] where strcmp(raw, method.rawValue) == 0 { return method }
        return nil
    }
}
