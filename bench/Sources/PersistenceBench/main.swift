// Persistence benchmark: durable change throughput of the group-committing writer with 64 concurrent
// clients, side by side with two raw SQLite baselines on the same disk (one transaction per insert,
// all inserts in one transaction), then restore of 100,000 tabs with 10 history entries each.
// Run in release: `swift run -c release PersistenceBench [directory]`.
//
// `PersistenceBench seed DATA_DIR PROFILES WINDOWS TABS` instead writes a browserd database of
// PROFILES × WINDOWS × TABS tabs with 10 history entries each into DATA_DIR (for bench/big_session.py,
// which starts browserd on it and measures its restore time and memory).
import BrowserPersistence
import BrowserRecords
import BrowserServices
import Foundation
import SQLite

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : FileManager.default.temporaryDirectory.path
func scratch(_ name: String) -> String {
    let path = (directory as NSString).appendingPathComponent("bench-\(name)-\(UUID().uuidString).sqlite")
    return path
}
func cleanup(_ path: String) { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
func peakRSSMiB() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kb = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kb / 1024
}

let clock = ContinuousClock()
let time = Date()
let history = (0..<10).map { HistoryEntryRecord(url: "https://site.example/article/\($0)?ref=bench", title: "Article \($0)", transition: "link", timestamp: time) }
func tab(_ id: String) -> TabRecord {
    TabRecord(
        id: id, groupID: nil, openerID: nil, openerNavigationIndex: nil, title: "A reasonably long page title", loading: false,
        progress: 1, faviconURL: "https://site.example/favicon.ico", createdAt: time, lastActiveAt: time, historyIndex: 9, history: history)
}

if CommandLine.arguments.count == 6, CommandLine.arguments[1] == "seed",
    let profiles = Int(CommandLine.arguments[3]), let windows = Int(CommandLine.arguments[4]), let tabs = Int(CommandLine.arguments[5])
{
    try seed(directory: CommandLine.arguments[2], profiles: profiles, windows: windows, tabs: tabs)
    exit(0)
}

/// Writes a database as browserd keeps it: every tab with its own URLs (10 entries), one transaction
/// per window.
func seed(directory: String, profiles: Int, windows: Int, tabs: Int) throws {
    let historyEntries = Int(ProcessInfo.processInfo.environment["SEED_HISTORY"] ?? "") ?? 10
    // SEED_LONG=1: URLs of ~110 bytes and titles of ~55, as real pages have (issue 38's second shape).
    let long = ProcessInfo.processInfo.environment["SEED_LONG"] == "1"
    func url(_ p: Int, _ w: Int, _ t: Int, _ entry: Int) -> String {
        long
            ? "https://www.site\(t % 997).example.com/section/\(p)/\(w)/\(t)/a-long-article-slug-number-\(entry)?utm_source=bench&utm_medium=x"
            : "https://site\(t % 997).example/\(p)/\(w)/\(t)/article-\(entry)?ref=bench"
    }
    func title(_ t: Int, _ entry: Int) -> String {
        long ? "Article \(entry) of tab \(t): a longer title, as real pages have" : "Article \(entry) of tab \(t)"
    }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = (directory as NSString).appendingPathComponent("browserd.sqlite")
    cleanup(path)
    let store = try PersistenceStore(path: path)
    let start = clock.now
    for p in 0..<profiles {
        let profile = String(format: "p%016x", p + 1)
        var header = ChangeSet()
        header.profiles = [ProfileRecord(id: profile, name: "profile \(p)", createdAt: time.addingTimeInterval(Double(p)))]
        try store.apply([header])
        for w in 0..<windows {
            let window = String(format: "w%08x%08x", p, w)
            var change = ChangeSet()
            change.windows = [
                WindowRecord(
                    id: window, profileID: profile, version: 1, tabOrder: [], activeIndex: 0, pinnedCount: 0,
                    groups: [], createdAt: time.addingTimeInterval(Double(p * windows + w)), lastActiveAt: time)
            ]
            change.tabs = (0..<tabs).map { t in
                let id = String(format: "t%05x%05x%05x", p, w, t)
                let entries = (0..<historyEntries).map {
                    HistoryEntryRecord(url: url(p, w, t, $0), title: title(t, $0), transition: "link", timestamp: time)
                }
                var record = TabRecord(
                    id: id, groupID: nil, openerID: nil, openerNavigationIndex: nil, title: title(t, historyEntries - 1),
                    loading: false, progress: 1, faviconURL: "https://site\(t % 997).example/favicon.ico", createdAt: time,
                    lastActiveAt: time, historyIndex: historyEntries - 1, history: entries)
                record.position = Double(t + 1) * 1024
                return (window, record)
            }
            try store.apply([change])
        }
        print("seeded \(p + 1)/\(profiles) profiles (\((p + 1) * windows * tabs) tabs) in \(String(format: "%.1f", seconds(clock.now - start))) s")
    }
}

