import Foundation
import SQLite

/// Writes a consistent copy of the database next to it (`VACUUM INTO` on a separate read connection:
/// in WAL mode it sees one committed state while the writer goes on).
///
/// Only the newest `keep` backups stay: each new one removes the oldest beyond that, so repeated calls
/// cannot fill the disk.
struct DatabaseBackup {
    let databasePath: String
    /// Backups kept, the newest (`--backup-keep`).
    var keep = 5

    func write() async throws -> (path: String, bytes: Int) {
        let written = try await copy()
        prune()
        return written
    }

    /// The backups beside the database, oldest first (their names carry the time they were made).
    func existing() -> [String] {
        let directory = (databasePath as NSString).deletingLastPathComponent
        let prefix = ((databasePath as NSString).lastPathComponent as NSString).deletingPathExtension + "-backup-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".sqlite") }.sorted()
            .map { (directory as NSString).appendingPathComponent($0) }
    }

    /// Removes the oldest backups beyond ``keep``.
    func prune() {
        let all = existing()
        for path in all.dropLast(keep) { try? FileManager.default.removeItem(atPath: path) }
    }

    private func copy() async throws -> (path: String, bytes: Int) {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let destination = databasePath.replacingOccurrences(of: ".sqlite", with: "") + "-backup-\(stamp)-\(UInt32.random(in: 0...UInt32.max)).sqlite"
        let path = databasePath
        return try await Task.detached {
            let connection = try SQLiteConnection(path: path, mode: .readOnly)
            // Made owner-only before it is written: a backup holds what the database holds.
            SQLiteConnection.ownerOnly(destination)
            try connection.run("VACUUM INTO ?", destination)
            let size = (try FileManager.default.attributesOfItem(atPath: destination)[.size] as? NSNumber)?.intValue ?? 0
            return (destination, size)
        }.value
    }
}
