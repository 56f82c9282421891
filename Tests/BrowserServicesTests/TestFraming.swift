@testable import BrowserServices

/// The tests' wire format: the same lines as server-sent events (the real one is the HTTP edge's
/// `SSEFraming`, which BrowserServices does not know).
struct TestFraming: EventFraming {
    func frame(id: String, event: String, json: [UInt8]) -> [UInt8] {
        Array("id: \(id)\nevent: \(event)\ndata: ".utf8) + json + Array("\n\n".utf8)
    }
}
