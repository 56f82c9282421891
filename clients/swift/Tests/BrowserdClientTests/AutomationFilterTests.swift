import Foundation
import TestSupport
import Testing

@testable import BrowserdRenderer

/// An automation client's view of Chromium (`AutomationFilter`) and the bytes the gateway reads
/// without decoding (`DevToolsMessage`), without Chromium.
@Suite(.computing) struct AutomationFilterTests {
    static let root = "ROOT0000000000000000000000000000"
    static let regular = AutomationFilter.Scope.regular(incognito: ["OTR"])

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func json(_ bytes: [UInt8]) -> JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) }

    /// A filter whose client sees page `P1` (default context) attached as session `S1`, and was
    /// offered the incognito page `P2` (detached again).
    static func attached() -> AutomationFilter {
        var filter = AutomationFilter(root: root)
        let page = filter.fromChromium(
            bytes(
                #"{"method":"Target.attachedToTarget","params":{"sessionId":"S1","targetInfo":{"targetId":"P1","type":"page","browserContextId":"DEF"},"waitingForDebugger":false},"sessionId":"\#(root)"}"#
            ), session: root, scope: regular)
        #expect(page.added == ["S1"])
        #expect(page.deliver.map { String(decoding: $0, as: UTF8.self) }?.contains(root) == false)
        return filter
    }

    // MARK: DevToolsMessage

    @Test func theTrailingSessionIsReadAndTakenOffWithoutDecoding() {
        let message = Self.bytes(#"{"id":7,"result":{"x":"\"sessionId\":\"FAKE\"}"},"sessionId":"AB12"}"#)
        #expect(DevToolsMessage.trailingSessionID(message) == "AB12")
        #expect(String(decoding: DevToolsMessage.removingTrailingSessionID(message), as: UTF8.self) == #"{"id":7,"result":{"x":"\"sessionId\":\"FAKE\"}"}}"#)
        #expect(DevToolsMessage.leadingID(message) == 7)
        // A value that ends like a session member is text, not a member (its quotes are escaped).
        #expect(DevToolsMessage.trailingSessionID(Self.bytes(#"{"method":"X","params":{"t":",\"sessionId\":\"AB12\"}"}"#)) == nil)
        #expect(DevToolsMessage.trailingSessionID(Self.bytes(#"{"method":"X","params":{"sessionId":"AB12"}}"#)) == nil)
        #expect(DevToolsMessage.trailingSessionID(Self.bytes(#"{"id":1,"result":{}}"#)) == nil)
        #expect(DevToolsMessage.leadingID(Self.bytes(#"{"method":"Page.loadEventFired"}"#)) == nil)
        #expect(DevToolsMessage.isEvent(Self.bytes(#"{"method":"Target.attachedToTarget","params":{}}"#), "Target.attachedToTarget"))
        #expect(!DevToolsMessage.isEvent(Self.bytes(#"{"method":"Target.attachedToTargets"}"#), "Target.attachedToTarget"))
        #expect(String(decoding: DevToolsMessage.addingSessionID("S", to: Self.bytes(#"{"id":1}"#)), as: UTF8.self) == #"{"id":1,"sessionId":"S"}"#)
    }

    @Test func theReaderIsStrictAndTheWriterRoundTrips() throws {
        let text = #"{"a":[1,-2.5,1e3,true,false,null,"x\"\\\/\n\u00e9\ud83d\ude00"],"b":{},"c":[]}"#
        let value = try JSONValue.parse(Self.bytes(text))
        #expect(value["a"]?.array?[6].string == "x\"\\/\n\u{e9}\u{1F600}")
        #expect(value["a"]?.array?[2] == .number(1000))
        #expect(try JSONValue.parse(value.serialized) == value)
        #expect(String(decoding: JSONValue.object(["b": 1, "a": "\u{1}"]).serialized, as: UTF8.self) == #"{"a":"\u0001","b":1}"#)
        for bad in [
            "", "{", #"{"a":1,"a":2}"#, #"{"a":1}x"#, #""\ud800""#, #""\udc00x""#, #""\x""#, "[1,]", "01x", "nul", "\"a\u{1}\"",
            String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
        ] {
            #expect(throws: JSONValue.ParseError.self, "\(bad.prefix(20))") { try JSONValue.parse(Self.bytes(bad)) }
        }
        #expect(try JSONValue.parse(Self.bytes(String(repeating: "[", count: 200) + String(repeating: "]", count: 200))) != .null)
    }

    // MARK: The client's commands

    @Test func aBrowserCommandGoesToTheClientsOwnBrowserSession() throws {
        var filter = AutomationFilter(root: Self.root)
        guard case .forward(let sent) = filter.fromClient(Self.bytes(#"{"id":1,"method":"Browser.getVersion"}"#), scope: Self.regular) else {
            Issue.record("not forwarded")
            return
        }
        #expect(Self.json(sent)?["sessionId"]?.string == Self.root)
        #expect(Self.json(sent)?["id"]?.int == 1)
        #expect(filter.pendingCount == 1)
        // Its answer reaches the client without the session's id, byte for byte otherwise.
        let answer = filter.fromChromium(Self.bytes(#"{"id":1,"result":{"product":"Chrome/156"},"sessionId":"\#(Self.root)"}"#), session: Self.root, scope: Self.regular)
        #expect(answer.deliver == Self.bytes(#"{"id":1,"result":{"product":"Chrome/156"}}"#))
        #expect(filter.pendingCount == 0)
    }

    @Test func badMessagesAreAnsweredAsChromiumAnswersThem() {
        var filter = AutomationFilter(root: Self.root)
        for (text, code) in [
            ("not json", -32700), (#"[1]"#, -32700), (#"{"method":"X"}"#, -32600), (#"{"id":2000000000,"method":"X"}"#, -32600),
            (#"{"id":1}"#, -32600), (#"{"id":1,"method":"X","sessionId":5}"#, -32600), (#"{"id":1,"method":"Page.enable","sessionId":"OTHER"}"#, -32001),
            (#"{"id":1,"method":"Browser.getVersion","params":[1]}"#, -32602),
        ] {
            guard case .answer(let answer) = filter.fromClient(Self.bytes(text), scope: Self.regular) else {
                Issue.record("\(text): not answered")
                continue
            }
            #expect(Self.json(answer)?["error"]?["code"]?.int == code, "\(text)")
        }
        #expect(filter.pendingCount == 0)
    }

    @Test func whatWouldStopOrEscapeTheRendererIsRefused() {
        var filter = Self.attached()
        for method in [
            "Browser.crash", "Target.createBrowserContext", "Target.disposeBrowserContext", "Tethering.bind", "Browser.getBrowserCommandLine",
            "SystemInfo.getProcessInfo", "Tracing.start", "IO.read", "Target.exposeDevToolsProtocol", "Target.sendMessageToTarget",
        ] {
            guard case .answer(let answer) = filter.fromClient(Self.bytes(#"{"id":3,"method":"\#(method)","params":{}}"#), scope: Self.regular) else {
                Issue.record("\(method) not refused")
                continue
            }
            #expect(Self.json(answer)?["error"]?["message"]?.string?.contains("browserd") == true, "\(method)")
        }
        // Non-flat sessions would carry messages the gateway cannot route.
        if case .answer = filter.fromClient(Self.bytes(#"{"id":4,"method":"Target.attachToTarget","params":{"targetId":"P1"}}"#), scope: Self.regular) {
        } else {
            Issue.record("a non-flat attach went through")
        }
        // On a page's session: the renderer's files, browser-wide methods, downloads.
        for (method, params) in [
            ("DOM.setFileInputFiles", #"{"files":["/etc/passwd"],"nodeId":1}"#), ("Page.navigate", #"{"url":"file:///etc/passwd"}"#),
            ("Page.navigate", #"{"url":"chrome://settings"}"#), ("Page.navigate", #"{"url":"view-source:file:///"}"#),
            ("Browser.close", "{}"), ("Target.createBrowserContext", #"{"proxyServer":"http://evil"}"#), ("Target.createTarget", #"{"url":"about:blank"}"#),
            // The renderer's own world, where its navigation steps' binding lives.
            ("Page.createIsolatedWorld", #"{"frameId":"F","worldName":"browserd"}"#),
            ("Page.addScriptToEvaluateOnNewDocument", #"{"source":"1","worldName":"browserd"}"#),
            ("Runtime.addBinding", #"{"name":"x","executionContextName":"browserd"}"#),
        ] {
            let decision = filter.fromClient(Self.bytes(#"{"id":5,"method":"\#(method)","params":\#(params),"sessionId":"S1"}"#), scope: Self.regular)
            guard case .answer(let answer) = decision, Self.json(answer)?["error"] != nil else {
                Issue.record("\(method) \(params) on a page's session: \(decision)")
                continue
            }
            #expect(Self.json(answer)?["sessionId"]?.string == "S1")
        }
        // Downloads are answered, never configured (a client's path would be the renderer's disk).
        #expect(
            filter.fromClient(Self.bytes(#"{"id":6,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/"}}"#), scope: Self.regular)
                == .answer(Self.bytes(#"{"id":6,"result":{}}"#)))
        #expect(filter.pendingCount == 0)
    }

    @Test func aPageSessionPassesAsItIs() {
        var filter = Self.attached()
        guard
            case .forward(let sent) = filter.fromClient(
                Self.bytes(#"{"id":9,"method":"Page.navigate","params":{"url":"https://a.test/"},"sessionId":"S1"}"#), scope: Self.regular)
        else {
            Issue.record("not forwarded")
            return
        }
        #expect(Self.json(sent)?["sessionId"]?.string == "S1")
        let raw = Self.bytes(#"{"id":9,"result":{"frameId":"P1","loaderId":"L"},"sessionId":"S1"}"#)
        #expect(filter.fromChromium(raw, session: "S1", scope: Self.regular).deliver == raw)
        let event = Self.bytes(#"{"method":"Page.frameNavigated","params":{"frame":{"id":"P1"}},"sessionId":"S1"}"#)
        #expect(filter.fromChromium(event, session: "S1", scope: Self.regular).deliver == event)
        // The same id again while it waits is refused; once answered it may be used again.
        _ = filter.fromClient(Self.bytes(#"{"id":10,"method":"Runtime.evaluate","params":{},"sessionId":"S1"}"#), scope: Self.regular)
        if case .forward = filter.fromClient(Self.bytes(#"{"id":10,"method":"Runtime.evaluate","params":{},"sessionId":"S1"}"#), scope: Self.regular) {
            Issue.record("a second command with a waiting id went through")
        }
    }

    @Test func anotherProfilesPagesAreNeverSeen() {
        var filter = Self.attached()
        // The incognito profile's page, auto-attached (auto-attach is browser-wide): detached, unseen.
        let offered = filter.fromChromium(
            Self.bytes(
                #"{"method":"Target.attachedToTarget","params":{"sessionId":"S2","targetInfo":{"targetId":"P2","type":"page","browserContextId":"OTR"},"waitingForDebugger":true},"sessionId":"\#(Self.root)"}"#
            ), session: Self.root, scope: Self.regular)
        #expect(offered.deliver == nil)
        #expect(offered.added.isEmpty)
        #expect(offered.send.count == 1)
        #expect(Self.json(offered.send[0])?["method"]?.string == "Target.detachFromTarget")
        #expect(Self.json(offered.send[0])?["params"]?["sessionId"]?.string == "S2")
        let ownID = Self.json(offered.send[0])?["id"]?.int ?? 0
        #expect(ownID >= AutomationFilter.ownIDs)
        // Its answer is the filter's, not the client's.
        #expect(filter.fromChromium(Self.bytes(#"{"id":\#(ownID),"result":{},"sessionId":"\#(Self.root)"}"#), session: Self.root, scope: Self.regular).deliver == nil)
        // Nor can it be named, closed, or listed.
        for method in ["Target.attachToTarget", "Target.closeTarget", "Target.activateTarget", "Target.getTargetInfo"] {
            guard
                case .answer(let answer) = filter.fromClient(
                    Self.bytes(#"{"id":11,"method":"\#(method)","params":{"targetId":"P2","flatten":true}}"#), scope: Self.regular)
            else {
                Issue.record("\(method) of another profile's page went through")
                continue
            }
            #expect(Self.json(answer)?["error"]?["message"]?.string == "No target with given id found")
        }
        #expect(
            filter.fromChromium(
                Self.bytes(
                    #"{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"P3","type":"page","browserContextId":"OTR"}},"sessionId":"\#(Self.root)"}"#),
                session: Self.root, scope: Self.regular
            ).deliver == nil)
        #expect(
            filter.fromChromium(
                Self.bytes(#"{"method":"Target.targetDestroyed","params":{"targetId":"P3"},"sessionId":"\#(Self.root)"}"#), session: Self.root, scope: Self.regular
            ).deliver == nil)
        _ = filter.fromClient(Self.bytes(#"{"id":12,"method":"Target.getTargets"}"#), scope: Self.regular)
        let list = filter.fromChromium(
            Self.bytes(
                #"{"id":12,"result":{"targetInfos":[{"targetId":"P1","type":"page","browserContextId":"DEF"},{"targetId":"P2","type":"page","browserContextId":"OTR"},{"targetId":"B","type":"browser_ui","browserContextId":"DEF"}]},"sessionId":"\#(Self.root)"}"#
            ), session: Self.root, scope: Self.regular)
        #expect(Self.json(list.deliver ?? [])?["result"]?["targetInfos"]?.array?.compactMap { $0["targetId"]?.string } == ["P1"])
        #expect(Self.json(list.deliver ?? [])?["sessionId"] == nil)
        // A context of its own is no way around it.
        if case .forward = filter.fromClient(Self.bytes(#"{"id":13,"method":"Storage.getCookies","params":{"browserContextId":"OTR"}}"#), scope: Self.regular) {
            Issue.record("another profile's cookies were asked for")
        }
        _ = filter.fromClient(Self.bytes(#"{"id":14,"method":"Target.getBrowserContexts"}"#), scope: Self.regular)
        let contexts = filter.fromChromium(
            Self.bytes(#"{"id":14,"result":{"browserContextIds":["OTR"],"defaultBrowserContextId":"DEF"},"sessionId":"\#(Self.root)"}"#), session: Self.root,
            scope: Self.regular)
        #expect(Self.json(contexts.deliver ?? [])?["result"] == ["browserContextIds": [], "defaultBrowserContextId": "DEF"])
    }

    @Test func theIncognitoProfilesClientWorksInItsContext() {
        var filter = AutomationFilter(root: Self.root)
        let scope = AutomationFilter.Scope.incognito("OTR")
        let regularPage = filter.fromChromium(
            Self.bytes(
                #"{"method":"Target.attachedToTarget","params":{"sessionId":"S1","targetInfo":{"targetId":"P1","type":"page","browserContextId":"DEF"}},"sessionId":"\#(Self.root)"}"#
            ),
            session: Self.root, scope: scope)
        #expect(regularPage.deliver == nil)
        let ownPage = filter.fromChromium(
            Self.bytes(
                #"{"method":"Target.attachedToTarget","params":{"sessionId":"S2","targetInfo":{"targetId":"P2","type":"page","browserContextId":"OTR"}},"sessionId":"\#(Self.root)"}"#
            ),
            session: Self.root, scope: scope)
        #expect(ownPage.added == ["S2"])
        // Cookies without a context are its context's.
        guard case .forward(let sent) = filter.fromClient(Self.bytes(#"{"id":1,"method":"Storage.getCookies"}"#), scope: scope) else {
            Issue.record("not forwarded")
            return
        }
        #expect(Self.json(sent)?["params"]?["browserContextId"]?.string == "OTR")
        #expect(!AutomationFilter.Scope.incognito(nil).allows(context: nil))
        #expect(AutomationFilter.Scope.regular(incognito: ["OTR"]).allows(context: nil))
    }

    @Test func theModelDecidesPagesAndBrowserCloseEndsOnlyTheClient() {
        var filter = Self.attached()
        #expect(
            filter.fromClient(Self.bytes(#"{"id":20,"method":"Target.createTarget","params":{"url":"about:blank","background":true}}"#), scope: Self.regular)
                == .intercept(.createTarget(url: "about:blank", background: true, newWindow: false), id: 20, session: nil))
        #expect(
            filter.fromClient(Self.bytes(#"{"id":21,"method":"Target.closeTarget","params":{"targetId":"P1"}}"#), scope: Self.regular)
                == .intercept(.closeTarget(targetID: "P1"), id: 21, session: nil))
        #expect(
            filter.fromClient(Self.bytes(#"{"id":22,"method":"Page.bringToFront","sessionId":"S1"}"#), scope: Self.regular)
                == .intercept(.activateTarget(targetID: "P1"), id: 22, session: "S1"))
        #expect(
            filter.fromClient(Self.bytes(#"{"id":23,"method":"Browser.close"}"#), scope: Self.regular) == .answerAndEnd(Self.bytes(#"{"id":23,"result":{}}"#)))
        #expect(
            filter.fromClient(Self.bytes(#"{"id":24,"method":"Target.createTarget","params":{"url":"about:blank","browserContextId":"OTR"}}"#), scope: Self.regular)
                != .intercept(.createTarget(url: "about:blank", background: false, newWindow: false), id: 24, session: nil))
    }

    @Test func sessionsUnderAPageAreTheClientsAndGoWithIt() {
        var filter = Self.attached()
        let frame = filter.fromChromium(
            Self.bytes(
                #"{"method":"Target.attachedToTarget","params":{"sessionId":"S3","targetInfo":{"targetId":"F1","type":"iframe","browserContextId":"DEF"}},"sessionId":"S1"}"#
            ),
            session: "S1", scope: Self.regular)
        #expect(frame.added == ["S3"])
        #expect(frame.deliver != nil)
        let gone = filter.fromChromium(
            Self.bytes(#"{"method":"Target.detachedFromTarget","params":{"sessionId":"S1","targetId":"P1"},"sessionId":"\#(Self.root)"}"#), session: Self.root,
            scope: Self.regular)
        #expect(Set(gone.removed) == ["S1", "S3"])
        #expect(filter.ownSessions == [Self.root])
        // A client cannot detach its own root (its connection is how it goes).
        if case .forward = filter.fromClient(Self.bytes(#"{"id":30,"method":"Target.detachFromTarget","params":{"sessionId":"\#(Self.root)"}}"#), scope: Self.regular) {
            Issue.record("the root was detached by the client")
        }
    }

    @Test func aPageSessionCannotReachTheBrowserOrTheMachineAroundIt() {
        var filter = Self.attached()
        for (method, params) in [
            ("Input.dispatchDragEvent", #"{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["/etc/passwd"],"dragOperationsMask":1}}"#),
            ("Tracing.start", "{}"), ("Target.getTargets", "{}"), ("Target.setDiscoverTargets", #"{"discover":true}"#),
            ("Target.getTargetInfo", #"{"targetId":"P2"}"#), ("Security.setIgnoreCertificateErrors", #"{"ignore":true}"#), ("PWA.install", "{}"),
            ("Memory.getBrowserSamplingProfile", "{}"),
        ] {
            guard case .answer(let answer) = filter.fromClient(Self.bytes(#"{"id":40,"method":"\#(method)","params":\#(params),"sessionId":"S1"}"#), scope: Self.regular),
                Self.json(answer)?["error"] != nil
            else {
                Issue.record("\(method) went through on a page's session")
                continue
            }
        }
        // A drag of text (no files) is a page's input like any other.
        if case .answer = filter.fromClient(
            Self.bytes(
                #"{"id":41,"method":"Input.dispatchDragEvent","params":{"type":"dragEnter","x":1,"y":1,"data":{"items":[],"dragOperationsMask":1}},"sessionId":"S1"}"#),
            scope: Self.regular)
        {
            Issue.record("a drag without files was refused")
        }
    }

    @Test func sessionsAreBoundedAndAPausedTargetIsLetRun() {
        var filter = Self.attached()
        for n in 0..<(AutomationFilter.maximumBrowserSessions - 1) {
            _ = filter.fromChromium(
                Self.bytes(
                    #"{"method":"Target.attachedToTarget","params":{"sessionId":"B\#(n)","targetInfo":{"targetId":"b\#(n)","type":"browser"}},"sessionId":"\#(Self.root)"}"#
                ),
                session: Self.root, scope: Self.regular)
        }
        if case .forward = filter.fromClient(Self.bytes(#"{"id":50,"method":"Target.attachToBrowserTarget"}"#), scope: Self.regular) {
            Issue.record("a browser session past the bound was asked for")
        }
        // A new page auto-attached waiting for this client's debugger: the gateway may let it run.
        let paused = filter.fromChromium(
            Self.bytes(
                #"{"method":"Target.attachedToTarget","params":{"sessionId":"S9","targetInfo":{"targetId":"P9","type":"page","browserContextId":"DEF"},"waitingForDebugger":true},"sessionId":"\#(Self.root)"}"#
            ), session: Self.root, scope: Self.regular)
        #expect(paused.waiting == ["S9"])
        let release = filter.release("S9").flatMap(Self.json)
        #expect(release?["method"]?.string == "Runtime.runIfWaitingForDebugger")
        #expect(release?["sessionId"]?.string == "S9")
        #expect((release?["id"]?.int ?? 0) >= AutomationFilter.ownIDs)
        #expect(filter.release("NOT-MINE") == nil)
    }

    @Test func pendingCommandsAreBounded() {
        var filter = AutomationFilter(root: Self.root, maximumPending: 2)
        _ = filter.fromClient(Self.bytes(#"{"id":1,"method":"Browser.getVersion"}"#), scope: Self.regular)
        _ = filter.fromClient(Self.bytes(#"{"id":2,"method":"Browser.getVersion"}"#), scope: Self.regular)
        guard case .answer(let refused) = filter.fromClient(Self.bytes(#"{"id":3,"method":"Browser.getVersion"}"#), scope: Self.regular) else {
            Issue.record("a third command went through")
            return
        }
        #expect(Self.json(refused)?["error"]?["message"]?.string?.contains("wait") == true)
    }
}
