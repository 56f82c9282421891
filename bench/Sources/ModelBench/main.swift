// Model benchmark: per-operation cost on a 1,000-tab window, side by side with a baseline measured in
// the same run (the same insert/remove/move on a plain Swift array of 1,000 objects), and memory per
// tab with 10 history entries. Run in release: `swift run -c release ModelBench`.
import BrowserModel
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

var rng = SystemRandomNumberGenerator()

func median(_ samples: [Duration]) -> Double {
    let sorted = samples.sorted()
    let d = sorted[sorted.count / 2].components
    return Double(d.seconds) * 1e9 + Double(d.attoseconds) / 1e9
}

func p99(_ samples: [Duration]) -> Double {
    let sorted = samples.sorted()
    let d = sorted[min(sorted.count - 1, sorted.count * 99 / 100)].components
    return Double(d.seconds) * 1e9 + Double(d.attoseconds) / 1e9
}

func makeTab(_ i: Int, history: Int = 1) -> WebState {
    let tab = WebState()
    // A new tab is realized: navigating it cannot throw.
    for h in 0..<history { try! tab.navigate(to: "https://site\(i % 97).example/page/\(i)/\(h)", transition: .link) }
    return tab
}

/// A 1,000-tab window: 10 pinned, 30 groups of 10, the rest ungrouped, some openers, one active.
func makeWindow(groups: Bool) throws -> WebStateList {
    let list = WebStateList()
    for i in 0..<1_000 { try list.insert(makeTab(i), .automatic().pinned(i < 10)) }
    if groups {
        for g in 0..<30 { try list.createGroup(indices: Set((100 + g * 20)..<(110 + g * 20))) }
    }
    for i in stride(from: 11, to: 1_000, by: 7) { try list.setOpener(list.webState(at: i - 1), at: i) }
    try list.activate(at: 500)
    return list
}

struct Row {
    let name: String
    let median: Double
    let p99: Double
    let baseline: Double?
}

func measure(_ iterations: Int, _ body: () throws -> Duration) rethrows -> [Duration] {
    var samples: [Duration] = []
    samples.reserveCapacity(iterations)
    for _ in 0..<iterations { samples.append(try body()) }
    return samples
}

let clock = ContinuousClock()
let iterations = 20_000
var rows: [Row] = []

