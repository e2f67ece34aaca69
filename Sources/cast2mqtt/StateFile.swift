import Bridge
import Foundation
import Logging

/// A JSON file in `state_dir`, written atomically whenever its content changes:
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
