import BrowserdClient
import Foundation
import TabStripCore

/// The running strip: the window's state from its stream, the keys turned into API calls, a redraw
/// after each. The server is the one source of truth: a key sends a request and the strip changes
/// when the stream says so.
actor TabsApp {
    let client: BrowserdClient
    let terminal: Terminal
    var strip: TabStrip
    var finished = false

    init(client: BrowserdClient, terminal: Terminal, windowID: String) {
        self.client = client
        self.terminal = terminal
        strip = TabStrip(windowID: windowID)
    }

    func redraw() { terminal.draw(strip.lines(width: terminal.width)) }

    func apply(_ event: WindowStreamEvent) {
        strip.apply(event)
        redraw()
    }

    func fail(_ error: any Error) {
        strip.status = BrowserdProblem.from(error).map { "error: \($0)" } ?? "error: \(error)"
        redraw()
    }

    /// Acts on one key; false once the strip should close.
    func handle(_ key: Key) async -> Bool {
        let api = client.api
        let windowID = strip.windowID
        do {
            switch key {
            case .quit:
                return false
            case .up:
                strip.cursor = max(strip.cursor - 1, 0)
            case .down:
                strip.cursor = min(strip.cursor + 1, max(strip.tabs.count - 1, 0))
            case .activate:
                guard let tab = strip.cursorTab else { break }
                _ = try await api.activateTab(path: .init(tabId: tab.id), body: .json(.init()))
            case .new:
                _ = try await api.openTab(path: .init(browserId: windowID), body: .json(.init(url: "browserd://newtab")))
            case .close:
                guard let tab = strip.cursorTab else { break }
                _ = try await api.closeTab(path: .init(tabId: tab.id))
            case .moveLeft, .moveRight:
                guard let tab = strip.cursorTab else { break }
                let index = strip.cursor + (key == .moveLeft ? -1 : 1)
                guard index >= 0, index < strip.tabs.count else { break }
                _ = try await api.moveTab(path: .init(tabId: tab.id), body: .json(.init(index: index)))
            case .togglePin:
                guard let tab = strip.cursorTab else { break }
                if tab.pinned {
                    _ = try await api.unpinTab(path: .init(tabId: tab.id), body: .json(.init()))
                } else {
                    _ = try await api.pinTab(path: .init(tabId: tab.id), body: .json(.init()))
                }
            }
            if strip.status.hasPrefix("error") { strip.status = "live" }
        } catch {
            fail(error)
            return true
        }
        redraw()
        return true
    }
}
