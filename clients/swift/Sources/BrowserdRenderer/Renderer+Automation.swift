import BrowserdClient
import Foundation
import OpenAPIRuntime

/// Automation clients (``DevToolsGateway``): the renderer's leases in browserd (where clients attach,
/// which tab has which page), and what the model does for them.
extension Renderer: AutomationHost {
    /// The URL browserd hands to clients for the gateway (nil while it is not listening).
    var advertisedURL: String? {
        guard let gateway, let endpoint = options.devtools else { return nil }
        if let url = endpoint.advertisedURL { return url }
        let named = endpoint.advertisedHost ?? endpoint.host
        let host = named.contains(":") ? "[\(named)]" : named
        return "ws://\(host == "0.0.0.0" || host == "[::]" ? "127.0.0.1" : host):\(gateway.port)"
    }

    // MARK: Leases

    /// Puts the renderer's lease of its profile (and of its incognito profile while it has one) in
    /// browserd: at once when their pages change (``leaseWake``: no polling; it looks again at least
    /// every ``RendererPolicy/leaseLook`` all the same), else every ``RendererPolicy/leaseRenewal``; a lease browserd lost (a
    /// restart) is put back on the next renewal.
    func announceLeases() async {
        var sent: [String: (pages: [String: String], at: ContinuousClock.Instant)] = [:]
        while !Task.isCancelled {
            let profiles = [options.profileID] + (automation.incognito.map { [$0] } ?? [])
            let forced = leasesDirty
            leasesDirty = false
            for profile in profiles where chromium != nil {
                let pages = leasePages(of: profile)
                if !forced, let last = sent[profile], last.pages == pages, ContinuousClock.now - last.at < options.policy.leaseRenewal { continue }
                if await putLease(of: profile, pages: pages) {
                    sent[profile] = (pages, .now)
                } else {
                    sent[profile] = nil
                }
            }
            for gone in sent.keys where !profiles.contains(gone) { sent[gone] = nil }
            // A lease that failed is tried again soon; otherwise the next change, or the look.
            await leaseWake.wait(upTo: sent.count < profiles.count ? options.policy.leaseRetry : options.policy.leaseLook)
        }
    }

    /// The tabs of `profile` with a page, and their targets.
    func leasePages(of profile: String) -> [String: String] {
        var pages: [String: String] = [:]
        for (tab, entry) in table.entries where entry.leftAt == nil && windowProfile[entry.window] == profile {
            if let target = entry.target { pages[tab] = target }
        }
        return pages
    }

    private func putLease(of profile: String, pages: [String: String]) async -> Bool {
        guard let url = advertisedURL else { return false }
        let version = browserVersion
        let browser = Components.Schemas.RendererBrowser(
            product: version?["product"]?.string ?? "Chrome", protocolVersion: version?["protocolVersion"]?.string ?? "1.3",
            userAgent: version?["userAgent"]?.string ?? "", v8Version: version?["jsVersion"]?.string ?? "",
            webkitVersion: version?["revision"]?.string ?? "")
        let body = Components.Schemas.RendererAnnouncement(
            name: options.name, devtoolsUrl: url, controlKey: controlKey, browser: browser,
            pages: pages.sorted { $0.key < $1.key }.map { .init(tabId: $0.key, targetId: $0.value) })
        do {
            _ = try await client.api.putProfileRenderer(path: .init(profileId: profile), body: .json(body)).ok
            return true
        } catch {
            if BrowserdProblem.from(error)?.status == 403 {
                // A profile's token may not hold a lease (a tenant would name the gateway browserd calls).
                if !leaseRefusalLogged {
                    leaseRefusalLogged = true
                    logger.error("automation clients cannot attach: a renderer's lease needs the admin token (--token); this one is a profile's")
                }
            } else {
                logger.warning("the lease of profile \(profile) was not put: \(Self.brief(error))")
            }
            return false
        }
    }

    func withdrawLease(of profile: String) async {
        guard gateway != nil else { return }
        _ = try? await client.api.deleteProfileRenderer(path: .init(profileId: profile)).noContent
    }

    func withdrawLeases() async {
        await withdrawLease(of: options.profileID)
        if let incognito = automation.incognito { await withdrawLease(of: incognito) }
    }

    /// An error of browserd's client, told without the request it carried (a lease's key, a ticket).
    static func brief(_ error: any Error) -> String {
        if let problem = BrowserdProblem.from(error) { return problem.description }
        if let error = error as? ClientError { return "\(error.operationID): \(error.causeDescription) (\(type(of: error.underlyingError)))" }
        if let error = error as? DevToolsError { return "\(error)" }
        return "\(type(of: error))"
    }

    // MARK: AutomationHost

    public nonisolated func automationScope(of profile: String) -> AutomationFilter.Scope? { automation.scope(of: profile) }

    public nonisolated func automationConnection() -> DevToolsConnection? { automation.connection }

