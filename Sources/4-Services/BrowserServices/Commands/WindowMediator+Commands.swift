import BrowserModel

// The handlers of the window's tab and group commands. Each checks what the model does not (URLs,
// ids of this window), calls the model, and answers with snapshots.
extension WindowMediator {
    func registerCommands() {
        let d = browser.dispatcher
        let name = "TabsMediator"
        func add<P, R>(_ command: Command<P, R>, _ handler: @escaping (WindowMediator, P) throws -> R) {
            d.install(command, owner: self, handlerName: name) { [unowned self] payload in try handler(self, payload) }
        }
        add(TabCommands.open) { try $0.open($1) }
        add(TabCommands.close) { m, id in
            try m.list.close(at: m.index(of: id), flags: .userAction)
            return id
        }
        add(TabCommands.activate) { m, id in
            try m.list.activate(at: m.index(of: id))
            return try m.snapshot(of: id)
        }
        add(TabCommands.pin) { m, r in
            try m.list.setPinned(r.pinned, at: m.index(of: r.tabID))
            return try m.snapshot(of: r.tabID)
        }
        add(TabCommands.move) { try $0.move($1) }
        add(TabCommands.replace) { try $0.replace($1) }
        add(TabCommands.duplicate) { try $0.duplicate($1) }
        add(TabCommands.navigate) { try $0.navigate($1) }
        add(TabCommands.updatePageState) { try $0.updatePageState($1) }
        add(TabCommands.setSnapshot) { m, update in
            let index = try m.index(of: update.tabID)
            try m.list.webState(at: index)!.setSnapshot(update.snapshot)
            return m.list.tabSnapshot(at: index, browserID: m.browser.id)
        }
        add(TabCommands.closeMany) { try $0.closeMany($1) }
        add(TabCommands.restoreClosed) { try $0.restoreClosed($1) }
        add(TabCommands.closeAll) { try $0.closeAll($1) }
        add(TabCommands.undoCloseAll) { m, id in
            guard let closing = m.session.closings[id] else { throw ModelError.closingNotFound(id) }
            let profileID = m.profileID(of: closing)
            let back = try m.session.undoClosing(id)
            // Their rows were deleted by the close, their pictures' rows with them: written again.
            for (browser, tabs) in back {
                guard let window = browser.userData.get(WindowMediator.self) else { continue }
                for tab in tabs where tab.snapshot != nil { window.persistence.markSnapshot(tab) }
            }
            return TabsClosingSnapshot(
                id: id, profileID: profileID, policy: closing.policy, state: .undone,
                tabIDs: back.flatMap { $0.tabs.map(\.id) }, browserIDs: back.map(\.browser.id))
        }
        add(TabCommands.confirmCloseAll) { m, id in
            guard let closing = m.session.closings[id] else { throw ModelError.closingNotFound(id) }
            m.session.confirmClosing(id)
            return TabsClosingSnapshot(closing, profileID: m.profileID(of: closing), state: .confirmed)
        }
        add(TabCommands.createGroup) { try $0.createGroup($1) }
        add(TabCommands.updateGroup) { try $0.updateGroup($1) }
        add(TabCommands.addToGroup) { m, r in
            let group = try m.group(r.groupID ?? TabGroupID(rawValue: ""))
            // A tab of another window of the profile comes over first (`MoveToGroup` across windows:
            // detached there, inserted here unpinned), then joins the group with the others.
            // Every tab is checked before any moves, so a refused request changes nothing.
            let foreign = try r.tabIDs.filter { m.list.index(ofTabWithID: $0) < 0 }.map { id -> TabID in
                guard let (source, _) = m.session.locate(id), source !== m.browser else { throw ModelError.tabNotFound(id) }
                guard source.isIncognito == m.browser.isIncognito else {
                    throw ModelError.incognitoMismatch("tabs cannot move between incognito and regular windows")
                }
                return id
            }
            guard m.list.count + foreign.count <= m.list.maxCount else {
                throw ModelError.limitReached(what: "tabs per window", limit: m.list.maxCount)
            }
            for id in foreign { try m.session.moveTab(id, to: m.browser, index: nil) }
            try m.list.moveToGroup(indices: Set(r.tabIDs.map(m.index(of:))), group: group)
            return m.snapshot(of: group)
        }
        add(TabCommands.ungroup) { m, r in
            try m.list.removeFromGroups(indices: Set(r.tabIDs.map(m.index(of:))))
            return try r.tabIDs.map(m.snapshot(of:))
        }
        add(TabCommands.moveGroup) { m, r in
            let group = try m.group(r.groupID)
            try m.list.moveGroup(group, before: r.beforeIndex)
            return m.snapshot(of: group)
        }
        add(TabCommands.deleteGroup) { m, id in
            try m.list.deleteGroup(m.group(id))
            return id
        }
        add(TabCommands.closeGroup) { m, id in try m.closeMany(.group(id)) }
        add(TabCommands.closeWindow) { m, id in
            try m.session.closeBrowser(m.browser)
            return id
        }
        add(TabCommands.setBounds) { m, bounds in
            guard bounds.width >= 0, bounds.height >= 0 else { throw ModelError.invalidArgument("width and height must not be negative") }
            m.browser.setBounds(bounds)
            m.boundsChanged()
            return m.browser.bounds
        }
        add(TabCommands.broadcast) { m, update in
            try m.browser.broadcaster.update(update.key, to: update.value)
            let key = try m.browser.broadcaster.key(named: update.key)
            return BroadcastSnapshot(key: key.name, type: key.type, value: m.browser.broadcaster.value(of: key.name))
        }

        // The UI commands every window has.
        add(TabCommands.openNewTab) { m, args in
            try args.only(["url", "incognito", "inBackground"], command: "openNewTab")
            let url = try args.string("url", command: "openNewTab") ?? WindowMediator.newTabURL
            let background = try args.bool("inBackground", command: "openNewTab") ?? false
            if let incognito = try args.bool("incognito", command: "openNewTab"), incognito != m.browser.isIncognito {
                // The other kind of tab opens in the profile's window of that kind (made when missing).
                let other = try m.session.windowForOpening(incognito: incognito)
                var forwarded = args
                forwarded["incognito"] = nil
                return try other.dispatcher.dispatch(TabCommands.openNewTab, forwarded)
            }
            return try m.open(OpenTabRequest(url: url, activate: !background))
        }
        add(TabCommands.closeTab) { m, args in
            try args.only(["tabId"], command: "closeTab")
            let id = TabID(rawValue: try args.requiredString("tabId", command: "closeTab"))
            try m.list.close(at: m.index(of: id), flags: .userAction)
            return id
        }
        add(TabCommands.activateTab) { m, args in
            try args.only(["tabId"], command: "activateTab")
            let id = TabID(rawValue: try args.requiredString("tabId", command: "activateTab"))
            try m.list.activate(at: m.index(of: id))
            return try m.snapshot(of: id)
        }
        add(TabCommands.loadURL) { m, args in
            try args.only(["url"], command: "loadURL")
            let url = try args.requiredString("url", command: "loadURL")
            guard let active = m.list.activeWebState else {
                throw ModelError.invalidArgument("the window has no active tab to load the URL in")
            }
            return try m.navigate(NavigateRequest(tabID: active.id, navigation: .navigate(url: url, transition: .typed)))
        }
    }

