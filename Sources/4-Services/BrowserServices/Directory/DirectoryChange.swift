public import BrowserModel

/// One change of the profile directory, as instances on one database tell each other: a profile
/// came or changed (its snapshot), or went.
public enum DirectoryChange: Sendable, Equatable {
    case put(ProfileSnapshot)
    case remove(ProfileID)
}