    public func admit(profile: String, ticket: String) async -> AutomationAdmission {
        do {
            let redeemed = try await client.api.redeemDevToolsTicket(path: .init(profileId: profile), body: .json(.init(ticket: ticket))).ok.body.json
            return redeemed.profileId == profile ? .admitted : .refused(status: 403, message: "The ticket is for another profile.")
        } catch {
            if let problem = BrowserdProblem.from(error), (400..<500).contains(problem.status) {
                return .refused(status: 403, message: "The ticket is not valid: unknown, already used, expired, or for another profile.")
            }
            logger.warning("a ticket could not be redeemed with browserd: \(Self.brief(error))")
            return .refused(status: 503, message: "browserd did not answer; try again in a moment.")
        }
    }

    public func carryOut(_ interception: AutomationFilter.Interception, profile: String) async throws -> JSONValue {
        switch interception {
        case .createTarget(let url, let background, let newWindow):
            let scheme = url.prefix(while: { $0 != ":" }).lowercased()
            guard url.contains(":"), AutomationFilter.navigableSchemes.contains(scheme) else {
                throw AutomationRefusal("browserd: \(scheme):\(url.isEmpty ? "" : "") URLs are not opened by automation clients (http, https, about, data, blob)")
            }
            let window = try await windowForNewPage(of: profile, newWindow: newWindow)
            let tab = try await client.api.openTab(
                path: .init(browserId: window), body: .json(.init(url: url, activate: !background, transition: .typed))
            ).created.body.json
            guard let target = await target(ofTab: tab.id) else {
                throw AutomationRefusal(
                    "browserd: tab \(tab.id) was opened but has no page (a background tab past --live-tabs has none: activate it)")
            }
            return ["targetId": .string(target)]
        case .closeTarget(let target):
            guard let tab = table.tab(ofTarget: target), let window = table.entries[tab]?.window, windowProfile[window] == profile else {
                // Not a tab's page (a popup on its way to becoming one): Chromium closes it.
                guard let connection = chromium?.connection else { throw AutomationRefusal("No target with given id found") }
                return try await connection.call("Target.closeTarget", ["targetId": .string(target)])
            }
            _ = try await client.api.closeTab(path: .init(tabId: tab)).noContent
            return ["success": true]
        case .activateTarget(let target):
            guard let tab = table.tab(ofTarget: target), let window = table.entries[tab]?.window, windowProfile[window] == profile else {
                throw AutomationRefusal("No target with given id found")
            }
            _ = try await client.api.activateTab(path: .init(tabId: tab)).ok
            return [:]
        }
    }

    /// The profile's window a client's new page opens in: its most recently active one, or a new one.
    private func windowForNewPage(of profile: String, newWindow: Bool) async throws -> String {
        if !newWindow, let window = windowIDs(of: profile).max(by: { windowActivity[$0, default: 0] < windowActivity[$1, default: 0] }) {
            return window
        }
        return try await client.api.createWindow(body: .json(.init(profileId: profile))).created.body.json.id
    }

    /// The target of the tab's page once it has one (nil if none within the attach timeout).
    private func target(ofTab tab: String) async -> String? {
        if let target = table.target(ofTab: tab) { return target }
        let timeout = Task {
            try? await Task.sleep(for: self.options.policy.attachTimeout)
            for waiter in self.targetWaiters.removeValue(forKey: tab) ?? [] { waiter.resume(returning: nil) }
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { targetWaiters[tab, default: []].append($0) }
    }

    public func execute(_ request: ScriptRequest, inTab tab: String) async throws -> ScriptOutcome? {
        guard let session = table.session(ofTab: tab), let connection = chromium?.connection else { return nil }
        let arguments = String(decoding: AutomationFilter.encode(.array(request.args)), as: UTF8.self)
        let function = "(function() {\n\(request.script)\n})"
        let expression =
            request.async
            ? "new Promise((resolve, reject) => { const a = \(arguments); a.push(resolve); try { \(function).apply(null, a); } catch (e) { reject(e); } })"
            : "(async () => \(function).apply(null, \(arguments)))()"
        do {
            let result = try await connection.call(
                "Runtime.evaluate", ["expression": .string(expression), "returnByValue": true, "awaitPromise": true, "userGesture": true],
                session: session, timeout: .milliseconds(max(request.timeoutMs, 1)))
            if let details = result["exceptionDetails"] {
                let message = details["exception"]?["description"]?.string ?? details["text"]?.string ?? "the script threw"
                return .error(name: "javascript error", message: message)
            }
            return .value(result["result"]?["value"] ?? .null)
        } catch DevToolsError.timedOut {
            return .error(name: "script timeout", message: "The script did not finish within \(request.timeoutMs) ms.")
        }
    }

    public func screenshot(ofTab tab: String) async throws -> String? {
        guard let session = table.session(ofTab: tab), let connection = chromium?.connection else { return nil }
        return try await connection.call("Page.captureScreenshot", ["format": "png"], session: session, timeout: options.policy.snapshotTimeout)["data"]?
            .string
    }
}
