/// Checks of client-supplied values the model stores.
public enum InputValidation {
    /// A page title: at most `limits.titleCharacters` characters.
    /// - Throws: ``ModelError/titleTooLong(length:limit:)``.
    public static func title(_ title: String, limits: ModelLimits = ModelLimits()) throws -> String {
        let length = title.unicodeScalars.count  // code points, as the contract's maxLength counts
        guard length <= limits.titleCharacters else {
            throw ModelError.titleTooLong(length: length, limit: limits.titleCharacters)
        }
        return title
    }

    /// A page title as a renderer reports it: cut to its first `limits.titleCharacters` characters
    /// (code points, the unit ``title(_:limits:)`` and the contract count), as Chromium truncates a
    /// page's title rather than refusing it.
    public static func truncatedTitle(_ title: String, limits: ModelLimits = ModelLimits()) -> String {
        let scalars = title.unicodeScalars
        guard scalars.count > limits.titleCharacters else { return title }
        return String(String.UnicodeScalarView(scalars.prefix(limits.titleCharacters)))
    }

    /// A favicon URL as a renderer reports it: at most `limits.faviconURLBytes` UTF-8 bytes (`data:`
    /// URLs included).
    /// - Throws: ``ModelError/invalidArgument(_:)`` naming the limit (never the value).
    public static func faviconURL(_ url: String, limits: ModelLimits = ModelLimits()) throws -> String {
        let bytes = url.utf8.count
        guard bytes <= limits.faviconURLBytes else {
            throw ModelError.invalidArgument(
                "faviconUrl has \(bytes) bytes; the limit is \(limits.faviconURLBytes) bytes (\(limits.faviconURLBytes / 1024) KiB), data: URLs included")
        }
        return url
    }

    /// A load progress: a finite number in 0…1.
    public static func progress(_ value: Double) throws -> Double {
        guard value.isFinite, (0...1).contains(value) else {
            throw ModelError.invalidArgument("progress must be a number from 0 to 1, got \(value)")
        }
        return value
    }
}