    func open(_ request: OpenTabRequest) throws -> TabSnapshot {
        let url = try url(request.url)
        if request.openerID != nil && request.inheritOpener {
            throw ModelError.invalidArgument("give either openerTabId or inheritOpener, not both")
        }
        let opener = try request.openerID.map { id -> WebState in
            let index = list.index(ofTabWithID: id)
            guard index >= 0 else { throw ModelError.openerNotInList(id) }
            return list.webState(at: index)!
        }
        let group = try request.groupID.map(group)
        let tab = try newTab(url: url, transition: request.transition)
        let index = try list.insert(
            tab,
            InsertionParams(
                index: request.index, opener: opener, inheritOpener: request.inheritOpener,
                activate: request.activate, pinned: request.pinned, group: group))
        return list.tabSnapshot(at: index, browserID: browser.id)
    }

    func move(_ request: MoveTabRequest) throws -> TabSnapshot {
        let from = try index(of: request.tabID)
        let destination: Browser
        if let destinationID = request.destination, destinationID != browser.id {
            guard let other = session.browser(withID: destinationID) else {
                throw ModelError.crossProfile("window \(destinationID) is not a window of this tab's profile")
            }
            destination = other
        } else {
            destination = browser
        }
        if let groupID = request.groupID {
            guard let group = destination.webStateList.group(withID: groupID) else { throw ModelError.groupNotFound(groupID) }
            let index = try session.moveTab(
                request.tabID, to: destination, index: request.index, activate: request.activate,
                group: group)
            return destination.webStateList.tabSnapshot(at: index, browserID: destination.id)
        }
        if destination !== browser {
            let index = try session.moveTab(
                request.tabID, to: destination, index: request.index, activate: request.activate,
                pinned: request.pinned)
            return destination.webStateList.tabSnapshot(at: index, browserID: destination.id)
        }
        guard let to = request.index, list.containsIndex(to) else {
            throw ModelError.indexOutOfRange(index: request.index ?? -1, validRange: 0...(list.count - 1))
        }
        try list.move(from: from, to: to)
        if request.activate { try list.activate(at: try index(of: request.tabID)) }
        return try snapshot(of: request.tabID)
    }

