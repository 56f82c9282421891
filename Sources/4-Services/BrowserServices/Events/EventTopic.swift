import Foundation

/// What an event is about; a stream may ask for some topics only (`?topics=tabs,toolbar`).
public enum EventTopic: String, Sendable, CaseIterable {
    case tabs, groups, toolbar, location, broadcasts, ui, actions
    /// Windows of a profile (the profile stream).
    case browsers
    /// Framing and lifecycle events (`batch.begin`, `batch.end`, `browser.closed`, `reset`): every
    /// stream gets them whatever its filter.
    case control
}

/// The topics a stream asked for; nil asks for everything.
public struct TopicFilter: Sendable, Hashable {
    public let topics: Set<EventTopic>?

    public init(_ topics: Set<EventTopic>?) { self.topics = topics }

    public static let all = TopicFilter(nil)

    public func admits(_ topic: EventTopic) -> Bool { topic == .control || topics?.contains(topic) ?? true }

    /// Parses `tabs,groups,…`; the stream topics a client may name.
    /// - Returns: nil when a name is unknown.
    public static func parse(_ text: String?) -> TopicFilter? {
        guard let text, !text.isEmpty else { return .all }
        var topics: Set<EventTopic> = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let topic = EventTopic(rawValue: name.trimmingCharacters(in: .whitespaces)), topic != .control,
                topic != .browsers
            else { return nil }
            topics.insert(topic)
        }
        return TopicFilter(topics)
    }
}
