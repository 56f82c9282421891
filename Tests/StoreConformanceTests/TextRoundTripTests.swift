import BrowserPersistence
import BrowserRecords
import Foundation
import TestSupport
import Testing

/// Every string the API accepts (anything but U+0000, which the edge refuses) is stored exactly by
/// every store: written, read back after the store is closed and opened again, byte for byte
/// (the hostile-tenants review found SQLite cutting a value at a NUL and PostgreSQL refusing one).
@Suite(.offThePool) struct TextRoundTripTests {
    static let samples: [String] = [
        "plain", "", " leading and trailing ", "tab\there", "line\nbreak\r\nCRLF", "\u{1}\u{1f}\u{7f}\u{80}\u{9f}",
        "\u{2028}\u{2029}\u{feff}\u{200b}", "ünïcödé", "e\u{301} combining", "עברית RTL \u{202e}override",
        "😀👩‍👩‍👧‍👦 emoji", "\u{10ffff}\u{e000}", "'; DROP TABLE tabs; --", "back\\slash \"quotes\"", "%00 escaped",
        String(repeating: "長", count: 1024),
    ]

    @Test(arguments: StoreKind.available)
    func everyAcceptedStringRoundTripsExactly(_ kind: StoreKind) async throws {
        let time = Date(timeIntervalSince1970: 1_700_000_000)
        var change = ChangeSet()
        change.profileID = "ptext000000000001"
        change.profiles = [ProfileRecord(id: "ptext000000000001", name: Self.samples.joined(separator: "|"), createdAt: time)]
        change.windows = [
            WindowRecord(
                id: "wtext000000000001", profileID: "ptext000000000001", version: 1, tabOrder: [], activeIndex: 0,
                pinnedCount: 0, groups: [GroupRecord(id: "gtext000000000001", title: Self.samples[5], color: "blue", collapsed: false)],
                createdAt: time, lastActiveAt: time)
        ]
        for (index, sample) in Self.samples.enumerated() {
            let history = [HistoryEntryRecord(url: "https://x.example/" + sample, title: sample, transition: "link", timestamp: time)]
            change.tabs.append(
                (
                    "wtext000000000001",
                    TabRecord(
                        id: "ttext\(String(format: "%012d", index))", groupID: nil, openerID: nil,
                        openerNavigationIndex: nil, title: sample, loading: false, progress: 0,
                        faviconURL: nil, createdAt: time, lastActiveAt: time, historyIndex: 0,
                        history: history, position: Double(index))
                ))
        }
        let written = change
        let stored = try await StoreFixture.with(kind) { fixture in
            try await fixture.withStore { store in try store.apply([written]) }
            return try await fixture.read()
        }
        #expect(stored.profiles.first?.name == Self.samples.joined(separator: "|"))
        #expect(stored.windows.first?.groups.first?.title == Self.samples[5])
        for (index, sample) in Self.samples.enumerated() {
            let tab = stored.tabs["ttext\(String(format: "%012d", index))"]
            #expect(tab?.title == sample, "title \(index)")
            #expect(Array((tab?.title ?? "").utf8) == Array(sample.utf8), "title bytes \(index)")
            #expect(tab?.history.first?.title == sample && tab?.history.first?.url == "https://x.example/" + sample, "history \(index)")
        }
    }
}
