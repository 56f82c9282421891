/// Which instances to ask, and in what order, for an off-the-record subject (an incognito profile, or
/// a window, tab or group of one): the database never has them, only their owner's memory does.
///
/// The owners of the regular profiles whose incognito profiles the directory announced come first
/// (for a profile: its own regular profile's owner only), then every other live instance (the
/// directory may not have heard of a profile made a moment ago); each once.
public enum OffTheRecordCandidates {
    /// An incognito profile the directory announced, held elsewhere: its id and its regular profile's.
    public struct Announced: Sendable, Equatable {
        public let id: String
        public let parentID: String

        public init(id: String, parentID: String) {
            self.id = id
            self.parentID = parentID
        }
    }

    /// The regular profiles whose owners are asked first for `subject`: a profile's own parent, or
    /// for a window, tab or group every announced parent (each once, in the directory's order).
    public static func parents(of subject: Placement.Subject, announced: [Announced]) -> [String] {
        if case .profile(let id) = subject {
            return announced.first { $0.id == id }.map { [$0.parentID] } ?? []
        }
        var parents: [String] = []
        for profile in announced where !parents.contains(profile.parentID) { parents.append(profile.parentID) }
        return parents
    }

    /// The instances' URLs to ask, in order: the parents' owners, then the other live instances,
    /// each once.
    public static func order(parentOwners: [String], otherInstances: [String]) -> [String] {
        var candidates: [String] = []
        for url in parentOwners + otherInstances where !candidates.contains(url) { candidates.append(url) }
        return candidates
    }

    /// What one candidate said when asked for the subject.
    public enum Answer: Sendable, Equatable {
        /// It has it (200).
        case has
        /// It answered that it has not (404, or another answer that says so: 401, 403, 410).
        case hasNot
        /// It could not say: no answer in time, a refused connection, a 5xx, a 429.
        case couldNotSay
    }

    /// A probe's HTTP status as an ``Answer`` (nil: no answer at all).
    public static func answer(status: Int?) -> Answer {
        switch status {
        case 200: .has
        case 401, 403, 404, 410: .hasNot
        default: .couldNotSay
        }
    }

    /// What the search concludes once every candidate was asked and none has the subject: not found
    /// only when each said it has not; when any could not say, the subject may live there, so the
    /// request is refused for now (503), never answered "not found" (issue 53).
    public static func nobodyHasIt(_ answers: [Answer]) -> Conclusion {
        answers.contains(.couldNotSay) ? .unavailable : .notFound
    }

    public enum Conclusion: Sendable, Equatable {
        case notFound
        case unavailable
    }
}
