public import Foundation

/// A small picture of a tab's page, taken by its renderer (Chrome's tab grid; iOS's
/// `SnapshotTabHelper`): what a tab switcher shows for a tab that has no live page. One per tab,
/// replaced by the next; it goes with the tab.
///
/// The model keeps what it knows of the picture; its bytes are here while this run holds them (set
/// in this run, or an off-the-record tab's, which are never stored). A tab read from storage knows
/// the picture without its bytes (``bytes`` nil): whoever serves them reads them from the store.
/// Its size counts in its profile's ``ByteBudget``.
///
/// Immutable, and a class so that a tab without a picture pays one pointer for it (a `WebState`
/// per loaded tab is what the working set's memory is made of).
public final class PageSnapshot: Sendable, Equatable {
    /// Names this picture (a digest of its bytes): an HTTP entity tag.
    public let etag: String
    /// `image/jpeg`, `image/png` or `image/webp`.
    public let mediaType: String
    /// The picture's size in bytes (what it costs its profile's budget).
    public let byteCount: Int
    public let capturedAt: Date
    /// The picture, when this run holds it.
    public let bytes: [UInt8]?

    public init(etag: String, mediaType: String, byteCount: Int, capturedAt: Date, bytes: [UInt8]? = nil) {
        self.etag = etag
        self.mediaType = mediaType
        self.byteCount = byteCount
        self.capturedAt = capturedAt
        self.bytes = bytes
    }

    /// The same picture without its bytes (what a restored tab knows).
    public var withoutBytes: PageSnapshot {
        bytes == nil ? self : PageSnapshot(etag: etag, mediaType: mediaType, byteCount: byteCount, capturedAt: capturedAt)
    }

    /// The same picture: its tag names its bytes, so they are not compared.
    public static func == (a: PageSnapshot, b: PageSnapshot) -> Bool {
        a === b || (a.etag == b.etag && a.mediaType == b.mediaType && a.byteCount == b.byteCount && a.capturedAt == b.capturedAt)
    }
}

extension PageSnapshot: CustomStringConvertible {
    /// What the action log shows of it (never its bytes).
    public var description: String { "\(mediaType) \(byteCount) bytes \(etag)" }
}
