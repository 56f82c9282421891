import BrowserModel
import BrowserRecords
import BrowserServices
import Foundation
import ImportFuzzing
import JSONWriter
import TestSupport
import Testing

@testable import FirefoxSession

/// What a hostile session file holds can neither trap nor grow without bound (issue "Hostile files",
/// findings 1, 2, 4, 6 and 8), and the fuzz corpus replays clean.
@Suite(.computing) struct HostileSessionTests {
    static func read(_ json: String, limits: ModelLimits = ModelLimits()) throws(FirefoxSessionError) -> ImportedSession {
        try FirefoxSessionReader.read(Array(json.utf8), isJSON: true, maxDecodedBytes: 64 << 20, limits: limits)
    }

    static let tab = #"{"entries":[{"url":"https://x.example/"}]}"#

    static func field(_ error: FirefoxSessionError) -> String? {
        if case .shape(let at, _) = error { at } else { nil }
    }

    /// Finding 1: any finite number was taken as a time; 1e300 then trapped every encoder of it.
    @Test(arguments: ["1e300", "-1e300", "253402300800000", "-62135596800001"])
    func aTimeOutsideYears1To9999IsRefusedNamingIt(_ value: String) {
        let json = #"{"windows":[{"tabs":[{"entries":[{"url":"https://x.example/"}],"lastAccessed":\#(value)}]}]}"#
        #expect {
            try Self.read(json)
        } throws: { error in
            Self.field(error as! FirefoxSessionError) == "windows[0].tabs[0].lastAccessed"
        }
        #expect(throws: FirefoxSessionError.self) {
            try Self.read(#"{"windows":[{"tabs":[\#(Self.tab)],"_closedTabs":[{"state":\#(Self.tab),"closedAt":\#(value)}]}]}"#)
        }
        #expect(throws: FirefoxSessionError.self) { try Self.read(#"{"windows":[],"_closedWindows":[{"tabs":[\#(Self.tab)],"closedAt":\#(value)}]}"#) }
    }

    @Test func theEdgesOfTheRangeAreTimes() throws {
        for value in ["253402300799999", "-62135596800000"] {
            let session = try Self.read(#"{"windows":[{"tabs":[{"entries":[{"url":"https://x.example/"}],"lastAccessed":\#(value)}]}]}"#)
            let time = try #require(session.windows[0].tabs[0].lastAccessed)
            #expect(JSONText.isWritable(time))
        }
    }

    /// The second wall: an encoder given a time out of range clamps it (and counts it), never traps.
    @Test func theEncodersClampATimeOutOfRange() {
        let before = JSONText.clampedTimes
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: 1e300)) == "9999-12-31T23:59:59.999Z")
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: -1e300)) == "0001-01-01T00:00:00.000Z")
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: .infinity)) == "9999-12-31T23:59:59.999Z")
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: .nan)) == "1970-01-01T00:00:00.000Z")
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: -0.0015)) == "1969-12-31T23:59:59.998Z")
        #expect(JSONText.milliseconds(Date(timeIntervalSince1970: 1e300)) == JSONText.latestMilliseconds)
        #expect(JSONText.clampedTimes >= before + 5)
        // What is written reads back as written: whole milliseconds are the nearest, not the floor
        // (found by the fuzzer: 1419-…02.510 came back …02.509, one millisecond a round trip).
        for text in ["1419-11-26T21:19:02.510Z", "9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.001Z", "2026-11-26T21:19:02.510Z"] {
            #expect(JSONText.date(fromTimestamp: text).map(JSONText.timestamp) == text)
        }
        // Year 0 and fields out of range are not timestamps.
        #expect(JSONText.date(fromTimestamp: "0001-01-01T00:00:00.000Z") != nil)
        for text in ["0000-01-01T00:00:00.000Z", "2026-13-01T00:00:00Z", "2026-01-32T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z"] {
            #expect(JSONText.date(fromTimestamp: text) == nil, "\(text)")
        }
    }

    /// Finding 2: `x - 1` on `Int.min` trapped; every number is range-checked before arithmetic.
    @Test func integersFarOutOfRangeAreRefusedNamingThem() {
        let smallest = "-9223372036854775808"
        let cases = [
            (#"{"windows":[{"tabs":[\#(Self.tab)]}],"selectedWindow":\#(smallest)}"#, "selectedWindow"),
            (#"{"windows":[{"tabs":[\#(Self.tab)],"selected":\#(smallest)}]}"#, "windows[0].selected"),
            (#"{"windows":[{"tabs":[{"entries":[],"index":\#(smallest)}]}]}"#, "windows[0].tabs[0].index"),
            (#"{"windows":[{"tabs":[{"entries":[],"index":9223372036854775807}]}]}"#, "windows[0].tabs[0].index"),
            (#"{"windows":[{"tabs":[\#(Self.tab)],"_closedTabs":[{"state":\#(Self.tab),"pos":1e19}]}]}"#, "windows[0]._closedTabs[0].pos"),
            (#"{"windows":[{"tabs":[{"entries":[],"userContextId":4294967296}]}]}"#, "windows[0].tabs[0].userContextId"),
        ]
        for (json, field) in cases {
            #expect(
                performing: { try Self.read(json) },
                throws: { Self.field($0 as! FirefoxSessionError) == field })
        }
    }

    /// Finding 6: NUL reached stored text through the Firefox import (the REST API refuses it).
    @Test func nulIsRefusedNamingTheMember() {
        #expect(
            performing: { try Self.read(#"{"windows":[{"tabs":[{"entries":[{"url":"https://x.example/","title":"a\u0000b"}]}]}]}"#) },
            throws: { Self.field($0 as! FirefoxSessionError) == "windows[0].tabs[0].entries[0].title" })
        #expect(
            performing: { try Self.read(#"{"windows":[{"tabs":[\#(Self.tab)],"groups":[{"id":"g","name":"\u0000"}]}]}"#) },
            throws: { Self.field($0 as! FirefoxSessionError) == "windows[0].groups[0].name" })
        #expect(
            performing: { try Self.read(#"{"windows":[{"tabs":[{"entries":[{"url":"https://x.example/\u0000"}]}]}]}"#) },
            throws: { Self.field($0 as! FirefoxSessionError) == "windows[0].tabs[0].entries[0].url" })
    }

    /// Finding 4: a file of many odd entries made a warning each (932,068 in a 106 MB answer).
    @Test func warningsAreCappedAndTheRestCounted() throws {
        // Five tabs of 900 of Firefox's own pages each (each left out with a warning) and one page kept.
        let entries = (0..<900).map { #"{"url":"about:config?\#($0)"}"# }.joined(separator: ",")
        let tab = #"{"entries":[\#(entries),{"url":"https://kept.example/"}]}"#
        let session = try Self.read(#"{"windows":[{"tabs":[\#([String](repeating: tab, count: 5).joined(separator: ","))]}]}"#)
        #expect(session.warnings.count == ImportWarning.listed && session.omittedWarnings == 4_400)
        let built = try SessionImportBuilder(limits: ModelLimits()).build(session, name: "w")
        #expect(built.warnings.count == ImportWarning.listed + 1)
        // The builder's own (the window selects no tab) is counted with the reader's.
        #expect(built.warnings.last == ImportWarning(at: "warnings", "4401 more warnings were left out (the first 100 are listed)"))
    }

    /// Finding 4: counts past the model's limits are refused while reading, entries past a tab's
    /// limit are not read, and only the closed items kept are read.
    @Test func countsPastTheModelsLimitsAreRefusedOrLeftOutWhileReading() throws {
        var limits = ModelLimits()
        limits.windowsPerProfile = 2
        limits.tabsPerWindow = 3
        limits.historyEntries = 4
        let three = [Self.tab, Self.tab, Self.tab].joined(separator: ",")
        #expect(
            performing: { try Self.read(#"{"windows":[{"tabs":[]},{"tabs":[]},{"tabs":[]}]}"#, limits: limits) },
            throws: { Self.field($0 as! FirefoxSessionError) == "windows" })
        #expect(
            performing: { try Self.read(#"{"windows":[{"tabs":[\#(three),\#(Self.tab)]}]}"#, limits: limits) },
            throws: { Self.field($0 as! FirefoxSessionError) == "windows[0].tabs" })
        let groups = (0..<4).map { #"{"id":"g\#($0)"}"# }.joined(separator: ",")
        #expect(
            performing: { try Self.read(#"{"windows":[{"tabs":[\#(Self.tab)],"groups":[\#(groups)]}]}"#, limits: limits) },
            throws: { Self.field($0 as! FirefoxSessionError) == "windows[0].groups" })
        // Ten entries, the 8th current: the 4 newest with the current among them (5…8 of 1…10 would
        // drop the current's successors first: 7, 8, 9, 10 keeps it).
        let entries = (1...10).map { #"{"url":"https://e.example/\#($0)"}"# }.joined(separator: ",")
        let session = try Self.read(#"{"windows":[{"tabs":[{"entries":[\#(entries)],"index":8}]}]}"#, limits: limits)
        #expect(session.windows[0].tabs[0].entries.map(\.url) == (7...10).map { "https://e.example/\($0)" })
        #expect(session.windows[0].tabs[0].index == 1)
        // 30 closed tabs: only the newest 25 are read.
        let closed = (0..<30).map { #"{"state":\#(Self.tab),"closedAt":\#(1000 + $0)}"# }.joined(separator: ",")
        let many = try Self.read(#"{"windows":[{"tabs":[\#(Self.tab)],"_closedTabs":[\#(closed)]}]}"#)
        let oldest = try #require(many.closedTabs.map(\.closedAt.timeIntervalSince1970).min())
        #expect(many.closedTabs.count == 25 && abs(oldest - 1.005) < 1e-6, "the newest 25: closed at 1005…1029 ms")
    }

    /// Finding 4: a closed tab's group is looked up by id, and a window's groups are matched to its
    /// tabs in one pass (the result is the same as before; `bench/hostile_import.py` times it).
    @Test func manyGroupsAreMatchedByID() throws {
        let tabs = (0..<200).map { #"{"entries":[{"url":"https://t.example/\#($0)"}],"groupId":"g\#($0 % 50)"}"# }.joined(separator: ",")
        let groups = (0..<50).map { #"{"id":"g\#($0)","name":"G\#($0)","color":"blue"}"# }.joined(separator: ",")
        let closed = #"{"state":{"entries":[{"url":"https://c.example/"}],"groupId":"g7"},"closedAt":1000}"#
        let json = #"{"windows":[{"tabs":[\#(tabs)],"groups":[\#(groups),{"id":"g3","name":"again"}],"_closedTabs":[\#(closed)]}]}"#
        let session = try Self.read(json)
        #expect(session.closedTabs[0].group?.title == "G7")
        let built = try SessionImportBuilder(limits: ModelLimits()).build(session, name: "g")
        #expect(built.windows[0].groups.count == 50 && built.tabs.allSatisfy { $0.tab.groupID != nil })
        #expect(built.warnings.contains { $0.at == "windows[0].groups[50]" && $0.detail.contains("repeats the group id") })
    }

    /// Finding 8: liblz4 counts in `int`; a claim past 2 GiB with a limit above it trapped.
    @Test func aClaimPast2GiBIsRefusedWhateverTheLimit() {
        var framed = MozLz4.encode(Array(#"{"windows":[]}"#.utf8))
        framed.replaceSubrange(8..<12, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FirefoxSessionError.tooLarge(claimed: 0xFFFF_FFFF, limit: Int(Int32.max))) {
            try MozLz4.decode(framed, limit: Int.max)
        }
    }

    // MARK: The fuzz corpus

    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../fuzz/corpus")

    static func files(_ kind: String) throws -> [[UInt8]] {
        let folder = corpus.appendingPathComponent(kind)
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map {
            Array(try Data(contentsOf: folder.appendingPathComponent($0)))
        }
    }

    /// Every input of the corpus (seeds, and each minimized finding as a regression) runs through
    /// what the fuzz targets run, and so do a few thousand seeded mutations of them (the smoke run:
    /// `make fuzz` runs libFuzzer itself, coverage-guided).
    @Test(arguments: ["firefox", "profile-document"])
    func theCorpusAndMutationsOfItRunClean(_ kind: String) throws {
        let inputs = try Self.files(kind)
        #expect(inputs.count >= 3)
        let run: ([UInt8]) -> Void = { kind == "firefox" ? ImportFuzzing.firefox($0) : ImportFuzzing.profileDocument($0) }
        for input in inputs { run(input) }
        var random = SplitMix64(seed: 42)
        let tokens = [
            "1e300", "-9223372036854775808", "\\u0000", "null", "[]", "{}", "\"\"", "-1", "0", "2147483648", "\"2026-13-01T00:00:00Z\"",
        ].map { Array($0.utf8) }
        for round in 0..<1_500 {
            var bytes = inputs[round % inputs.count]
            guard !bytes.isEmpty else { continue }
            for _ in 0...random.below(4) {
                let at = random.below(bytes.count)
                switch random.below(4) {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.remove(at: at)
                case 2: bytes.insert(contentsOf: tokens[random.below(tokens.count)], at: at)
                default:
                    // Replace a number or string after a colon with a hostile token.
                    if let colon = bytes[at...].firstIndex(of: UInt8(ascii: ":")),
                        let end = bytes[(colon + 1)...].firstIndex(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") })
                    {
                        bytes.replaceSubrange((colon + 1)..<end, with: tokens[random.below(tokens.count)])
                    }
                }
            }
            run(bytes)
        }
    }
}