    func replace(_ request: ReplaceRequest) throws -> TabSnapshot {
        let index = try index(of: request.tabID)
        let tab = try newTab(url: try url(request.url), transition: .typed)
        try list.replace(at: index, with: tab)
        return list.tabSnapshot(at: index, browserID: browser.id)
    }

    /// As `chrome::DuplicateTabAt` (`BrowserCommandsTest.DuplicateTab`): inserted right after the original
    /// with `ADD_ACTIVE | ADD_INHERIT_OPENER` — active, its opener the original, every other opener
    /// forgotten; `activate: false` asks for a background copy with no opener (as before).
    func duplicate(_ request: DuplicateRequest) throws -> TabSnapshot {
        let index = try index(of: request.tabID)
        let original = list.webState(at: index)!
        try browser.browserState.budget.check(adding: original.byteCount)
        let copy = try original.duplicate()
        var params = InsertionParams(index: index + 1, pinned: list.isPinned(at: index), group: list.group(at: index))
        if request.activate {
            params.activate = true
            params.opener = original
            params.forgetsOtherOpeners = true
        }
        let at = try list.insert(copy, params)
        return list.tabSnapshot(at: at, browserID: browser.id)
    }

    func navigate(_ request: NavigateRequest) throws -> TabSnapshot {
        let tab = try tab(request.tabID)
        switch request.navigation {
        case .navigate(let url, let transition):
            let url = try self.url(url)
            try browser.browserState.budget.check(adding: url.utf8.count)
            if request.pends {
                try tab.startNavigation(to: url, transition: transition)
            } else {
                try tab.navigate(to: url, transition: transition, maxItems: limits.historyEntries)
            }
        case .replaceCurrent(let url, let transition):
            let url = try self.url(url)
            try browser.browserState.budget.check(adding: url.utf8.count)
            try tab.navigate(replacingCurrentWith: url, transition: transition)
        case .pushWithinDocument(let url, let transition):
            let url = try self.url(url)
            try browser.browserState.budget.check(adding: url.utf8.count)
            try tab.navigate(pushingWithinDocument: url, transition: transition, maxItems: limits.historyEntries)
        case .back: try move(tab, offset: -1, pends: request.pends)
        case .forward: try move(tab, offset: 1, pends: request.pends)
        case .go(let offset): try move(tab, offset: offset, pends: request.pends)
        case .reload: if request.pends { tab.startReload() } else { tab.reload() }
        case .commitPending(let id, let url):
            let url = try url.map { try self.url($0) }
            try browser.browserState.budget.check(adding: url?.utf8.count ?? 0)
            try tab.commitPending(id, url: url, maxItems: limits.historyEntries)
        case .discardPending(let id): try tab.discardPending(id)
        }
        return try snapshot(of: request.tabID)
    }

    /// A move within `tab`'s history, pending for its page or at once.
    private func move(_ tab: WebState, offset: Int, pends: Bool) throws {
        if pends { try tab.startMove(offset: offset) } else { try tab.go(offset: offset) }
    }

    func updatePageState(_ update: PageStateUpdate) throws -> TabSnapshot {
        let index = try index(of: update.tabID)
        let tab = list.webState(at: index)!
        // A renderer's title is cut as Chromium cuts it, never refused.
        let title = update.title.map { InputValidation.truncatedTitle($0, limits: limits) }
        // A new title goes into the current history entry: the history must be here before anything changes.
        if let title, title != tab.title { try WebState.requireHistories(of: [tab]) }
        let progress = try update.progress.map(InputValidation.progress)
        let favicon: String?? = try update.faviconURL.map { try $0.map { try url(InputValidation.faviconURL($0, limits: limits)) } }
        // The title and the favicon URL are charged to the profile's budget together, before anything changes.
        let titleGrowth = title.map { $0.utf8.count - tab.title.utf8.count } ?? 0
        let faviconGrowth = favicon.map { ($0?.utf8.count ?? 0) - (tab.faviconURL?.utf8.count ?? 0) } ?? 0
        try browser.browserState.budget.check(adding: titleGrowth + faviconGrowth)
        let opener: WebState?? = try update.openerID.map { id in
            try id.map { id in
                let openerIndex = list.index(ofTabWithID: id)
                guard openerIndex >= 0 else { throw ModelError.openerNotInList(id) }
                return list.webState(at: openerIndex)!
            }
        }
        // Observers hear of it (openerChange) only when it changes: the version, the read and the stream follow.
        if let opener { try list.setOpener(opener, at: index) }
        try tab.updatePageState(title: title, isLoading: update.loading, progress: progress, faviconURL: favicon, isCrashed: update.crashed)
        return list.tabSnapshot(at: index, browserID: browser.id)
    }

