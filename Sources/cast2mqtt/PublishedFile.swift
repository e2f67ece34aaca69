import Bridge
import Foundation
import Logging

/// `state_dir/published.json`: what the bridge published retained per device (discovery configs,
/// device topic name), so that a device gone after a restart is cleared (PublishedStore.swift).
/// Written atomically whenever it changes.
struct PublishedFile {
    let path: String
    let logger: Logger

    init(stateDir: String, logger: Logger) {
        self.path = (stateDir as NSString).appendingPathComponent("published.json")
        self.logger = logger
    }

    func load() -> PublishedSnapshot? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(PublishedSnapshot.self, from: data)
        } catch {
            logger.warning("ignoring unreadable file", metadata: ["path": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    func save(_ snapshot: PublishedSnapshot) {
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(snapshot).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            logger.warning("cannot write the published-topics file", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}