// Baselines: raw SQLite, WAL + synchronous=FULL, one row of similar size per insert.
let blob = [UInt8](repeating: 7, count: 600)
var baselineOne = 0.0
var baselineAll = 0.0
do {
    let path = scratch("baseline")
    defer { cleanup(path) }
    let db = try SQLiteConnection(path: path)
    try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id TEXT PRIMARY KEY, body BLOB)")
    let insert = try db.prepare("INSERT INTO t (id, body) VALUES (?, ?)")
    let n1 = 1_000
    var start = clock.now
    for i in 0..<n1 { try db.transaction { try insert.run("a\(i)", blob) } }
    baselineOne = Double(n1) / seconds(clock.now - start)
    let n2 = 50_000
    start = clock.now
    try db.transaction { for i in 0..<n2 { try insert.run("b\(i)", blob) } }
    baselineAll = Double(n2) / seconds(clock.now - start)
}

// The writer: 64 concurrent clients, each change = a window row + one tab upsert (an open-tab).
var writerRate = 0.0
var perCommit = 0.0
do {
    let path = scratch("writer")
    defer { cleanup(path) }
    let writer = StoreWriter(store: try PersistenceStore(path: path))
    var setup = ChangeSet()
    setup.profiles = [ProfileRecord(id: "p0", name: "bench", createdAt: time)]
    setup.windows = (0..<64).map {
        WindowRecord(
            id: "w\($0)", profileID: "p0", version: 1, tabOrder: [], activeIndex: -1, pinnedCount: 0,
            groups: [], createdAt: time, lastActiveAt: time)
    }
    try await writer.submit(setup)
    let perClient = 150
    let start = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for client in 0..<64 {
            group.addTask {
                for i in 0..<perClient {
                    var change = ChangeSet()
                    let id = "t\(client)-\(i)"
                    change.windows = [
                        WindowRecord(
                            id: "w\(client)", profileID: "p0", version: i + 2, tabOrder: [id], activeIndex: 0,
                            pinnedCount: 0, groups: [], createdAt: time, lastActiveAt: time)
                    ]
                    change.tabs = [("w\(client)", tab(id))]
                    try await writer.submit(change)
                }
            }
        }
        try await group.waitForAll()
    }
    writerRate = Double(64 * perClient) / seconds(clock.now - start)
    let stats = writer.statistics
    perCommit = Double(stats.changes) / Double(max(1, stats.commits))
    await writer.stop()
}

print("\nPersistence: durable changes on this disk (WAL, synchronous=FULL), one run")
print(String(format: "  group-commit writer, 64 clients: %8.0f changes/s (%.1f changes per commit)", writerRate, perCommit))
print(String(format: "  baseline, one transaction per insert: %8.0f inserts/s   -> writer is %.1fx", baselineOne, writerRate / baselineOne))
print(String(format: "  baseline, all inserts in one transaction: %8.0f inserts/s", baselineAll))

// Restore: 100,000 tabs with 10 history entries each (1,000 windows × 100 tabs).
do {
    let path = scratch("restore")
    defer { cleanup(path) }
    do {
        let store = try PersistenceStore(path: path)
        var change = ChangeSet()
        change.profiles = [ProfileRecord(id: "p0000000000000001", name: "bench", createdAt: time)]
        for w in 0..<1_000 {
            let window = String(format: "w%016x", w)
            let ids = (0..<100).map { String(format: "t%08x%08x", w, $0) }
            change.windows.append(
                WindowRecord(
                    id: window, profileID: "p0000000000000001", version: 1, tabOrder: ids, activeIndex: 0,
                    pinnedCount: 0, groups: [], createdAt: time, lastActiveAt: time))
            change.tabs += ids.map { (window, tab($0)) }
        }
        try store.apply([change])
    }
    let size = ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.doubleValue ?? 0
    let before = peakRSSMiB()
    // As browserd does it: the windows first, their tabs read on another thread while the model is rebuilt.
    let startOverlapped = clock.now
    var summary = BrowserService.RestoreSummary()
    do {
        let store = try PersistenceStore(path: path)
        let structure = try store.load(includingTabs: false)
        let feed = TabFeed(store: store, windows: BrowserService.restoreOrder(structure))
        summary = try await BrowserService(limits: .init(windowsPerProfile: 10_000), storedTabs: NothingStored(), framing: NoStreams()).restore(structure) {
            try feed.tabs(ofWindow: $0)
        }
        feed.finish()
    }
    let overlapped = clock.now - startOverlapped
    let peak = peakRSSMiB()
    // Baseline in the same run: read everything, then rebuild.
    let start = clock.now
    let stored = try PersistenceStore(path: path).load()
    let loaded = clock.now
    _ = try await BrowserService(limits: .init(windowsPerProfile: 10_000), storedTabs: NothingStored(), framing: NoStreams()).restore(stored)
    let sequential = clock.now
    print(String(format: "\nRestore: %d tabs in %d windows, 10 history entries each (database %.0f MiB)", summary.tabs, summary.windows, size / 1_048_576))
    print(String(format: "  overlapped (as browserd starts): %.2f s, peak RSS %.0f MiB (%.0f MiB before)", seconds(overlapped), peak, before))
    print(
        String(
            format: "  baseline, read then rebuild: load %.2f s + rebuild %.2f s = %.2f s",
            seconds(loaded - start), seconds(sequential - loaded), seconds(sequential - start)))
}

/// The restore bench opens no event stream; its service still needs a wire format.
struct NoStreams: EventFraming {
    func frame(id: String, event: String, json: [UInt8]) -> [UInt8] { json }
}