    func closeMany(_ selector: CloseTabsSelector) throws -> CloseTabsResult {
        let closed: [WebState]
        switch selector {
        case .all: closed = try list.closeAll(flags: .userAction)
        case .allNonPinned: closed = try list.closeAllNonPinned(flags: .userAction)
        case .allExcept(let id): closed = try list.closeOthers(keeping: index(of: id), flags: .userAction)
        case .group(let id): closed = try session.closeGroup(group(id), in: browser)
        case .tabs(let ids):
            let indices = Set(try ids.map(index(of:)))
            closed = try list.performBatch { list in try list.close(atIndices: indices, flags: .userAction) }
        }
        return CloseTabsResult(closedTabIDs: closed.reversed().map(\.id), activeTabID: list.activeWebState?.id)
    }

    func restoreClosed(_ request: RestoreClosedTabRequest) throws -> TabSnapshot {
        guard !browser.isIncognito else {
            throw ModelError.incognitoMismatch("incognito windows have no recently closed tabs")
        }
        let newWindow = request.newWindow.flatMap { session.browser(withID: $0) }
        let (target, _, index) =
            try request.entry.map { try session.restoreClosedTab($0, activate: request.activate, newWindow: newWindow) }
            ?? session.restoreMostRecentClosedTab(in: browser, activate: request.activate)
        return target.webStateList.tabSnapshot(at: index, browserID: target.id)
    }

    /// A close-all over `request.windows` (this window's profile and mode). A pending close-all that
    /// touches one of them is confirmed first (as `TabsCloser` confirms before closing again), and the
    /// oldest pending ones past `maxPending`.
    func closeAll(_ request: CloseAllTabsRequest) throws -> TabsClosingSnapshot {
        let browsers = try request.windows.map { id -> Browser in
            guard let window = session.browser(withID: id), window.isIncognito == browser.isIncognito else {
                throw ModelError.browserNotFound(id)
            }
            return window
        }
        // Everything the close must keep is in memory before anything changes (confirming included).
        try session.requireClosable(browsers, policy: request.policy)
        let ids = Set(request.windows)
        for closing in session.closings.values.sorted(by: { $0.closedAt < $1.closedAt })
        where closing.parts.contains(where: { ids.contains($0.browserID) }) {
            session.confirmClosing(closing.id)
        }
        let pending = session.closings.values.sorted { $0.closedAt < $1.closedAt }
        for closing in pending.prefix(max(0, pending.count - request.maxPending + 1)) { session.confirmClosing(closing.id) }
        let closing = try session.closeTabs(in: browsers, policy: request.policy)
        // Nothing closed: nothing to undo.
        return TabsClosingSnapshot(closing, profileID: browser.browserState.id, state: closing.parts.isEmpty ? .confirmed : .pending)
    }

    func profileID(of closing: TabsClosing) -> ProfileID {
        closing.parts.first?.incognito == true ? (session.offTheRecord?.id ?? session.browserState.id) : session.browserState.id
    }

    func createGroup(_ request: CreateGroupRequest) throws -> GroupSnapshot {
        let indices = Set(try request.tabIDs.map(index(of:)))
        var data: TabGroupVisualData?
        if request.title != nil || request.color != nil {
            data = TabGroupVisualData(
                title: try InputValidation.title(request.title ?? "", limits: limits),
                color: request.color ?? TabGroupColor.next(after: list.groups.map(\.visualData.color)))
        }
        return snapshot(of: try list.createGroup(indices: indices, visualData: data))
    }

    func updateGroup(_ request: UpdateGroupRequest) throws -> GroupSnapshot {
        let group = try group(request.groupID)
        var data = group.visualData
        if let title = request.title { data.title = try InputValidation.title(title, limits: limits) }
        if let color = request.color { data.color = color }
        if let collapsed = request.collapsed { data.collapsed = collapsed }
        try list.updateVisualData(of: group, to: data)
        return snapshot(of: group)
    }
}
