import BrowserModel
import BrowserPostgres
import BrowserServices
import Foundation
import Logging
import Synchronization

/// The profile directory shared by the instances on one database: each tells the others, through
/// `NOTIFY browserd_directory`, every change of the directory made here (a profile created, renamed,
/// its window count changed, deleted, an off-the-record profile made or ended), and applies theirs
/// (`LISTEN`). So `GET /v1/profiles` and the administrator's `GET /v1/events` on any instance show
/// every instance's profiles, off-the-record ones included, which only their owner's memory holds.
///
/// Whenever listening (re)starts (notifications sent meanwhile are lost), the regular profiles are
/// read again from the database, and a `hello` asks the other instances to announce what they hold.
final class ClusterDirectory: Sendable {
    private let leases: ProfileLeases
    private let service: BrowserService
    private let logger: Logger
    private var instanceID: String { leases.held.instanceID }
    /// Changes made here, waiting to be sent (in order), and whether a sender runs.
    private let outbox = Mutex<(pending: [Message], sending: Bool)>(([], false))
    private let listener = Mutex<Task<Void, Never>?>(nil)
    /// A notification's payload is at most 8000 bytes; messages stay well below.
    static let payloadLimit = 6000

    init(leases: ProfileLeases, service: BrowserService, logger: Logger) {
        self.leases = leases
        self.service = service
        self.logger = logger
    }

    func start() {
        service.onDirectoryChange { [weak self] changes in self?.send(Message(changes: changes)) }
        listener.withLock { task in
            task = Task { [weak self] in
                guard let leases = self?.leases else { return }
                await leases.watch(ProfileLeases.directoryChannel, listening: { [weak self] in
                    Task { await self?.resync() }
                }, received: { [weak self] payload in
                    self?.received(payload)
                })
            }
        }
    }

    func stop() {
        listener.withLock { $0?.cancel() }
    }

    // MARK: Wire format

    /// One notification: changes (`put` a profile's snapshot, `remove` an id) or a `hello`.
    struct Message: Codable {
        var from = ""
        var hello: Bool?
        var changes: [Change]?

        init(changes: [DirectoryChange]) {
            self.changes = changes.map(Change.init)
        }

        init(hello: Bool) {
            self.hello = hello
        }
    }

    struct Change: Codable {
        var put: Profile?
        var remove: String?

        init(_ change: DirectoryChange) {
            switch change {
            case .put(let profile): put = Profile(profile)
            case .remove(let id): remove = id.rawValue
            }
        }

        var change: DirectoryChange {
            if let put { return .put(put.snapshot) }
            return .remove(ProfileID(rawValue: remove ?? ""))
        }
    }

    struct Profile: Codable {
        var id: String
        var name: String
        var incognito: Bool
        var parentId: String?
        var offTheRecordId: String?
        var windowCount: Int
        var createdAt: Double

        init(_ snapshot: ProfileSnapshot) {
            id = snapshot.id.rawValue
            name = snapshot.name
            incognito = snapshot.incognito
            parentId = snapshot.parentID?.rawValue
            offTheRecordId = snapshot.offTheRecordID?.rawValue
            windowCount = snapshot.windowCount
            createdAt = snapshot.createdAt.timeIntervalSince1970
        }

        var snapshot: ProfileSnapshot {
            ProfileSnapshot(id: ProfileID(rawValue: id), name: name, incognito: incognito, parentID: parentId.map(ProfileID.init),
                            offTheRecordID: offTheRecordId.map(ProfileID.init), windowCount: windowCount,
                            createdAt: Date(timeIntervalSince1970: createdAt))
        }
    }

    /// `message` as payloads under the size limit (its changes split when needed).
    func payloads(_ message: Message) -> [String] {
        var message = message
        message.from = instanceID
        let encoder = JSONEncoder()
        guard let data = try? encoder.encode(message) else { return [] }
        if data.count <= Self.payloadLimit { return [String(decoding: data, as: UTF8.self)] }
        guard let changes = message.changes, changes.count > 1 else { return [] } // one profile is ~1 KB at most
        var first = message, second = message
        first.changes = Array(changes[..<(changes.count / 2)])
        second.changes = Array(changes[(changes.count / 2)...])
        return payloads(first) + payloads(second)
    }

    // MARK: Sending

    /// Queues `message`; one sender at a time sends what is queued, in order.
    private func send(_ message: Message) {
        let start = outbox.withLock { box -> Bool in
            box.pending.append(message)
            if box.sending { return false }
            box.sending = true
            return true
        }
        if start { Task.detached { await self.drain() } }
    }

    private func drain() async {
        while true {
            let batch = outbox.withLock { box -> [Message] in
                let batch = box.pending
                box.pending.removeAll()
                if batch.isEmpty { box.sending = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try await leases.notify(ProfileLeases.directoryChannel, batch.flatMap(payloads))
            } catch {
                // Lost for the others until they listen again (a database that fails drops their
                // connections too), when they read the database and ask everyone to announce again.
                logger.warning("could not announce directory changes", metadata: [
                    "changes": "\(batch.count)", "error": "\(PostgresStore.describe(error))",
                ])
            }
        }
    }

    // MARK: Receiving

    private func received(_ payload: String) {
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(payload.utf8)) else {
            logger.warning("unreadable directory notification", metadata: ["payload": "\(payload.prefix(200))"])
            return
        }
        guard message.from != instanceID else { return }
        if message.hello == true {
            // Another instance (re)started listening: announce what this one holds.
            let here = service.localProfiles()
            if !here.isEmpty { send(Message(changes: here.map { .put($0) })) }
            return
        }
        if let changes = message.changes { service.applyDirectoryChanges(changes.map(\.change)) }
    }

    /// Reads the stored regular profiles again and asks the other instances what they hold.
    private func resync() async {
        do {
            let stored = try await leases.storedProfiles().map { stored in
                ProfileSnapshot(id: ProfileID(rawValue: stored.record.id), name: stored.record.name, incognito: false, parentID: nil,
                                offTheRecordID: nil, windowCount: stored.windowCount, createdAt: stored.record.createdAt)
            }
            service.resyncDirectory(stored: stored)
        } catch {
            logger.warning("could not read the stored profiles for the directory", metadata: ["error": "\(PostgresStore.describe(error))"])
        }
        send(Message(hello: true))
    }
}
