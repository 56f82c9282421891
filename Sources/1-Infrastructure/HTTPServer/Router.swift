/// A route table: path templates (`/v1/tabs/{tabId}`) with a responder per method.
///
/// Literal segments win over parameters at each level. `GET` routes also answer `HEAD`. A path that
/// matches a template but not its method resolves to ``Resolution/methodNotAllowed(allow:template:)``.
public struct Router: Sendable {
    /// The outcome of looking up a request.
    public enum Resolution: Sendable {
        case matched(Responder, parameters: [String: String], template: String)
        case notFound
        case methodNotAllowed(allow: [HTTPMethod], template: String)
    }

    private final class Node: @unchecked Sendable {
        // @unchecked Sendable: nodes are mutated only while the table is built (before the router is
        // shared), copied on write by `Router.add`, and read-only afterwards.
        var literals: [String: Node] = [:]
        var parameter: (name: String, node: Node)?
        var methods: [HTTPMethod: Responder] = [:]
        var template: String?

        func copy() -> Node {
            let node = Node()
            node.literals = literals.mapValues { $0.copy() }
            node.parameter = parameter.map { ($0.name, $0.node.copy()) }
            node.methods = methods
            node.template = template
            return node
        }
    }

    private var root = Node()
    /// Every (method, template) pair, in the order added.
    public private(set) var routes: [(method: HTTPMethod, template: String)] = []

    /// Answers the routing failures of paths under a prefix in that protocol's own words (a
    /// WebDriver remote end says `unknown command` and `unknown method` in its JSON).
    /// `allow` is nil for a path nothing serves, else the methods the path does serve.
    public typealias FailureResponder = @Sendable (_ request: HTTPRequest, _ allow: [HTTPMethod]?) -> HTTPResponse
    private var fallbacks: [(prefix: String, respond: FailureResponder)] = []

    /// Sets how a routing failure under `prefix` (a path equal to it or below it) is answered.
    public mutating func onFailure(under prefix: String, _ respond: @escaping FailureResponder) {
        fallbacks.append((prefix, respond))
    }

    /// The failure responder of `path`, if a prefix covers it (the longest prefix wins).
    public func failureResponder(for path: String) -> FailureResponder? {
        fallbacks.filter { path == $0.prefix || path.hasPrefix($0.prefix + "/") }.max { $0.prefix.count < $1.prefix.count }?.respond
    }

    public init() {}

    /// Adds a route.
    /// - Parameters:
    ///   - method: the method it answers.
    ///   - template: a path of `/`-separated segments; `{name}` marks a parameter segment.
    ///   - responder: what answers it.
    /// - Precondition: the same method and template are not added twice, and a level does not mix
    ///   two parameter names (a programming error in the route table).
    public mutating func add(_ method: HTTPMethod, _ template: String, _ responder: Responder) {
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        var node = root
        for segment in Self.segments(of: template) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") {
                let name = String(segment.dropFirst().dropLast())
                if let existing = node.parameter {
                    precondition(existing.name == name, "parameter {\(name)} clashes with {\(existing.name)} in \(template)")
                    node = existing.node
                } else {
                    let child = Node()
                    node.parameter = (name, child)
                    node = child
                }
            } else {
                if let child = node.literals[segment] {
                    node = child
                } else {
                    let child = Node()
                    node.literals[segment] = child
                    node = child
                }
            }
        }
        precondition(node.methods[method] == nil, "route \(method) \(template) added twice")
        node.methods[method] = responder
        node.template = template
        routes.append((method, template))
    }

    /// Adds an immediate `GET` route.
    public mutating func get(_ template: String, _ handler: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) {
        add(.get, template, .immediate(handler))
    }

    /// Looks a request up.
    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        var parameters: [String: String] = [:]
        guard let node = Self.match(root, Self.segments(of: path)[...], &parameters), let template = node.template else {
            return .notFound
        }
        if let responder = node.methods[method] {
            return .matched(responder, parameters: parameters, template: template)
        }
        if method == .head, let responder = node.methods[.get] {
            return .matched(responder, parameters: parameters, template: template)
        }
        var allow = Array(node.methods.keys)
        if node.methods[.get] != nil { allow.append(.head) }
        allow.sort { $0.rawValue < $1.rawValue }
        return .methodNotAllowed(allow: allow, template: template)
    }

    private static func match(_ node: Node, _ rest: ArraySlice<String>, _ parameters: inout [String: String]) -> Node? {
        guard let segment = rest.first else { return node.methods.isEmpty ? nil : node }
        if let child = node.literals[segment], let found = match(child, rest.dropFirst(), &parameters) {
            return found
        }
        if let (name, child) = node.parameter, !segment.isEmpty {
            let saved = parameters[name]
            parameters[name] = segment
            if let found = match(child, rest.dropFirst(), &parameters) { return found }
            parameters[name] = saved
        }
        return nil
    }

    /// `/a/b/` → ["a", "b", ""]: a trailing slash is its own (empty) segment, so `/a/` ≠ `/a`.
    /// (Split over the path's UTF-8 bytes: every request's lookup starts here, and the generic
    /// `split` cost 5% of a server's CPU per `GET`, perf in `bench/scale_out.py --hop-only`.)
    static func segments(of path: String) -> [String] {
        let utf8 = path.utf8
        var parts: [String] = []
        parts.reserveCapacity(8)
        var start = utf8.startIndex
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                parts.append(String(path[start..<index]))
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        parts.append(String(path[start..<utf8.endIndex]))
        if parts.first == "" { parts.removeFirst() }
        return parts
    }
}
