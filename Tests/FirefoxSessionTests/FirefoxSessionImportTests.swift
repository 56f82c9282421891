import BrowserModel
import BrowserRecords
import BrowserServices
import Foundation
import TestSupport
import Testing

@testable import FirefoxSession

/// Reading a Firefox session and building a profile of it by Chromium's rules: each documented choice
/// and each adjustment, with the warning that names it.
@Suite(.computing) struct FirefoxSessionImportTests {
    static func tab(_ urls: [String], index: Int? = nil, extra: String = "") -> String {
        let entries = urls.map { #"{"url":"\#($0)","title":"\#($0.split(separator: "/").last.map(String.init) ?? $0)"}"# }
        let position = index.map { #","index":\#($0)"# } ?? ""
        return #"{"entries":[\#(entries.joined(separator: ","))]\#(position)\#(extra)}"#
    }

    static func read(_ json: String) throws -> ImportedSession {
        try FirefoxSessionReader.read(Array(json.utf8), isJSON: true, maxDecodedBytes: 1 << 20)
    }

    static func build(_ json: String) throws -> ImportedProfile {
        try SessionImportBuilder(limits: ModelLimits()).build(try read(json), name: "f")
    }

    /// Tab urls of each window, in order.
    static func layout(_ profile: ImportedProfile) -> [[String]] {
        profile.windows.map { window in
            profile.tabs.filter { $0.window == window.id }.map { $0.tab.history[$0.tab.historyIndex].url }
        }
    }

    static func warned(_ profile: ImportedProfile, _ fragment: String) -> Bool {
        profile.warnings.contains { $0.detail.contains(fragment) }
    }

    // MARK: Reading

    @Test func jsonErrorsSayWhereAndShapeErrorsSayWhat() {
        #expect(throws: FirefoxSessionError.json("unexpected end of input", offset: 13)) { try Self.read(#"{"windows": ["#) }
        #expect(throws: FirefoxSessionError.shape(at: "the document", "has no \"windows\": not a Firefox session file")) {
            try Self.read(#"{"tabs": []}"#)
        }
        #expect(throws: FirefoxSessionError.shape(at: "windows", "is object, not an array")) { try Self.read(#"{"windows": {}}"#) }
        #expect(throws: FirefoxSessionError.shape(at: "windows[0].tabs[0].entries", "is string, not an array")) {
            try Self.read(#"{"windows": [{"tabs": [{"entries": "x"}]}]}"#)
        }
        #expect(throws: FirefoxSessionError.shape(at: "windows[0].tabs[0].index", "is string, not an integer")) {
            try Self.read(#"{"windows": [{"tabs": [{"entries": [], "index": "1"}]}]}"#)
        }
        #expect(throws: FirefoxSessionError.shape(at: "the document", "is array, not a session object")) { try Self.read("[]") }
    }

    @Test func aJSONFileOverTheLimitIsRefused() {
        #expect(throws: FirefoxSessionError.tooLarge(claimed: 21, limit: 10)) {
            try FirefoxSessionReader.read(Array(#"{"windows":[       ]}"#.utf8), isJSON: true, maxDecodedBytes: 10)
        }
    }

    @Test func firefoxsOwnPagesBecomeTheNewTabPageOrLeave() throws {
        let session = try Self.read(
            #"{"windows":[{"tabs":[\#(Self.tab(["about:home", "https://a.example/", "about:preferences", "about:blank"], index: 3))]}]}"#)
        let tab = session.windows[0].tabs[0]
        #expect(tab.entries.map(\.url) == [NavigationItem.newTabPageURL, "https://a.example/", "about:blank"])
        // The current entry (about:preferences) left: the one before it is current.
        #expect(tab.index == 1)
        #expect(session.warnings == [ImportWarning(at: "windows[0].tabs[0].entries[2]", "is Firefox's own page \"about:preferences\"; left out of the history")])
    }

    @Test func hiddenAndContainerTabsAreOrdinaryTabsSavedGroupsLeave() throws {
        let profile = try Self.build(
            #"""
            {"windows":[{"tabs":[\#(Self.tab(["https://a.example/"])),\#(Self.tab(["https://b.example/"], extra: #","hidden":true"#)),\#(Self.tab(["https://c.example/"], extra: #","userContextId":2"#))],"selected":1}],
             "savedGroups":[{"id":"s1","name":"Trip","tabs":[]}]}
            """#)
        #expect(Self.layout(profile) == [["https://a.example/", "https://b.example/", "https://c.example/"]])
        #expect(profile.warnings.map(\.at) == ["windows[0].tabs[1]", "windows[0].tabs[2]", "savedGroups"])
        #expect(Self.warned(profile, "hidden in Firefox") && Self.warned(profile, "container 2") && Self.warned(profile, "\"Trip\""))
    }

    // MARK: Chromium's rules

    @Test func aGroupSplitByAnotherTabIsMadeWhole() throws {
        let profile = try Self.build(
            #"""
            {"windows":[{"tabs":[\#(Self.tab(["https://a.example/"], extra: #","groupId":"g""#)),\#(Self.tab(["https://b.example/"])),\#(Self.tab(["https://c.example/"], extra: #","groupId":"g""#))],
              "groups":[{"id":"g","name":"Split","color":"gray","collapsed":false}],"selected":2}]}
            """#)
        // createGroup moves the group's tabs next to its first one (Chromium's CreateGroup).
        #expect(Self.layout(profile) == [["https://a.example/", "https://c.example/", "https://b.example/"]])
        let window = profile.windows[0]
        #expect(window.groups.count == 1 && window.groups[0].title == "Split" && window.groups[0].color == "grey")
        let grouped = profile.tabs.filter { $0.tab.groupID == window.groups[0].id }.map { $0.tab.history[0].url }
        #expect(grouped == ["https://a.example/", "https://c.example/"])
        #expect(
            profile.warnings == [
                ImportWarning(at: "windows[0].groups[0]", "is split by other tabs; Chromium keeps a group's tabs together: they were moved next to its first tab")
            ])
        // The selected tab is still b (now third).
        #expect(window.activeIndex == 2)
    }

    @Test func aPinnedTabInAGroupStaysPinnedOutOfIt() throws {
        let profile = try Self.build(
            #"""
            {"windows":[{"tabs":[\#(Self.tab(["https://p.example/"], extra: #","pinned":true,"groupId":"g""#)),\#(Self.tab(["https://a.example/"], extra: #","groupId":"g""#))],
              "groups":[{"id":"g","name":"G","color":"teal"}],"selected":1}]}
            """#)
        let window = profile.windows[0]
        #expect(window.pinnedCount == 1 && Self.layout(profile) == [["https://p.example/", "https://a.example/"]])
        #expect(profile.tabs[0].tab.groupID == nil && profile.tabs[1].tab.groupID == window.groups[0].id)
        #expect(window.groups[0].color == "grey")
        #expect(Self.warned(profile, "stays pinned, out of the group") && Self.warned(profile, "\"teal\", not in Chromium's palette"))
    }

    @Test func indexesOutOfRangeAreAdjustedAndSaid() throws {
        let profile = try Self.build(
            #"{"windows":[{"tabs":[\#(Self.tab(["https://a.example/", "https://b.example/"], index: 7)),\#(Self.tab(["https://c.example/"]))],"selected":9}]}"#)
        #expect(profile.windows[0].activeIndex == 0)
        #expect(profile.tabs[0].tab.historyIndex == 1)
        #expect(profile.warnings.map(\.at) == ["windows[0].tabs[0].index", "windows[0]"])
        #expect(Self.warned(profile, "selects entry 7 of 2") && Self.warned(profile, "its selected tab 9 is not one of its tabs"))
    }

    @Test func aPinnedTabAfterUnpinnedOnesJoinsThePinnedSection() throws {
        let profile = try Self.build(
            #"{"windows":[{"tabs":[\#(Self.tab(["https://a.example/"])),\#(Self.tab(["https://p.example/"], extra: #","pinned":true"#))],"selected":1}]}"#)
        #expect(Self.layout(profile) == [["https://p.example/", "https://a.example/"]] && profile.windows[0].pinnedCount == 1)
        #expect(Self.warned(profile, "joins the end of the pinned tabs"))
        // The selected tab is still a.
        #expect(profile.windows[0].activeIndex == 1)
    }

    @Test func closedTabsAndWindowsAreRecordedInTheOrderTheyClosed() throws {
        let profile = try Self.build(
            #"""
            {"windows":[{"tabs":[\#(Self.tab(["https://open.example/"]))],"selected":1,
               "_closedTabs":[{"state":\#(Self.tab(["https://late.example/"])),"pos":3,"closedAt":3000},
                              {"state":\#(Self.tab(["https://early.example/"])),"pos":0,"closedAt":1000}]}],
             "_closedWindows":[{"tabs":[\#(Self.tab(["https://w1.example/"])),\#(Self.tab(["https://w2.example/"]))],"selected":2,"closedAt":2000},
                               {"tabs":[\#(Self.tab(["https://lone.example/"]))],"selected":1,"closedAt":4000}]}
            """#)
        // Oldest first: early (1000), the two-tab window (2000), late (3000), the lone tab's window (4000).
        #expect(profile.closed.map(\.kind) == [.tab, .window, .tab, .tab])
        #expect(
            profile.closed.map { $0.tabs.map { $0.history[0].url } } == [
                ["https://early.example/"], ["https://w1.example/", "https://w2.example/"], ["https://late.example/"], ["https://lone.example/"],
            ])
        #expect(profile.closed[1].tabs.map(\.wasActive) == [false, true])
        #expect(profile.closed[2].tabs[0].index == 3 && profile.closed[2].tabs[0].windowID == profile.windows[0].id)
    }

    @Test func closedItemsPastTheModelsCapacityLeaveTheOldest() throws {
        let closed = (0..<30).map { i in
            let state = Self.tab(["https://c\(i).example/"])
            return #"{"state":\#(state),"pos":0,"closedAt":\#(1000 + i)}"#
        }
        let profile = try Self.build(#"{"windows":[{"tabs":[\#(Self.tab(["https://a.example/"]))],"_closedTabs":[\#(closed.joined(separator: ","))]}]}"#)
        #expect(profile.closed.count == 25 && profile.closed.first?.tabs[0].history[0].url == "https://c5.example/")
        #expect(Self.warned(profile, "5 closed tabs or windows older than the 25"))
    }

    @Test func entriesTheModelRefusesLeaveAndATabWithoutAnyLeaves() throws {
        let profile = try Self.build(
            #"{"windows":[{"tabs":[\#(Self.tab(["javascript:alert(1)"])),\#(Self.tab(["https://a.example/", "moz-extension://x/y"], index: 2))],"selected":2}]}"#)
        #expect(Self.layout(profile) == [["https://a.example/"]])
        #expect(profile.windows[0].activeIndex == 0 && profile.tabs[0].tab.history.count == 1)
        #expect(profile.warnings.map(\.at) == ["windows[0].tabs[0].entries[0]", "windows[0].tabs[0]", "windows[0].tabs[1].entries[1]"])
    }
}
