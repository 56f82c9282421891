import BrowserdClient
import TestSupport
import Testing

@testable import TabStripCore

/// The terminal tab strip's state and drawing, from events as the server writes them.
@Suite(.computing) struct TabStripTests {
    static func item(_ id: String, _ url: String, pinned: Bool = false, group: String? = nil, title: String = "") -> String {
        let groupID = group.map { "\"\($0)\"" } ?? "null"
        return """
            {"id":"\(id)","url":"\(url)","title":"\(title)","loading":false,"progress":1,"crashed":false,"faviconUrl":null,\
            "pinned":\(pinned),"groupId":\(groupID),"openerTabId":null,"historyIndex":0,"historyCount":1}
            """
    }

    static func event(_ name: String, _ data: String) throws -> WindowStreamEvent {
        try WindowStreamEvent.decode(name: name, data: data)
    }

    static func populated() throws -> TabStrip {
        var strip = TabStrip(windowID: "w1")
        let items = [item("t1", "https://a.example/", pinned: true), item("t2", "https://b.example/", group: "g1"), item("t3", "https://c.example/")]
        strip.apply(try event("tabs.populate", "{\"browserId\":\"w1\",\"items\":[\(items.joined(separator: ","))],\"selectedId\":\"t2\"}"))
        strip.apply(
            try event(
                "groups.populate",
                "{\"browserId\":\"w1\",\"groups\":[{\"id\":\"g1\",\"title\":\"Work\",\"color\":\"green\",\"collapsed\":false,\"start\":1,\"count\":1}]}"))
        return strip
    }

    @Test func drawsSectionsGroupsAndTheActiveTab() throws {
        let lines = try Self.populated().lines(width: 100, styled: false)
        #expect(
            lines == [
                "browserd-tabs  window w1  3 tabs  [live]",
                " pinned",
                "   1. https://a.example/",
                " group Work (green)",
                ">* 2. https://b.example/",
                " tabs",
                "   3. https://c.example/",
                "keys: j/k or arrows move  enter activate  n new  x close  [ ] reorder  p pin  q quit",
            ])
    }

    @Test func followsInsertMoveRemoveAndSelect() throws {
        var strip = try Self.populated()
        strip.apply(try Self.event("tabs.insert", "{\"browserId\":\"w1\",\"item\":\(Self.item("t4", "https://d.example/")),\"index\":3,\"selectedId\":\"t4\"}"))
        #expect(strip.tabs.map(\.id) == ["t1", "t2", "t3", "t4"] && strip.activeID == "t4" && strip.cursor == 3, "the cursor follows the new active tab")
        strip.apply(try Self.event("tabs.move", "{\"browserId\":\"w1\",\"tabId\":\"t4\",\"index\":1}"))
        #expect(strip.tabs.map(\.id) == ["t1", "t4", "t2", "t3"] && strip.cursor == 1, "the cursor follows the moved tab")
        strip.apply(try Self.event("tabs.remove", "{\"browserId\":\"w1\",\"tabId\":\"t4\",\"selectedId\":\"t3\"}"))
        #expect(strip.tabs.map(\.id) == ["t1", "t2", "t3"] && strip.activeID == "t3" && strip.cursor == 2)
        strip.apply(try Self.event("tabs.update", "{\"browserId\":\"w1\",\"item\":\(Self.item("t3", "https://c.example/", title: "C"))}"))
        #expect(strip.lines(width: 80, styled: false).contains(">* 3. C — https://c.example/"))
        strip.apply(try Self.event("browser.closed", "{\"browserId\":\"w1\"}"))
        #expect(strip.closed && strip.status == "the window was closed")
    }

    @Test func aCollapsedGroupShowsOnlyItsHeadingAndActiveTab() throws {
        var strip = try Self.populated()
        strip.apply(try Self.event("tabs.select", "{\"browserId\":\"w1\",\"tabId\":\"t3\"}"))
        strip.apply(
            try Self.event(
                "groups.update",
                "{\"browserId\":\"w1\",\"group\":{\"id\":\"g1\",\"title\":\"Work\",\"color\":\"green\",\"collapsed\":true,\"start\":1,\"count\":1}}"))
        let lines = strip.lines(width: 80, styled: false)
        #expect(lines.contains(" group Work (green, collapsed)") && !lines.contains { $0.contains("b.example") })
    }

    @Test func aResetReplacesEverything() throws {
        var strip = try Self.populated()
        let reset = """
            {"browserId":"w1","reason":"restarted","tabs":{"items":[\(Self.item("t9", "https://z.example/"))],"selectedId":"t9"},\
            "groups":[],"toolbar":{"canGoBack":false,"canGoForward":false,"loading":false,"progress":1,"tabCount":1,"incognito":false},\
            "location":{"displayUrl":"z.example","secure":true},"broadcasts":[]}
            """
        strip.apply(try Self.event("reset", reset))
        #expect(strip.tabs.map(\.id) == ["t9"] && strip.groups.isEmpty && strip.status.contains("restarted"))
    }

    @Test func longLinesAreCut() throws {
        let lines = try Self.populated().lines(width: 24, styled: false)
        #expect(lines.allSatisfy { $0.count <= 24 })
        #expect(lines[0].hasSuffix("…"))
    }

    @Test func keysFromRawInput() {
        #expect(Key.parse(Array("jk\r nxp[]q".utf8)) == [.down, .up, .activate, .activate, .new, .close, .togglePin, .moveLeft, .moveRight, .quit])
        #expect(Key.parse([0x1B, 0x5B, 0x41, 0x1B, 0x5B, 0x42, 0x03]) == [.up, .down, .quit])
        #expect(Key.parse(Array("zZ?".utf8)).isEmpty)
    }
}
