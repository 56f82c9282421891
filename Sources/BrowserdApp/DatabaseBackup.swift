import Foundation
import SQLite

/// Writes a consistent copy of the database next to it (`VACUUM INTO` on a separate read connection:
/// in WAL mode it sees one committed state while the writer goes on).
struct DatabaseBackup {
    let databasePath: String

    func write() async throws -> (path: String, bytes: Int) {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let destination = databasePath.replacingOccurrences(of: ".sqlite", with: "") + "-backup-\(stamp)-\(UInt32.random(in: 0...UInt32.max)).sqlite"
        let path = databasePath
        return try await Task.detached {
            let connection = try SQLiteConnection(path: path, mode: .readOnly)
            try connection.run("VACUUM INTO ?", destination)
            let size = (try FileManager.default.attributesOfItem(atPath: destination)[.size] as? NSNumber)?.intValue ?? 0
            return (destination, size)
        }.value
    }
}
