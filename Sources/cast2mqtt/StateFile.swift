import Bridge
import Foundation
import Logging
import Synchronization

/// A JSON file in `state_dir`, written atomically after its content changes (paced by `SavePacer`:
/// within a second, and at shutdown). Both files are a table of devices, and the file is written
/// from the encoding of each device kept since the last write: only the devices that changed
/// are encoded again (at 10 000 devices, encoding all of them once a second while they come
/// online was the start-up's largest cost on the core's loop). The file is the same, byte for
/// byte, as `JSONEncoder` with sorted keys makes it.
/// - `sessions.json` (`SessionFile`): the app sessions the bridge knew, so that after a restart
///   it joins them quietly instead of announcing them as new;
/// - `published.json` (`PublishedFile`): what the bridge published retained per device
///   (discovery configs, device topic name), so that a device gone after a restart is cleared
///   (PublishedStore.swift).
struct StateFile<Snapshot: DeviceTableSnapshot> {
    let path: String
    /// What the file holds, for log lines ("session file").
    let what: String
    let logger: Logger
    private let cache = EncodedEntries<Snapshot.Entry>()
    /// Device entries encoded so far (tests: an unchanged device is not encoded again).
    var entriesEncoded: Int { cache.encodings.load(ordering: .relaxed) }

    init(stateDir: String, name: String, what: String, logger: Logger) {
        self.path = (stateDir as NSString).appendingPathComponent(name)
        self.what = what
        self.logger = logger
    }

    func load() -> Snapshot? { loadStateJSON(Snapshot.self, path: path, what: what, logger: logger) }

    func save(_ snapshot: Snapshot) {
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(try encode(snapshot)).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            logger.warning("cannot write the \(what)", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    /// The file's bytes: the snapshot without its devices (`"devices"` sorts last), then each
    /// device from its kept encoding, encoded again only when its entry changed.
    func encode(_ snapshot: Snapshot) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var rest = snapshot
        rest.devices = [:]
        var out = [UInt8](try encoder.encode(rest))
        let tail = Array(#""devices":{}}"#.utf8)
        guard out.count >= tail.count, Array(out.suffix(tail.count)) == tail else {
            return [UInt8](try encoder.encode(snapshot))
        }
        out.removeLast(2)
        try cache.kept.withLock { kept in
            var next: [DeviceID: (entry: Snapshot.Entry, json: [UInt8])] = [:]
            next.reserveCapacity(snapshot.devices.count)
            for (index, id) in snapshot.devices.keys.sorted().enumerated() {
                guard let entry = snapshot.devices[id] else { continue }
                var item: (entry: Snapshot.Entry, json: [UInt8])
                if let old = kept[id], old.entry == entry {
                    item = old
                } else {
                    item = (entry, [UInt8](try encoder.encode(id)) + [UInt8(ascii: ":")] + [UInt8](try encoder.encode(entry)))
                    cache.encodings.add(1, ordering: .relaxed)
                }
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += item.json
                next[id] = item
            }
            kept = next
        }
        out += Array("}}".utf8)
        return out
    }
}

/// Each device's `"id":{...}` as last written, with the entry it encodes.
final class EncodedEntries<Entry: Sendable>: Sendable {
    let kept = Mutex<[DeviceID: (entry: Entry, json: [UInt8])]>([:])
    let encodings = Atomic<Int>(0)
}

/// A state file's snapshot: a table of devices (encoded one by one) and anything else, whose
/// keys sort before `devices`.
protocol DeviceTableSnapshot: Codable {
    associatedtype Entry: Codable & Hashable & Sendable
    var devices: [DeviceID: Entry] { get set }
}

extension SessionSnapshot: DeviceTableSnapshot {}
extension PublishedSnapshot: DeviceTableSnapshot {}

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

/// `state_dir/keeps.json`: the keeps on displays (mqtt-api.md §13) with their launch counts,
/// sessions and a silent launch's mute to put back. It holds Home Assistant refresh tokens, so it
/// is created with mode 0600 (owner only) and written atomically through a file of that mode.
struct KeepFile {
    let path: String
    let logger: Logger

    init(stateDir: String, logger: Logger) {
        self.path = (stateDir as NSString).appendingPathComponent("keeps.json")
        self.logger = logger
    }

    func load() -> KeepSnapshot? { loadStateJSON(KeepSnapshot.self, path: path, what: "keep file", logger: logger) }

    func save(_ snapshot: KeepSnapshot) {
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(snapshot)
            let temporary = path + ".tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            // An existing file of another mode is made owner-only too.
            fchmod(fd, 0o600)
            let written = data.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                var offset = 0
                while offset < raw.count {
                    let n = write(fd, base + offset, raw.count - offset)
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { return -1 }
                    offset += n
                }
                return offset
            }
            let synced = fsync(fd)
            close(fd)
            guard written == data.count, synced == 0 else { throw POSIXError(.EIO) }
            guard rename(temporary, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            logger.warning("cannot write the keep file", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}

/// A state file's JSON, or nil when there is none; one that does not decode is logged and ignored
/// (the bridge starts without it).
func loadStateJSON<T: Decodable>(_ type: T.Type, path: String, what: String, logger: Logger) -> T? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    do {
        return try JSONDecoder().decode(T.self, from: data)
    } catch {
        logger.warning("ignoring unreadable \(what)", metadata: ["path": "\(path)", "error": "\(error)"])
        return nil
    }
}
