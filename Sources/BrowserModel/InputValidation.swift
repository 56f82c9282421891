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

    /// A load progress: a finite number in 0…1.
    public static func progress(_ value: Double) throws -> Double {
        guard value.isFinite, (0...1).contains(value) else {
            throw ModelError.invalidArgument("progress must be a number from 0 to 1, got \(value)")
        }
        return value
    }
}
