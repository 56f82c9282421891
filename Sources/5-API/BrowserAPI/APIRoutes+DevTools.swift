import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

// Automation clients (issue 51): the renderers' leases, and each profile's DevTools directory as
// Chromium's `/json/*` answer it. The socket itself is the renderer's (its gateway); browserd hands
// out its URL with a single-use ticket and redeems the ticket when the gateway asks.
extension APIRoutes {
    /// The ticket target of a profile's DevTools socket (never a stream's: those start with `/v1/`).
    static func devToolsTicketTarget(_ profile: ProfileID) -> String { "devtools:\(profile.rawValue)" }

    func registerDevTools(in router: inout Router) {
        let service = self.service
        let leases = self.leases
        let tickets = self.tickets
        let tokens = self.tokens
        let routes = self

        router.add(
            .put, "/v1/profiles/{profileId}/renderer",
            deferred { request in
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard service.profile(id) != nil else { throw APIProblem.profileNotFound(id.rawValue) }
                let announcement = try Self.rendererAnnouncement(request)
                let before = leases.lastPages(of: id)
                let lease = leases.put(
                    id, name: announcement.name, devtoolsURL: announcement.devtoolsURL, controlKey: announcement.controlKey,
                    browser: announcement.browser, pages: announcement.pages)
                await routes.commitPendingWithoutPage(Set(before).subtracting(announcement.pages.map(\.tab)), of: id)
                return Self.json(Self.leaseBytes(lease, seconds: Int(leases.duration.components.seconds)))
            })
        router.add(
            .get, "/v1/profiles/{profileId}/renderer",
            immediate { request in
                try Self.noParameters(request)
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard service.profile(id) != nil else { throw APIProblem.profileNotFound(id.rawValue) }
                guard let lease = leases.lease(of: id) else { throw APIProblem.notFound("no-renderer", "No renderer holds profile \(id) now.") }
                return Self.json(Self.leaseBytes(lease, seconds: Int(leases.duration.components.seconds)))
            })
        router.add(
            .delete, "/v1/profiles/{profileId}/renderer",
            deferred { request in
                try Self.noParameters(request)
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard service.profile(id) != nil else { throw APIProblem.profileNotFound(id.rawValue) }
                let before = leases.lastPages(of: id)
                leases.remove(id)
                await routes.commitPendingWithoutPage(before, of: id)
                return .noContent
            })

        let version: @Sendable (HTTPRequest) throws -> HTTPResponse = { request in
            try Self.noParameters(request)
            let id = ProfileID(rawValue: request.parameter("profileId"))
            guard service.profile(id) != nil else { throw APIProblem.profileNotFound(id.rawValue) }
            let lease = try Self.liveLease(of: id, leases)
            // Stream tickets' store: the caller's one bound (its unused tickets of both kinds). A HEAD
            // (whose body nobody reads) takes none: the URL it would carry goes without one.
            let ticket = request.method == .head ? "" : try Self.issueTicket(tickets, target: Self.devToolsTicketTarget(id)).ticket
            return Self.json(
                APIEncoding.bytes { json in
                    json.beginObject()
                    json.member("Browser", lease.browser.product)
                    json.member("Protocol-Version", lease.browser.protocolVersion)
                    json.member("User-Agent", lease.browser.userAgent)
                    json.member("V8-Version", lease.browser.v8Version)
                    json.member("WebKit-Version", lease.browser.webkitVersion)
                    json.member("webSocketDebuggerUrl", "\(lease.devtoolsURL)/devtools/browser/\(id.rawValue)?ticket=\(ticket)")
                    json.endObject()
                })
        }
        // Playwright asks with the trailing slash, Puppeteer without.
        router.add(.get, "/v1/profiles/{profileId}/devtools/json/version", deferred { try version($0) })
        router.add(.get, "/v1/profiles/{profileId}/devtools/json/version/", deferred { try version($0) })

        let list: @Sendable (HTTPRequest) throws -> HTTPResponse = { request in
            try Self.noParameters(request)
            let id = ProfileID(rawValue: request.parameter("profileId"))
            guard service.profile(id) != nil else { throw APIProblem.profileNotFound(id.rawValue) }
            let lease = try Self.liveLease(of: id, leases)
            return Self.json(
                APIEncoding.bytes { json in
                    json.beginArray()
                    for page in lease.pages {
                        // A tab the renderer still names but the model closed meanwhile is not listed.
                        guard let (tab, _) = service.tab(page.tab), service.rootProfile(ofTab: page.tab) == service.rootProfile(of: id) else {
                            continue
                        }
                        json.beginObject()
                        json.member("description", "")
                        json.member("devtoolsFrontendUrl", "")
                        json.member("id", page.target)
                        json.member("title", tab.title)
                        json.member("type", "page")
                        json.member("url", tab.url)
                        json.member("browserdTabId", tab.id.rawValue)
                        json.member("browserdWindowId", tab.browserID.rawValue)
                        json.endObject()
                    }
                    json.endArray()
                })
        }
        for path in ["/json/list", "/json/list/", "/json", "/json/"] {
            router.add(.get, "/v1/profiles/{profileId}/devtools" + path, immediate { try list($0) })
        }

        router.add(
            .post, "/v1/profiles/{profileId}/devtools/redemptions",
            deferred { request in
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard service.profile(id) != nil else { throw APIProblem.profileNotFound(id.rawValue) }
                let body = try RequestBody(request, allowed: ["ticket"])
                let ticket = try body.requiredString("ticket", maxLength: 256)
                // Used up whatever comes of it; a ticket of a token revoked since is void.
                guard let redeemed = tickets.redeem(ticket, target: Self.devToolsTicketTarget(id)),
                    redeemed.tokenID.map({ tokens.record($0) != nil }) ?? true
                else {
                    throw APIProblem.notFound("ticket-not-found", "No such ticket for this profile (unknown, used, expired, or another's).")
                }
                return Self.json(
                    APIEncoding.bytes { json in
                        json.beginObject()
                        json.member("profileId", id.rawValue)
                        json.endObject()
                    })
            })
    }

