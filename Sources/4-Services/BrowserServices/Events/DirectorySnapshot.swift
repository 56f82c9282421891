import JSONWriter

/// Every profile, oldest first: what a new watcher of the profile directory (`GET /v1/events`
/// without `profileId`, the administrator's view) first sees.
struct DirectorySnapshot: StreamSnapshot {
    var profiles: [ProfileSnapshot]

    private func items(_ json: inout JSONText) {
        json.key("items")
        json.beginArray()
        for profile in profiles { json.profileItem(profile) }
        json.endArray()
    }

    func initialEvents(filter: TopicFilter) -> [StreamEvent] {
        guard filter.admits(.browsers) else { return [] }
        return [StreamEvent(name: "profiles.populate", json: EventJSON.object { items(&$0) })]
    }

    func resetEvent(reason: String) -> StreamEvent {
        StreamEvent(
            name: "reset",
            json: EventJSON.object { json in
                json.member("reason", reason)
                items(&json)
            })
    }
}
