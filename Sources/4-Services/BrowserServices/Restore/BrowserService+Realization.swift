import BrowserModel
public import BrowserRecords
import Foundation

// Realization (Chromium's `WebState::ForceRealized`, done where the API says so): a tab restored
// unrealized holds its metadata only; the model does no I/O, and an operation that needs a history it
// does not hold throws `ModelError.historiesNotLoaded` before changing anything. `run` then reads those
// histories here — on the store's reader, off the profile's executor and the cooperative pool — hands
// them to the tabs on the executor, and runs the command again. A read that fails is the request's
// failure (503 at the edge): the tabs stay unrealized, nothing was changed, nothing is made up.
extension BrowserService {
    /// A tab's history as storage holds it: its entries and current index.
    public struct StoredHistory: Sendable, Equatable {
        public var entries: [HistoryEntryRecord]
        public var index: Int

        public init(entries: [HistoryEntryRecord], index: Int) {
            self.entries = entries
            self.index = index
        }
    }

    /// How many tabs restored unrealized have been realized since start.
    public var tabsRealized: Int { realizations.count }

    /// Called when more than ``RealizationLog/burst`` tabs are realized within one second: something
    /// realized a whole list, which lists, snapshots and events never should (Chromium reports the same).
    public func onRealizationBurst(_ action: @escaping @Sendable (Int) -> Void) { realizations.onBurst(action) }

    /// Reads the histories of `ids` and gives each to its tab, if it is still unrealized.
    /// - Throws: ``ServiceError/storageUnreadable(_:)`` when the read fails or storage holds no
    ///   history for one of them (the tabs stay as they were).
    func realize(_ ids: [TabID], on executor: ProfileExecutor) async throws {
        let stored: [String: StoredHistory]
        do {
            stored = try await storedTabs.histories(ofTabs: ids.map(\.rawValue))
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError.storageUnreadable("the histories of \(ids.count) tab(s) could not be read: \(error)")
        }
        if let missing = ids.first(where: { stored[$0.rawValue] == nil }) {
            throw ServiceError.storageUnreadable("storage holds no history for tab \(missing)")
        }
        let log = realizations
        await executor.perform { session in
            for id in ids {
                guard let (browser, index) = session.locate(id), let tab = browser.webStateList.webState(at: index), !tab.isRealized,
                    let history = stored[id.rawValue]
                else { continue }
                var ignored: [String] = []
                tab.realize(with: Self.restoredHistory(history.entries, currentIndex: history.index, of: "tab \(id)", repairs: &ignored))
                log.record()
            }
        }
    }
}
