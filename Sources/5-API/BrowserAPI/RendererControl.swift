public import BrowserModel
public import HTTPServer

/// browserd's calls to the renderer that holds a profile (its lease's gateway, with its key):
/// WebDriver's scripts and screenshots on a tab's real page. The API layer says what is asked; the
/// app carries it over the network (`HTTPRendererControl`), off the server's threads.
public protocol RendererControl: Sendable {
    /// Runs a WebDriver script in the tab's page.
    func execute(_ script: RendererScript, tab: TabID, lease: RendererLeases.Lease) async throws -> RendererScriptOutcome
    /// A PNG of the tab's page, base64 (nil: the renderer has no live page for it).
    func screenshot(tab: TabID, lease: RendererLeases.Lease) async throws -> String?
}

/// W3C Execute Script's body: a function body, its arguments, sync or async, and its timeout.
public struct RendererScript: Sendable, Equatable {
    public var script: String
    public var args: [JSONValue]
    public var isAsync: Bool
    public var timeoutMilliseconds: Int

    public init(script: String, args: [JSONValue], isAsync: Bool, timeoutMilliseconds: Int) {
        self.script = script
        self.args = args
        self.isAsync = isAsync
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The renderer's request body (`{"script", "args", "async", "timeoutMs"}`).
    public var body: [UInt8] {
        var json = JSONText(capacity: script.utf8.count + 64)
        json.beginObject()
        json.member("script", script)
        json.key("args")
        json.value(JSONValue.array(args))
        json.member("async", isAsync)
        json.member("timeoutMs", timeoutMilliseconds)
        json.endObject()
        return json.bytes
    }
}

public enum RendererScriptOutcome: Sendable, Equatable {
    /// The script's value, as JSON.
    case value(JSONValue)
    /// W3C's `javascript error` or `script timeout`, and the page's message.
    case error(name: String, message: String)
    /// The renderer has no live page for the tab.
    case noPage
}

/// Why a call to the renderer failed (not the script: the call).
public struct RendererControlError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension JSONText {
    /// Writes a parsed JSON value as it was.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): self.value(flag)
        case .number(let number, let isInteger):
            if isInteger, let integer = Int(exactly: number) { self.value(integer) } else { self.value(number) }
        case .string(let text): self.value(text)
        case .array(let items):
            beginArray()
            for item in items { self.value(item) }
            endArray()
        case .object(let members):
            beginObject()
            for (key, member) in members {
                self.key(key)
                self.value(member)
            }
            endObject()
        }
    }
}
