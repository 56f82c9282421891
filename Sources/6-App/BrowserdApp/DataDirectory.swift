import Foundation

/// The folder that holds browserd's database: created when missing, and checked to be writable.
struct DataDirectory {
    let path: String

    struct Unusable: Error, CustomStringConvertible {
        let description: String
    }

    /// Creates the folder if needed and proves it is writable.
    /// - Throws: ``Unusable`` naming the folder and the reason.
    func prepare() throws {
        let manager = FileManager.default
        do {
            try manager.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Unusable(description: "cannot create data directory \(path): \(error.localizedDescription)")
        }
        let probe = (path as NSString).appendingPathComponent(".write-probe-\(getpid())")
        guard manager.createFile(atPath: probe, contents: Data("ok".utf8)) else {
            throw Unusable(description: "data directory \(path) is not writable")
        }
        try? manager.removeItem(atPath: probe)
    }
}
