import BrowserAPI
import BrowserModel
import BrowserRecords
import BrowserServices
import FirefoxSession
import Foundation

/// What the fuzz targets (`make fuzz`: libFuzzer, coverage-guided) and the corpus replay in the test
/// suite run on one input: everything an imported file goes through before it is stored, then the
/// encoders that write it out again. Input that is refused is fine; a trap, or a precondition below
/// failing, is a finding.
///
/// - ``firefox(_:)``: a Firefox session (mozLz4-framed, or its JSON) read, built into a profile by the
///   model's operations, and written as a profile document that must read back.
/// - ``profileDocument(_:)``: a profile document read window by window, checked as a load rebuilds
///   it, and written again: what was accepted must write and read back the same.
public enum ImportFuzzing {
    /// The decoded bytes a fuzzed file may reach (small: the fuzzer explores shapes, not sizes).
    public static let maxDecodedBytes = 1 << 20

    public static func firefox(_ data: [UInt8]) {
        let limits = ModelLimits()
        guard
            let session = try? FirefoxSessionReader.read(
                data, isJSON: !MozLz4.isFramed(data), maxDecodedBytes: maxDecodedBytes, limits: limits)
        else { return }
        precondition(session.warnings.count <= ImportWarning.listed, "the reader lists at most \(ImportWarning.listed) warnings")
        guard let built = try? SessionImportBuilder(limits: limits).build(session, name: "fuzz") else { return }
        precondition(built.warnings.count <= ImportWarning.listed + 1, "an import lists at most \(ImportWarning.listed) warnings and a count")
        var tabs: [String: [TabRecord]] = [:]
        for (window, tab) in built.tabs { tabs[window, default: []].append(tab) }
        let document = write(built.profile, closed: built.closed, windows: built.windows, tabs: tabs)
        guard let reread = read(document) else {
            preconditionFailure("the profile built of a session does not read back as a profile document")
        }
        precondition(reread.windows.count == built.windows.count && reread.tabs == built.tabs.count, "the document lost windows or tabs")
    }

    public static func profileDocument(_ data: [UInt8]) {
        guard let first = read(data) else { return }
        // What was accepted writes out and reads back; written again, it is the same (times keep
        // whole milliseconds once written, so the first writing may round them).
        guard let second = read(write(first)) else { preconditionFailure("an accepted document does not read back once written") }
        guard let third = read(write(second)) else { preconditionFailure("a written document does not read back") }
        precondition(third.profile == second.profile, "the profile changed on its way out and in")
        precondition(third.windows == second.windows && third.tabsByWindow == second.tabsByWindow, "a window changed on its way out and in")
        precondition(third.closed == second.closed, "a closed entry changed on its way out and in")
    }

    static func write(_ read: Read) -> [UInt8] { write(read.profile, closed: read.closed, windows: read.windows, tabs: read.tabsByWindow) }

    /// A document as an import reads it: nil where it is refused.
    struct Read {
        var profile: ProfileRecord
        var closed: [ClosedEntryRecord]
        var windows: [WindowRecord]
        var tabsByWindow: [String: [TabRecord]]
        var tabs: Int { tabsByWindow.values.reduce(0) { $0 + $1.count } }
    }

    /// Reads `data` as the import does (``ProfileDocument/Validated``: the same checks, in the same
    /// code): nil where the import refuses it.
    static func read(_ data: [UInt8]) -> Read? {
        guard let document = try? ProfileDocument.Validated(data, limits: ModelLimits()) else { return nil }
        var read = Read(profile: document.head.profile, closed: document.head.recentlyClosed, windows: document.windows, tabsByWindow: [:])
        for (window, tab) in document.tabs { read.tabsByWindow[window, default: []].append(tab) }
        return read
    }

    static func write(_ profile: ProfileRecord, closed: [ClosedEntryRecord], windows: [WindowRecord], tabs: [String: [TabRecord]]) -> [UInt8] {
        var bytes = ProfileDocument.head(profile, recentlyClosed: closed)
        for (index, window) in windows.enumerated() {
            let byID = Dictionary((tabs[window.id] ?? []).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            var record = window
            record.tabOrder = (tabs[window.id] ?? []).map(\.id)
            bytes += ProfileDocument.window(record, tabs: byID, first: index == 0)
        }
        return bytes + ProfileDocument.tail
    }
}

#if FUZZING
    import CFuzzerDriver
#endif

extension ImportFuzzing {
    /// The target a fuzz executable runs. `nonisolated(unsafe)`: set once by ``run(_:)`` before
    /// libFuzzer starts, then only read, from libFuzzer's one thread.
    nonisolated(unsafe) private static var target: ([UInt8]) -> Void = { _ in }

    /// A fuzz executable's `main`: built with `-DFUZZING` (`make fuzz`), libFuzzer's driver with the
    /// command line's flags (a corpus folder, `-max_total_time=…`); built plainly, `target` on each
    /// file named (a corpus, a crash).
    public static func run(_ target: @escaping ([UInt8]) -> Void) throws -> Never {
        Self.target = target
        #if FUZZING
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(
                LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                    guard let data else { return 0 }
                    ImportFuzzing.target(Array(UnsafeBufferPointer(start: data, count: size)))
                    return 0
                })
        #else
            for path in CommandLine.arguments.dropFirst() {
                target(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            }
            exit(0)
        #endif
    }
}