    /// `object` (an encoded JSON object) with one more member, `key`: `value` (encoded JSON).
    static func appending(_ key: String, _ value: [UInt8], to object: [UInt8]) -> [UInt8] {
        guard object.last == UInt8(ascii: "}") else { return object }
        let name = APIEncoding.bytes { $0.value(key) }
        return object.dropLast() + (object.count > 2 ? [UInt8(ascii: ",")] : []) + name + [UInt8(ascii: ":")] + value + [UInt8(ascii: "}")]
    }

    static func liveLease(of profile: ProfileID, _ leases: RendererLeases) throws -> RendererLeases.Lease {
        guard let lease = leases.lease(of: profile) else {
            throw HTTPError(
                503, kind: "no-renderer", title: "No Renderer",
                detail: "No renderer holds this profile now: start browserd-renderer for it, or wait for it to come back.",
                headers: ["Retry-After": "5"])
        }
        return lease
    }

    struct Announcement {
        var name: String
        var devtoolsURL: String
        var controlKey: String
        var browser: RendererLeases.Browser
        var pages: [(tab: TabID, target: String)]
    }

    /// The members of `PUT /v1/profiles/{id}/renderer`, each checked (422 naming it).
    static func rendererAnnouncement(_ request: HTTPRequest) throws -> Announcement {
        let body = try RequestBody(request, allowed: ["name", "devtoolsUrl", "controlKey", "browser", "pages"])
        let name = try body.requiredString("name", maxLength: 128)
        guard !name.isEmpty else { throw APIProblem.invalidField("name", "must not be empty") }
        let url = try body.requiredString("devtoolsUrl", maxLength: 2048)
        guard url.hasPrefix("ws://") || url.hasPrefix("wss://"), !url.hasSuffix("/"), !url.contains("?"), !url.contains("#"),
            url.count > (url.hasPrefix("wss://") ? 6 : 5), !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        else {
            throw APIProblem.invalidField("devtoolsUrl", "must be a ws:// or wss:// URL without a query, a fragment or a trailing slash")
        }
        let key = try body.requiredString("controlKey", maxLength: 128)
        guard key.count >= 32,
            key.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "-" || $0 == "_" })
        else {
            throw APIProblem.invalidField("controlKey", "must be 32 to 128 characters of A-Z, a-z, 0-9, - and _")
        }
        guard case .object(let members)? = body.value("browser") else { throw APIProblem.invalidField("browser", "must be an object") }
        var fields: [String: String] = [:]
        let names = ["product", "protocolVersion", "userAgent", "v8Version", "webkitVersion"]
        for (member, value) in members {
            guard names.contains(member) else { throw APIProblem.invalidField("browser.\(APIProblem.echo(member))", "is not a known member") }
            guard case .string(let text) = value, text.utf8.count <= 512 else {
                throw APIProblem.invalidField("browser.\(member)", "must be a string of at most 512 bytes")
            }
            fields[member] = text
        }
        for member in names where fields[member] == nil { throw APIProblem.invalidField("browser.\(member)", "is required") }
        guard case .array(let items)? = body.value("pages") else { throw APIProblem.invalidField("pages", "must be an array") }
        guard items.count <= RendererLeases.maximumPages else {
            throw APIProblem.invalidField("pages", "must hold at most \(RendererLeases.maximumPages) pages")
        }
        var pages: [(tab: TabID, target: String)] = []
        for (index, item) in items.enumerated() {
            guard case .object(let page) = item, page.count == 2,
                case .string(let tab)? = page.first(where: { $0.key == "tabId" })?.value,
                case .string(let target)? = page.first(where: { $0.key == "targetId" })?.value
            else {
                throw APIProblem.invalidField("pages[\(index)]", "must be {tabId, targetId}")
            }
            guard (1...64).contains(tab.utf8.count) else { throw APIProblem.invalidField("pages[\(index)].tabId", "must be 1 to 64 bytes") }
            guard (1...64).contains(target.utf8.count), target.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") })
            else {
                throw APIProblem.invalidField("pages[\(index)].targetId", "must be 1 to 64 characters of A-Z, a-z, 0-9 and -")
            }
            pages.append((TabID(rawValue: tab), target))
        }
        return Announcement(
            name: name, devtoolsURL: url, controlKey: key,
            browser: RendererLeases.Browser(
                product: fields["product"]!, protocolVersion: fields["protocolVersion"]!, userAgent: fields["userAgent"]!,
                v8Version: fields["v8Version"]!, webkitVersion: fields["webkitVersion"]!),
            pages: pages)
    }

    static func leaseBytes(_ lease: RendererLeases.Lease, seconds: Int) -> [UInt8] {
        APIEncoding.bytes { json in
            json.beginObject()
            json.member("name", lease.name)
            json.member("devtoolsUrl", lease.devtoolsURL)
            json.key("browser")
            json.beginObject()
            json.member("product", lease.browser.product)
            json.member("protocolVersion", lease.browser.protocolVersion)
            json.member("userAgent", lease.browser.userAgent)
            json.member("v8Version", lease.browser.v8Version)
            json.member("webkitVersion", lease.browser.webkitVersion)
            json.endObject()
            json.key("pages")
            json.beginArray()
            for page in lease.pages {
                json.beginObject()
                json.member("tabId", page.tab.rawValue)
                json.member("targetId", page.target)
                json.endObject()
            }
            json.endArray()
            json.member("leaseSeconds", seconds)
            json.member("expiresAt", JSONText.timestamp(lease.expiresAt))
            json.endObject()
        }
    }
}

