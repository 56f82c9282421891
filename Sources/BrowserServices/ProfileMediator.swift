import BrowserModel

/// Watches a profile session's windows: gives each new window its `WindowMediator` and retires it
/// when the window goes; publishes the profile snapshots.
final class ProfileMediator: BrowserListObserver {
    unowned let session: ProfileSession
    let directory: Directory

    init(session: ProfileSession, directory: Directory) {
        self.session = session
        self.directory = directory
        session.browserList.addObserver(self)
    }

    /// Attaches a mediator to a session (once).
    static func attach(to session: ProfileSession, directory: Directory) -> ProfileMediator {
        if let existing = session.userData.get(ProfileMediator.self) { return existing }
        let mediator = ProfileMediator(session: session, directory: directory)
        session.userData.set(mediator)
        return mediator
    }

    func browserList(_ list: BrowserList, didAdd browser: Browser) {
        let mediator = WindowMediator(browser: browser, session: session, directory: directory)
        browser.userData.set(mediator)
        mediator.publish()
        publishProfiles()
    }

    func browserList(_ list: BrowserList, didRemove browser: Browser) {
        browser.userData.get(WindowMediator.self)?.stop()
        browser.userData.set(WindowMediator?.none)
        directory.removeWindow(browser.id)
        publishProfiles()
    }

    /// Publishes every dirty window of the session.
    func publishWindows() {
        for browser in session.browserList.browsers() { browser.userData.get(WindowMediator.self)?.publish() }
    }

    func snapshot(of state: BrowserState) -> ProfileSnapshot {
        let windows = session.browserList.browsers(state.isOffTheRecord ? .incognito : .regular).count
        return ProfileSnapshot(id: state.id, name: state.name, incognito: state.isOffTheRecord, parentID: state.original?.id,
                               offTheRecordID: state.offTheRecord?.id, windowCount: windows, createdAt: state.createdAt)
    }

    func publishProfiles() {
        directory.updateProfile(snapshot(of: session.browserState))
        if let otr = session.offTheRecord { directory.updateProfile(snapshot(of: otr)) }
    }
}
