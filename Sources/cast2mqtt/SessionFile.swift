import Bridge
import Foundation
import Logging

/// `state_dir/sessions.json`: the app sessions the bridge knew, so that after a restart it joins
/// them quietly instead of announcing them as new. Written atomically whenever they change.
struct SessionFile {
    let path: String
    let logger: Logger

    init(stateDir: String, logger: Logger) {
        self.path = (stateDir as NSString).appendingPathComponent("sessions.json")
        self.logger = logger
    }

    func load() -> SessionSnapshot? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(SessionSnapshot.self, from: data)
        } catch {
            logger.warning("ignoring unreadable session file", metadata: ["path": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    func save(_ snapshot: SessionSnapshot) {
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(snapshot).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            logger.warning("cannot write the session file", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}
