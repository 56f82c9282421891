public import Logging

/// A log handler that passes every message and metadata value through ``LogText/escaped(_:)`` before
/// the handler it wraps writes it: whatever a client put in a path, a header or a body, it never
/// reaches the log as a raw control character (no forged lines, no terminal escapes).
public struct EscapingLogHandler: LogHandler {
    public var wrapped: any LogHandler

    public init(_ wrapped: any LogHandler) { self.wrapped = wrapped }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = "\(LogText.escaped(event.message.description))"
        event.metadata = event.metadata.map { $0.mapValues(Self.escaped) }
        wrapped.log(event: event)
    }

    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(LogText.escaped(text))
        case .stringConvertible(let convertible): .string(LogText.escaped(convertible.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(values.mapValues(escaped))
        }
    }
}