for grouped in [false, true] {
    let list = try makeWindow(groups: grouped)
    let suffix = grouped ? " (30 groups)" : ""
    var baseline: [AnyObject] = (0..<1_000).map { _ in WebState() }

    let insert = try measure(iterations) {
        let tab = WebState()
        let index = Int.random(in: list.pinnedCount...list.count, using: &rng)
        let start = clock.now
        try list.insert(tab, .atIndex(index))
        let elapsed = clock.now - start
        try list.close(at: list.index(of: tab))
        return elapsed
    }
    let baselineInsert = measure(iterations) {
        let index = Int.random(in: 0...baseline.count, using: &rng)
        let start = clock.now
        baseline.insert(WebState(), at: index)
        let elapsed = clock.now - start
        baseline.remove(at: index)
        return elapsed
    }
    rows.append(Row(name: "insert at index" + suffix, median: median(insert), p99: p99(insert), baseline: median(baselineInsert)))

    let automatic = try measure(iterations) {
        let tab = WebState()
        let opener = list.webState(at: Int.random(in: 10..<list.count, using: &rng))
        let start = clock.now
        try list.insert(tab, .automatic().withOpener(opener))
        let elapsed = clock.now - start
        try list.close(at: list.index(of: tab))
        return elapsed
    }
    rows.append(Row(name: "insert with opener" + suffix, median: median(automatic), p99: p99(automatic), baseline: nil))

    let close = try measure(iterations) {
        var index = Int.random(in: list.pinnedCount..<list.count, using: &rng)
        if index == list.activeIndex { index = list.pinnedCount }
        let tab = list.webState(at: index)!
        let group = list.group(at: index)
        let start = clock.now
        try list.close(at: index)
        let elapsed = clock.now - start
        try list.insert(tab, .atIndex(index).inGroup(group.flatMap { list.containsGroup($0) ? $0 : nil }))
        return elapsed
    }
    let baselineRemove = measure(iterations) {
        let index = Int.random(in: 0..<baseline.count, using: &rng)
        let start = clock.now
        let object = baseline.remove(at: index)
        let elapsed = clock.now - start
        baseline.insert(object, at: index)
        return elapsed
    }
    rows.append(Row(name: "close (not active)" + suffix, median: median(close), p99: p99(close), baseline: median(baselineRemove)))

    let move = try measure(iterations) {
        let from = Int.random(in: list.pinnedCount..<list.count, using: &rng)
        let to = Int.random(in: list.pinnedCount..<list.count, using: &rng)
        let start = clock.now
        try list.move(from: from, to: to)
        return clock.now - start
    }
    let baselineMove = measure(iterations) {
        let from = Int.random(in: 0..<baseline.count, using: &rng)
        let to = Int.random(in: 0..<baseline.count, using: &rng)
        let start = clock.now
        let object = baseline.remove(at: from)
        baseline.insert(object, at: to)
        return clock.now - start
    }
    rows.append(Row(name: "move" + suffix, median: median(move), p99: p99(move), baseline: median(baselineMove)))

    let activate = try measure(iterations) {
        let index = Int.random(in: 0..<list.count, using: &rng)
        let start = clock.now
        try list.activate(at: index)
        return clock.now - start
    }
    rows.append(Row(name: "activate" + suffix, median: median(activate), p99: p99(activate), baseline: nil))

    let nextActive = try measure(iterations) {
        if list.activeIndex < 0 { try list.activate(at: Int.random(in: 0..<list.count, using: &rng)) }
        let index = list.activeIndex
        let tab = list.activeWebState!
        let pinned = list.isPinned(at: index)
        let group = list.group(at: index)
        let start = clock.now
        try list.close(at: index)
        let elapsed = clock.now - start
        try list.insert(tab, .atIndex(index).pinned(pinned && group == nil).inGroup(group.flatMap { list.containsGroup($0) ? $0 : nil }))
        return elapsed
    }
    rows.append(Row(name: "close active (next-active)" + suffix, median: median(nextActive), p99: p99(nextActive), baseline: nil))
    precondition(list.invariantViolations().isEmpty, "benchmark broke the list: \(list.invariantViolations())")
}

print("\nModel: operations on a 1,000-tab window (10 pinned), \(iterations) samples each, release build")
print(
    "\("operation".padding(toLength: 40, withPad: " ", startingAt: 0)) \("median µs".padding(toLength: 10, withPad: " ", startingAt: 0)) \("p99 µs".padding(toLength: 9, withPad: " ", startingAt: 0)) baseline µs (Array<AnyObject> of 1,000)"
)
for row in rows {
    let base = row.baseline.map { String(format: "%.3f", $0 / 1000) } ?? "-"
    print(
        "\(row.name.padding(toLength: 40, withPad: " ", startingAt: 0)) \(String(format: "%-10.3f", row.median / 1000)) \(String(format: "%-9.3f", row.p99 / 1000)) \(base)"
    )
}

// Memory per tab with 10 history entries.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    return (Int(text.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}
let before = residentBytes()
let tabs = 100_000
var windows: [WebStateList] = []
for w in 0..<(tabs / 1_000) {
    let list = WebStateList()
    for i in 0..<1_000 { try list.insert(makeTab(w * 1_000 + i, history: 10)) }
    windows.append(list)
}
let after = residentBytes()
print(
    String(
        format: "memory: %d tabs with 10 history entries each: %.0f bytes per tab (RSS delta %.1f MiB)",
        tabs, Double(after - before) / Double(tabs), Double(after - before) / 1_048_576))
withExtendedLifetime(windows) {}
