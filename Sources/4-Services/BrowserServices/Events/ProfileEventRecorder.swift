import BrowserModel

/// The event-stream implementation of a profile's ``BrowserListConsumer``: `browsers.add` and
/// `browsers.remove`, and for a regular profile `profile.incognito` when its off-the-record profile
/// comes or goes, handed to the profile's channel when the operation ends.
final class ProfileEventRecorder: BrowserListConsumer {
    let profileID: ProfileID
    let channel: EventChannel
    private var pending: [PendingEvent] = []
    private var browsers: [BrowserItem] = []
    /// A regular profile's off-the-record profile (`.some(nil)`: none); nil for an off-the-record profile.
    private var incognitoProfileID: ProfileID??

    /// - Parameter incognitoProfileID: for a regular profile, its off-the-record profile now (`.some(nil)`
    ///   when it has none); nil for an off-the-record profile.
    init(profileID: ProfileID, channel: EventChannel, incognitoProfileID: ProfileID??) {
        self.profileID = profileID
        self.channel = channel
        self.incognitoProfileID = incognitoProfileID
    }

    var snapshot: ProfileStreamSnapshot {
        ProfileStreamSnapshot(profileID: profileID, browsers: browsers, incognitoProfileID: incognitoProfileID)
    }

    /// A regular profile's off-the-record profile was made (`id`) or destroyed (nil): `profile.incognito`,
    /// so that a watcher (a renderer) follows its windows too. Nothing when it did not change.
    func incognitoChanged(to id: ProfileID?) {
        guard let current = incognitoProfileID, current != id else { return }
        incognitoProfileID = .some(id)
        pending.append(
            PendingEvent(
                topic: .browsers, name: "profile.incognito",
                json: EventJSON.object("profileId", profileID.rawValue) {
                    $0.member("incognitoProfileId", id?.rawValue)
                }))
    }

    /// The profile's web state was replaced: `profile.webState` with its counts (never a cookie or a value).
    func webStateChanged(_ state: StorageState) {
        pending.append(
            PendingEvent(
                topic: .browsers, name: "profile.webState",
                json: EventJSON.object("profileId", profileID.rawValue) {
                    $0.member("cookies", state.cookies.count)
                    $0.member("origins", state.origins.count)
                }))
    }

    func flush() {
        guard !pending.isEmpty else { return }
        let events = pending
        pending = []
        channel.append(events, snapshot: snapshot)
    }

    /// Ends the profile's stream with `profile.deleted`.
    func close() {
        flush()
        channel.close(
            final: PendingEvent(
                topic: .control, name: "profile.deleted",
                json: EventJSON.object("profileId", profileID.rawValue) { _ in }))
    }

    func populate(browsers: [BrowserItem]) { self.browsers = browsers }

    func browserAdded(_ browser: BrowserItem) {
        browsers.append(browser)
        pending.append(
            PendingEvent(
                topic: .browsers, name: "browsers.add",
                json: EventJSON.object("profileId", profileID.rawValue) {
                    $0.key("browser")
                    $0.browserItem(browser)
                }))
    }

    func browserRemoved(id: BrowserID) {
        browsers.removeAll { $0.id == id }
        pending.append(
            PendingEvent(
                topic: .browsers, name: "browsers.remove",
                json: EventJSON.object("profileId", profileID.rawValue) {
                    $0.member("browserId", id.rawValue)
                }))
    }
}
