// JSONBench: the JSON writer (JSONText) against Foundation's JSONEncoder on the same value, a tab
// as the API answers it, in one run. It backs JSONText's claim of being several times faster.
// Usage: JSONBench [ITERATIONS]
import Foundation
import JSONWriter

struct Tab: Encodable {
    var id = "t0123456789abcdef"
    var browserId = "w0123456789abcdef"
    var index = 12
    var url = "https://www.example.com/path/to/page?query=\"quoted\"&x=1"
    var title = "Example Domain — a page with a longer title, é and 😀"
    var pinned = false
    var groupId: String? = nil
    var openerTabId: String? = "t0000000000000001"
    var active = true
    var loading = false
    var progress = 0.75
    var canGoBack = true
    var canGoForward = false
    var historyIndex = 3
    var historyCount = 5
}

func writeTab(_ tab: Tab) -> [UInt8] {
    var json = JSONText(capacity: 512)
    json.beginObject()
    json.member("id", tab.id)
    json.member("browserId", tab.browserId)
    json.member("index", tab.index)
    json.member("url", tab.url)
    json.member("title", tab.title)
    json.member("pinned", tab.pinned)
    json.member("groupId", tab.groupId)
    json.member("openerTabId", tab.openerTabId)
    json.member("active", tab.active)
    json.member("loading", tab.loading)
    json.member("progress", tab.progress)
    json.member("canGoBack", tab.canGoBack)
    json.member("canGoForward", tab.canGoForward)
    json.member("historyIndex", tab.historyIndex)
    json.member("historyCount", tab.historyCount)
    json.endObject()
    return json.bytes
}

func measure(_ name: String, iterations: Int, _ body: () throws -> Int) rethrows -> Double {
    var sink = 0
    for _ in 0..<(iterations / 10) { sink &+= try body() }  // warm-up
    let start = ContinuousClock.now
    for _ in 0..<iterations { sink &+= try body() }
    let elapsed = ContinuousClock.now - start
    let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    let perOp = ns / Double(iterations)
    print("  \(name.padding(toLength: 34, withPad: " ", startingAt: 0)) \(String(format: "%8.0f", perOp)) ns/op  (checksum \(sink % 10))")
    return perOp
}

let iterations = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 200_000
let tab = Tab()
let list = Array(repeating: tab, count: 100)
let encoder = JSONEncoder()
print("JSON: one tab and a 100-tab list, \(iterations) iterations (same values, same run)")
let oneWriter = measure("JSONText, one tab", iterations: iterations) { writeTab(tab).count }
let oneEncoder = try measure("JSONEncoder, one tab", iterations: iterations) { try encoder.encode(tab).count }
let listWriter = measure("JSONText, 100 tabs", iterations: iterations / 100) {
    var json = JSONText(capacity: 64 * 1024)
    json.beginArray()
    for item in list { json.raw(writeTab(item)) }
    json.endArray()
    return json.bytes.count
}
let listEncoder = try measure("JSONEncoder, 100 tabs", iterations: iterations / 100) { try encoder.encode(list).count }
print(String(format: "  JSONText is %.1fx faster for one tab, %.1fx for 100 tabs", oneEncoder / oneWriter, listEncoder / listWriter))
// Both say the same thing (JSONEncoder leaves out the nil member; the writer writes null).
let written = try JSONSerialization.jsonObject(with: Data(writeTab(tab))) as! [String: Any]
let encoded = try JSONSerialization.jsonObject(with: encoder.encode(tab)) as! [String: Any]
precondition(written.count == 15 && encoded.allSatisfy { "\(written[$0.key]!)" == "\($0.value)" }, "the two encodings differ")
