import Bridge
import Foundation
import Logging

/// A JSON file in `state_dir`, written atomically after its content changes (paced by `SavePacer`:
/// within a second, and at shutdown):
/// - `sessions.json` (`SessionFile`): the app sessions the bridge knew, so that after a restart
///   it joins them quietly instead of announcing them as new;
/// - `published.json` (`PublishedFile`): what the bridge published retained per device
///   (discovery configs, device topic name), so that a device gone after a restart is cleared
///   (PublishedStore.swift).
struct StateFile<Snapshot: Codable> {
    let path: String
    /// What the file holds, for log lines ("session file").
    let what: String
    let logger: Logger

    init(stateDir: String, name: String, what: String, logger: Logger) {
        self.path = (stateDir as NSString).appendingPathComponent(name)
        self.what = what
        self.logger = logger
    }

    func load() -> Snapshot? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(Snapshot.self, from: data)
        } catch {
            logger.warning("ignoring unreadable \(what)", metadata: ["path": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    func save(_ snapshot: Snapshot) {
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(snapshot).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            logger.warning("cannot write the \(what)", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}

typealias SessionFile = StateFile<SessionSnapshot>
typealias PublishedFile = StateFile<PublishedSnapshot>

extension StateFile where Snapshot == SessionSnapshot {
    init(stateDir: String, logger: Logger) {
        self.init(stateDir: stateDir, name: "sessions.json", what: "session file", logger: logger)
    }
}

extension StateFile where Snapshot == PublishedSnapshot {
    init(stateDir: String, logger: Logger) {
        self.init(stateDir: stateDir, name: "published.json", what: "published-topics file", logger: logger)
    }
}

/// When to write a state file: at once after a change, then at most once per `interval` while
/// changes keep coming (the rest wait for the next write, which the one-second tick brings),
/// and at shutdown. A thousand devices coming online are a thousand changes to
/// `published.json`; writing the whole file for each made start-up quadratic (80 % of the
/// daemon's CPU while a 1000-device fleet connected).
struct SavePacer {
    let interval: Duration
    private(set) var pending = false
    private var last: ContinuousClock.Instant?

    init(interval: Duration = .seconds(1)) { self.interval = interval }

    mutating func changed() { pending = true }

    /// True (and the change counts as written) when a pending change should be written now.
    mutating func take(now: ContinuousClock.Instant, force: Bool = false) -> Bool {
        guard pending else { return false }
        if !force, let last, now - last < interval { return false }
        pending = false
        last = now
        return true
    }
}
