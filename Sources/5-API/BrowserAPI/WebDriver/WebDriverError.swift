import HTTPServer

/// A W3C WebDriver error: its code string, its HTTP status, and the body
/// `{"value": {"error", "message", "stacktrace"}}` (exactly that: selenium unwraps a one-key object).
struct WebDriverError: Error {
    let code: String
    let status: Int
    let message: String

    static func invalidArgument(_ message: String) -> WebDriverError { WebDriverError(code: "invalid argument", status: 400, message: message) }
    static func invalidSessionID(_ id: String) -> WebDriverError {
        WebDriverError(code: "invalid session id", status: 404, message: "No active session with ID \(id)")
    }
    static func noSuchWindow(_ message: String = "The current window is closed; switch to another.") -> WebDriverError {
        WebDriverError(code: "no such window", status: 404, message: message)
    }
    static func unknownCommand(_ path: String) -> WebDriverError {
        WebDriverError(code: "unknown command", status: 404, message: "No command at \(path)")
    }
    static func unknownMethod(_ method: String, _ path: String) -> WebDriverError {
        WebDriverError(code: "unknown method", status: 405, message: "\(path) does not answer \(method)")
    }
    static func sessionNotCreated(_ message: String) -> WebDriverError { WebDriverError(code: "session not created", status: 500, message: message) }
    static func unsupportedOperation(_ message: String) -> WebDriverError {
        WebDriverError(code: "unsupported operation", status: 500, message: message)
    }
    static func unknownError(_ message: String) -> WebDriverError { WebDriverError(code: "unknown error", status: 500, message: message) }
    /// Storage could not be read or written for the command: nothing changed. WebDriver has no code
    /// of its own for it; the status says "retry later" as the REST API's 503 does.
    static func storageUnavailable(_ message: String) -> WebDriverError { WebDriverError(code: "unknown error", status: 503, message: message) }

    var response: HTTPResponse {
        var json = JSONText(capacity: 256)
        json.beginObject()
        json.key("value")
        json.beginObject()
        json.member("error", code)
        json.member("message", message)
        json.member("stacktrace", "")
        json.endObject()
        json.endObject()
        return WebDriverRoutes.answer(json.bytes, status: status)
    }
}
