import Foundation
import HTTPServer

/// A window in `GET /v1/browsers` as another instance answered it (several instances on one
/// database): its id and creation time, to merge it into one order, and its JSON as written there.
public struct ListedWindow: Sendable {
    public let id: String
    /// When it was created, in whole milliseconds (what the JSON's `createdAt` carries).
    public let createdAtMilliseconds: Int64
    public let json: [UInt8]

    public init(id: String, createdAtMilliseconds: Int64, json: [UInt8]) {
        self.id = id
        self.createdAtMilliseconds = createdAtMilliseconds
        self.json = json
    }

    static func milliseconds(_ date: Date) -> Int64 { JSONText.milliseconds(date) }
}
