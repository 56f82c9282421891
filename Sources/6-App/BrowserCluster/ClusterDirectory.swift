import BrowserModel
import BrowserPostgres
import BrowserRecords
import BrowserServices
import ClusterCore
import Foundation
import HTTPServer
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
public final class ClusterDirectory: Sendable {
    private let notifications: ClusterNotifications
    private let lookups: StoredLookups
    private let service: BrowserService
    private let logger: Logger
    private let instanceID: InstanceID
    /// Changes made here, waiting to be sent (in order), and whether a sender runs.
    private let outbox = Mutex<(pending: [Message], sending: Bool)>(([], false))
    private let listener = Mutex<Task<Void, Never>?>(nil)
    /// A notification's payload is at most 8000 bytes; messages stay well below.
    static let payloadLimit = 6000

    init(instanceID: InstanceID, notifications: ClusterNotifications, lookups: StoredLookups, service: BrowserService, logger: Logger) {
        self.instanceID = instanceID
        self.notifications = notifications
        self.lookups = lookups
        self.service = service
        self.logger = logger
    }

    func start() {
        service.onDirectoryChange { [weak self] changes in self?.send(Message(changes: changes)) }
        listener.withLock { task in
            task = Task { [weak self] in
                guard let notifications = self?.notifications else { return }
                await notifications.watch(
                    ClusterNotifications.directoryChannel,
                    listening: { [weak self] in
                        Task { await self?.resync() }
                    },
                    received: { [weak self] payload in
                        self?.received(payload)
                    })
            }
        }
    }

    func stop() {
        listener.withLock { $0?.cancel() }
    }

    // MARK: Wire format

    /// One notification: changes (`put` a profile's snapshot, `remove` an id) or a `hello`, written
    /// with ``JSONText`` and read with the strict ``JSONParser`` (browserd's one JSON reader):
    /// `{"from":"i…","hello":true}` or `{"from":"i…","changes":[{"put":{…}},{"remove":"p…"}]}`.
    struct Message: Equatable {
        var from = ""
        var hello = false
        var changes: [DirectoryChange] = []

        init(changes: [DirectoryChange]) { self.changes = changes }
        init(hello: Bool) { self.hello = hello }

        var json: [UInt8] {
            var json = JSONText()
            json.beginObject()
            json.member("from", from)
            if hello { json.member("hello", true) }
            if !changes.isEmpty {
                json.key("changes")
                json.beginArray()
                for change in changes {
                    json.beginObject()
                    switch change {
                    case .put(let profile):
                        json.key("put")
                        json.beginObject()
                        json.member("id", profile.id.rawValue)
                        json.member("name", profile.name)
                        json.member("incognito", profile.incognito)
                        json.member("parentId", profile.parentID?.rawValue)
                        json.member("offTheRecordId", profile.offTheRecordID?.rawValue)
                        json.member("windowCount", profile.windowCount)
                        json.member("createdAt", profile.createdAt.timeIntervalSince1970)
                        json.endObject()
                    case .remove(let id):
                        json.member("remove", id.rawValue)
                    }
                    json.endObject()
                }
                json.endArray()
            }
            json.endObject()
            return json.bytes
        }

        /// A message another instance wrote; nil when it is not one.
        init?(json: [UInt8]) {
            guard let value = try? JSONParser.parse(json), let from = value["from"]?.string else { return nil }
            self.from = from
            hello = value["hello"]?.bool ?? false
            for item in value["changes"]?.array ?? [] {
                if let id = item["remove"]?.string {
                    changes.append(.remove(ProfileID(rawValue: id)))
                } else if let put = item["put"], let id = put["id"]?.string, let name = put["name"]?.string,
                    let incognito = put["incognito"]?.bool, let windows = put["windowCount"]?.int,
                    let created = put["createdAt"]?.double
                {
                    changes.append(
                        .put(
                            ProfileSnapshot(
                                id: ProfileID(rawValue: id), name: name, incognito: incognito, parentID: put["parentId"]?.string.map(ProfileID.init),
                                offTheRecordID: put["offTheRecordId"]?.string.map(ProfileID.init), windowCount: windows,
                                createdAt: Date(timeIntervalSince1970: created))))
                } else {
                    return nil
                }
            }
        }
    }

    /// `message` as payloads under the size limit (its changes split when needed).
    func payloads(_ message: Message) -> [String] {
        var message = message
        message.from = instanceID.rawValue
        let data = message.json
        if data.count <= Self.payloadLimit { return [String(decoding: data, as: UTF8.self)] }
        guard message.changes.count > 1 else { return [] }  // one profile is ~1 KB at most
        var first = message
        var second = message
        first.changes = Array(message.changes[..<(message.changes.count / 2)])
        second.changes = Array(message.changes[(message.changes.count / 2)...])
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
                try await notifications.notify(ClusterNotifications.directoryChannel, batch.flatMap(payloads))
            } catch {
                // Lost for the others until they listen again (a database that fails drops their
                // connections too), when they read the database and ask everyone to announce again.
                logger.warning(
                    "could not announce directory changes",
                    metadata: [
                        "changes": "\(batch.count)", "error": "\(PostgresStore.describe(error))",
                    ])
            }
        }
    }

    // MARK: Receiving

    private func received(_ payload: String) {
        guard let message = Message(json: Array(payload.utf8)) else {
            logger.warning("unreadable directory notification", metadata: ["payload": "\(payload.prefix(200))"])
            return
        }
        guard message.from != instanceID.rawValue else { return }
        if message.hello {
            // Another instance (re)started listening: announce what this one holds.
            let here = service.localProfiles()
            if !here.isEmpty { send(Message(changes: here.map { .put($0) })) }
            return
        }
        if !message.changes.isEmpty { service.applyDirectoryChanges(message.changes) }
    }

    /// Reads the stored regular profiles again and asks the other instances what they hold.
    private func resync() async {
        do {
            let stored = try await lookups.storedProfiles().map { ProfileSnapshot(stored: $0.record, windowCount: $0.windowCount) }
            service.resyncDirectory(stored: stored)
        } catch {
            logger.warning("could not read the stored profiles for the directory", metadata: ["error": "\(PostgresStore.describe(error))"])
        }
        send(Message(hello: true))
    }
}
