import BrowserdClient
import Testing

@testable import BrowserdRenderer

/// A profile's web state kept in step (issue 52), without Chromium or a server: nothing is saved before
/// browserd's state was loaded; a reading saves only what changed; origins with no live page keep what
/// was known of them; the renderer's own save coming back is not loaded again; Chromium's forms.
@Suite(.computing) struct WebStateTrackerTests {
    typealias Cookie = WebStateTracker.Cookie
    typealias Item = WebStateTracker.Item

    static func cookie(_ name: String, _ value: String, domain: String = "a.example") -> Cookie {
        Cookie(name: name, value: value, domain: domain, path: "/", expires: -1, httpOnly: true, secure: false, sameSite: .lax)
    }

    @Test func nothingIsSavedBeforeBrowserdsStateIsLoadedThenOnlyChanges() {
        var tracker = WebStateTracker()
        #expect(tracker.read(cookies: [Self.cookie("s", "1")], pages: [:]) == nil, "a Chromium that started logged out overwrites nothing")
        let stored = WebStateTracker.State(
            cookies: [Self.cookie("s", "1")],
            origins: [.init(origin: "https://a.example", localStorage: [Item(name: "t", value: "x")])])
        tracker.loaded(stored)
        #expect(tracker.read(cookies: [Self.cookie("s", "1")], pages: [:]) == nil, "unchanged")
        // A new cookie (in another order: compared canonically), and b's storage read from its page.
        let changed = tracker.read(
            cookies: [Self.cookie("z", "2", domain: "b.example"), Self.cookie("s", "1")],
            pages: ["https://b.example": [Item(name: "k", value: "v")]])
        let saved = try? #require(changed)
        #expect(saved?.cookies.map(\.name) == ["s", "z"])
        #expect(saved?.origins.map(\.origin) == ["https://a.example", "https://b.example"], "a has no live page: it keeps what was known")
        if let saved { tracker.saved(saved) }
        #expect(tracker.read(cookies: [Self.cookie("s", "1"), Self.cookie("z", "2", domain: "b.example")], pages: [:]) == nil)
        // An origin whose page emptied its storage is dropped (Playwright writes only origins with items).
        let emptied = tracker.read(cookies: [Self.cookie("s", "1"), Self.cookie("z", "2", domain: "b.example")], pages: ["https://a.example": []])
        #expect(emptied?.origins.map(\.origin) == ["https://b.example"])
        if let emptied {
            tracker.saved(emptied)
            #expect(tracker.isCurrent(emptied), "its own save coming back is not loaded again")
        }
        #expect(!tracker.isCurrent(stored))
        // A state browserd refused is not sent again as it is; a change is.
        let big = [Self.cookie("s", "1"), Self.cookie("z", "2", domain: "b.example"), Self.cookie("huge", "x")]
        if let refused = tracker.read(cookies: big, pages: [:]) { tracker.refused(refused) }
        #expect(tracker.read(cookies: big, pages: [:]) == nil)
        #expect(tracker.read(cookies: big + [Self.cookie("w", "3")], pages: [:]) != nil)
    }

    @Test func chromiumsFormsAndOrigins() throws {
        let session = try JSONValue.parse(
            Array(
                #"{"name":"sid","value":"v","domain":"127.0.0.1","path":"/","expires":-1,"size":4,"httpOnly":true,"secure":false,"session":true,"priority":"Medium"}"#
                    .utf8))
        #expect(
            WebStateTracker.cookie(fromDevTools: session)
                == Cookie(name: "sid", value: "v", domain: "127.0.0.1", path: "/", expires: -1, httpOnly: true, secure: false, sameSite: .lax))
        let partitioned = try JSONValue.parse(
            Array(
                #"{"name":"c","value":"1","domain":"e.example","path":"/","expires":1830000000.5,"httpOnly":false,"secure":true,"session":false,"sameSite":"None","partitionKey":{"topLevelSite":"https://top.example","hasCrossSiteAncestor":true}}"#
                    .utf8))
        let cookie = try #require(WebStateTracker.cookie(fromDevTools: partitioned))
        #expect(cookie.expires == 1_830_000_000.5 && cookie.sameSite == .none && cookie.partitionKey == "https://top.example" && cookie._crHasCrossSiteAncestor == true)
        let parameter = WebStateTracker.devToolsParameter(cookie)
        #expect(parameter["partitionKey"]?["topLevelSite"]?.string == "https://top.example" && parameter["expires"]?.double == 1_830_000_000.5)
        #expect(WebStateTracker.devToolsParameter(Self.cookie("s", "1"))["expires"] == nil, "a session cookie has no expiry")
        #expect(WebStateTracker.origin(of: "http://127.0.0.1:8123/path?q") == "http://127.0.0.1:8123")
        #expect(WebStateTracker.origin(of: "https://Example.COM:443/") == "https://example.com")
        #expect(WebStateTracker.origin(of: "about:blank") == nil && WebStateTracker.origin(of: "file:///etc/passwd") == nil)
    }
}
