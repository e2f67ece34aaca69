import Foundation
import Logging
import Synchronization
import TestSupport
@testable import Discovery

/// Collects a discovery's events (one consuming task) so tests can wait for them, bounded.
final class EventRecorder: Sendable {
    private final class Storage: Sendable {
        let events = Mutex<[DiscoveryEvent]>([])
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ discovery: DeviceDiscovery) {
        let storage = self.storage
        task = Task {
            for await event in discovery.events {
                storage.events.withLock { $0.append(event) }
            }
        }
    }

    var events: [DiscoveryEvent] { storage.events.withLock { $0 } }

    /// Events about `id`, in order.
    func events(for id: String) -> [DiscoveryEvent] {
        events.filter { $0.deviceID == id }
    }

    /// Waits (bounded) for an event matching `predicate`; returns it or nil on timeout.
    func first(timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (DiscoveryEvent) -> Bool) async -> DiscoveryEvent? {
        let found = await waitUntil(timeout: timeout) { self.events.contains(where: predicate) }
        return found ? events.first(where: predicate) : nil
    }

    func hasRemoval(of id: String) -> Bool {
        events(for: id).contains { $0.isRemoved }
    }

    func cancel() { task.cancel() }
}

extension DiscoveryEvent {
    var deviceID: String {
        switch self {
        case .added(let record), .updated(let record): return record.id
        case .removed(let id): return id
        }
    }

    var record: CastDeviceRecord? {
        switch self {
        case .added(let record), .updated(let record): return record
        case .removed: return nil
        }
    }

    var isAdded: Bool { if case .added = self { return true } else { return false } }
    var isUpdated: Bool { if case .updated = self { return true } else { return false } }
    var isRemoved: Bool { if case .removed = self { return true } else { return false } }
}

/// A swift-log handler that keeps every line (message + metadata) for assertions.
struct RecordingLogHandler: LogHandler {
    final class Store: Sendable {
        private let lines = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])
        func append(_ level: Logger.Level, _ message: String, _ metadata: Logger.Metadata) {
            lines.withLock { $0.append((level, message, metadata)) }
        }
        var messages: [String] { lines.withLock { $0.map(\.message) } }
        func count(containing text: String) -> Int { messages.filter { $0.contains(text) }.count }
        func metadata(containing text: String) -> [Logger.Metadata] {
            lines.withLock { $0.filter { $0.message.contains(text) }.map(\.metadata) }
        }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.append(event.level, "\(event.message)", metadata.merging(event.metadata ?? [:]) { $1 })
    }

    static func logger() -> (Logger, Store) {
        let store = Store()
        return (Logger(label: "test.discovery") { _ in RecordingLogHandler(store: store) }, store)
    }
}

/// Random 32-hex-digit id and short tag, so tests sharing one avahi-daemon never collide.
func randomID() -> String {
    (0..<4).map { _ in
        let value = UInt64.random(in: .min ... .max)
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }.joined().prefix(32).description
}
