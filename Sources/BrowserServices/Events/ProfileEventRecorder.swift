import BrowserModel

/// The event-stream implementation of a profile's ``BrowserListConsumer``: `browsers.add` and
/// `browsers.remove`, handed to the profile's channel when the operation ends.
final class ProfileEventRecorder: BrowserListConsumer {
    let profileID: ProfileID
    let channel: EventChannel
    private var pending: [PendingEvent] = []
    private var browsers: [BrowserItem] = []

    init(profileID: ProfileID, channel: EventChannel) {
        self.profileID = profileID
        self.channel = channel
    }

    var snapshot: ProfileStreamSnapshot { ProfileStreamSnapshot(profileID: profileID, browsers: browsers) }

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
