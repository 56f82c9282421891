public import BrowserModel
public import JSONWriter

/// Playwright's `storageState` document (`{"cookies": [...], "origins": [{"origin", "localStorage":
/// [{"name", "value"}]}]}`) to and from a profile's ``StorageState``: what `GET` answers, `PUT` takes,
/// and the stores keep. One reader for all three, strict member by member (an unknown member, a wrong
/// type: ``ModelError/invalidStorageState(member:reason:)`` naming it; nothing half-read), and one
/// writer, in Playwright's member order, so a file it saved round-trips unchanged.
public enum StorageStateJSON {
    static let cookieMembers = ["name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite", "partitionKey", "_crHasCrossSiteAncestor"]

    /// Reads a document (not yet checked against Chromium's limits: ``StorageState/check(_:)``).
    public static func parse(_ document: JSONValue) throws -> StorageState {
        func fail(_ member: String, _ reason: String) -> ModelError { .invalidStorageState(member: member, reason: reason) }
        guard case .object(let members) = document else { throw fail("(body)", "must be a JSON object, not \(document.typeName)") }
        for (key, _) in members where key != "cookies" && key != "origins" {
            throw fail(key, "is not a member of a storage state (cookies, origins)")
        }
        var state = StorageState()
        // Both are required, as Playwright always writes both (a document without them is not one of its).
        guard let cookies = document["cookies"] else { throw fail("cookies", "is required (an empty array for none)") }
        guard let items = cookies.array else { throw fail("cookies", "must be an array, not \(cookies.typeName)") }
        for (index, item) in items.enumerated() { state.cookies.append(try cookie(item, at: "cookies[\(index)]")) }
        guard let origins = document["origins"] else { throw fail("origins", "is required (an empty array for none)") }
        guard let list = origins.array else { throw fail("origins", "must be an array, not \(origins.typeName)") }
        for (index, item) in list.enumerated() { state.origins.append(try origin(item, at: "origins[\(index)]")) }
        return state
    }

    /// Reads stored bytes (written by ``encode(_:)``).
    public static func parse(bytes: [UInt8]) throws -> StorageState {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw ModelError.invalidStorageState(member: "(stored)", reason: "is not JSON")
        }
        return try parse(value)
    }

    private static func cookie(_ value: JSONValue, at path: String) throws -> StorageState.Cookie {
        func fail(_ member: String, _ reason: String) -> ModelError { .invalidStorageState(member: "\(path)\(member)", reason: reason) }
        guard case .object(let members) = value else { throw fail("", "must be an object, not \(value.typeName)") }
        for (key, _) in members where !cookieMembers.contains(key) {
            throw fail(".\(key)", "is not a member of a cookie (\(cookieMembers.joined(separator: ", ")))")
        }
        // Every member Playwright writes is required; the partition's two are optional, as in its files.
        func string(_ key: String) throws -> String {
            guard let member = value[key] else { throw fail(".\(key)", "is required") }
            guard let text = member.string else { throw fail(".\(key)", "must be a string, not \(member.typeName)") }
            return text
        }
        func bool(_ key: String) throws -> Bool {
            guard let member = value[key] else { throw fail(".\(key)", "is required") }
            guard let flag = member.bool else { throw fail(".\(key)", "must be a boolean, not \(member.typeName)") }
            return flag
        }
        guard let expiresMember = value["expires"] else { throw fail(".expires", "is required (-1 for a session cookie)") }
        guard let expires = expiresMember.double else { throw fail(".expires", "must be a number, not \(expiresMember.typeName)") }
        guard let sameSite = StorageState.SameSite(rawValue: try string("sameSite")) else { throw fail(".sameSite", "must be Strict, Lax or None") }
        var partitionKey: String?
        if value["partitionKey"] != nil { partitionKey = try string("partitionKey") }
        var ancestor: Bool?
        if value["_crHasCrossSiteAncestor"] != nil { ancestor = try bool("_crHasCrossSiteAncestor") }
        return StorageState.Cookie(
            name: try string("name"), value: try string("value"), domain: try string("domain"), path: try string("path"), expires: expires,
            httpOnly: try bool("httpOnly"), secure: try bool("secure"), sameSite: sameSite, partitionKey: partitionKey, hasCrossSiteAncestor: ancestor)
    }

    private static func origin(_ value: JSONValue, at path: String) throws -> StorageState.Origin {
        func fail(_ member: String, _ reason: String) -> ModelError { .invalidStorageState(member: "\(path)\(member)", reason: reason) }
        guard case .object(let members) = value else { throw fail("", "must be an object, not \(value.typeName)") }
        for (key, _) in members where key != "origin" && key != "localStorage" {
            throw fail(".\(key)", key == "indexedDB" ? "is not kept (only cookies and localStorage are)" : "is not a member of an origin (origin, localStorage)")
        }
        guard let origin = value["origin"]?.string else { throw fail(".origin", "is required: a string") }
        var items: [StorageState.Item] = []
        guard let storage = value["localStorage"] else { throw fail(".localStorage", "is required (an empty array for none)") }
        guard let list = storage.array else { throw fail(".localStorage", "must be an array, not \(storage.typeName)") }
        for (index, item) in list.enumerated() {
            let at = ".localStorage[\(index)]"
            guard case .object(let pairs) = item else { throw fail(at, "must be an object, not \(item.typeName)") }
            for (key, _) in pairs where key != "name" && key != "value" { throw fail("\(at).\(key)", "is not a member of an item (name, value)") }
            guard let name = item["name"]?.string else { throw fail("\(at).name", "is required: a string") }
            guard let text = item["value"]?.string else { throw fail("\(at).value", "is required: a string") }
            items.append(StorageState.Item(name: name, value: text))
        }
        return StorageState.Origin(origin: origin, localStorage: items)
    }

    /// The document, in Playwright's member order.
    public static func encode(_ state: StorageState) -> [UInt8] {
        var json = JSONText(capacity: 64 + state.byteCount)
        write(state, to: &json)
        return json.bytes
    }

    public static func write(_ state: StorageState, to json: inout JSONText) {
        json.beginObject()
        json.key("cookies")
        json.beginArray()
        for cookie in state.cookies {
            json.beginObject()
            json.member("name", cookie.name)
            json.member("value", cookie.value)
            json.member("domain", cookie.domain)
            json.member("path", cookie.path)
            json.member("expires", cookie.expires)
            json.member("httpOnly", cookie.httpOnly)
            json.member("secure", cookie.secure)
            json.member("sameSite", cookie.sameSite.rawValue)
            if let key = cookie.partitionKey { json.member("partitionKey", key) }
            if let ancestor = cookie.hasCrossSiteAncestor { json.member("_crHasCrossSiteAncestor", ancestor) }
            json.endObject()
        }
        json.endArray()
        json.key("origins")
        json.beginArray()
        for origin in state.origins {
            json.beginObject()
            json.member("origin", origin.origin)
            json.key("localStorage")
            json.beginArray()
            for item in origin.localStorage {
                json.beginObject()
                json.member("name", item.name)
                json.member("value", item.value)
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }
}