extension APIRoutes {
    /// Settles what leases that ran out leave behind: the navigations pending for their pages commit
    /// (``commitPendingWithoutPage(_:of:)``), as when a renderer gives its lease up; so do those a
    /// failing store kept from committing at an earlier sweep. The app calls it every
    /// ``RendererLeases/expirySweep``.
    /// - Returns: how many leases ran out.
    @discardableResult
    public func settleExpiredLeases() async -> Int {
        for (profile, tabs) in leases.takeUnsettled() { await commitPendingWithoutPage(tabs, of: profile) }
        let expired = leases.takeExpired()
        for (profile, tabs) in expired { await commitPendingWithoutPage(tabs, of: profile) }
        return expired.count
    }

    /// Tabs whose live page is gone (the renderer's lease no longer names it) commit the navigation
    /// still pending for that page at once, as a tab without a page does: no page is left to decide.
    /// A navigation that changed meanwhile is left to its own page (its commit answers 409 and is
    /// dropped); one the store could not take (or read for) is tried again at the next sweep
    /// (``RendererLeases/settleLater(_:tabs:)``).
    func commitPendingWithoutPage(_ tabs: some Collection<TabID>, of profile: ProfileID) async {
        var failed: [TabID] = []
        for tab in tabs {
            guard let (snapshot, _) = service.tab(tab), let pending = snapshot.pending else { continue }
            do {
                _ = try await service.dispatch(
                    TabCommands.navigate, NavigateRequest(tabID: tab, navigation: .commitPending(id: pending.id, url: nil)), in: snapshot.browserID)
            } catch {
                // What the API answers 503 for (storage could not save or read) may pass; a 4xx will not.
                if (APIProblem.from(error) as? HTTPError)?.problem.status == 503 { failed.append(tab) }
            }
        }
        leases.settleLater(profile, tabs: failed)
    }
}
