import Foundation
import Synchronization

/// What the page shows, kept from the bridge's own publications: the daemon's consumer hands
/// every `Publication` to `tee` (one call, a lock and a dictionary write; nothing else happens
/// while no page is open). The hub keeps the latest document per retained topic and the recent
/// events and responses per device, and tells the open pages what changed since they last
/// looked, so a page gets the newest state at most a few times a second however fast it changes.
public final class WebHub: Sendable {
    /// Retained documents shown by the page, per device and for the bridge.
    static let deviceDocuments: Set<Substring> = ["availability", "info", "receiver", "media", "state", "members", "keep"]
    static let bridgeDocuments: Set<Substring> = ["state", "info", "devices"]
    /// Events and responses kept per device.
    static let recentPerDevice = 25
    /// Changes remembered for open pages; a page further behind gets a new snapshot.
    static let changeLogCapacity = 16_384

    struct Document: Sendable {
        var version: UInt64
        var payload: [UInt8]
    }

    /// An event or a response.
    struct RecentItem: Sendable {
        var version: UInt64
        var kind: Kind
        var payload: [UInt8]
        enum Kind: String, Sendable { case event, response }
    }

    enum ChangeKey: Hashable, Sendable {
        case document(String)
        case recent(String)
    }

    struct Change: Sendable {
        var version: UInt64
        var key: ChangeKey
    }

    struct Client: Sendable {
        var wake: AsyncStream<Void>.Continuation
        /// Command responses for this page, sent with its next update.
        var direct: [[UInt8]] = []
        var pending = 0
    }

    struct Pending: Sendable {
        var client: Int
        var ref: String
    }

    struct State: Sendable {
        var version: UInt64 = 0
        /// By full topic (`<base>/<dev>/<leaf>`); the page gets `<dev>/<leaf>`.
        var documents: [String: Document] = [:]
        var recent: [String: Ring<RecentItem>] = [:]
        /// Kept only while a page is open.
        var changes = Ring<Change>(capacity: WebHub.changeLogCapacity)
        var clients: [Int: Client] = [:]
        var nextClient = 1
        var nextCommand: UInt64 = 1
        /// Commands sent from a page, by the `id` their response will carry.
        var pending: [String: Pending] = [:]
    }

    let baseTopic: String
    private let prefix: String
    let state = Mutex(State())
    let logTail: LogTail
    /// Hands a command to the daemon's input queue as an MQTT message on `topic` would arrive.
    let submit: @Sendable (_ topic: String, _ payload: [UInt8]) -> Void

    public init(baseTopic: String, logTail: LogTail, submit: @escaping @Sendable (String, [UInt8]) -> Void) {
        self.baseTopic = baseTopic
        self.prefix = baseTopic + "/"
        self.logTail = logTail
        self.submit = submit
        logTail.setOnAppend { [weak self] in self?.wakeAll(onlyIfOpen: true) }
    }

    /// Open pages.
    public var clientCount: Int { state.withLock { $0.clients.count } }

    /// One publication of the bridge (the consumer's hot path: cheap, never blocks for long).
    public func tee(topic: String, payload: [UInt8]) {
        guard topic.hasPrefix(prefix) else { return }
        let rest = topic.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/") else { return }
        let device = rest[..<slash]
        let leaf = rest[rest.index(after: slash)...]
        let isBridge = device == "bridge"
        if isBridge ? Self.bridgeDocuments.contains(leaf) : Self.deviceDocuments.contains(leaf) {
            // Keyed by the publication's own topic string: no new string per call.
            store(document: topic, payload: payload)
        } else if leaf == "event" {
            record(device: String(device), .event, payload: payload)
        } else if isBridge ? leaf.hasPrefix("response/") : leaf == "response" {
            record(device: String(device), .response, payload: payload)
        }
    }

    private func store(document key: String, payload: [UInt8]) {
        let wakes = state.withLock { s -> [AsyncStream<Void>.Continuation] in
            s.version += 1
            if payload.isEmpty {
                s.documents[key] = nil
            } else {
                s.documents[key] = Document(version: s.version, payload: payload)
            }
            guard !s.clients.isEmpty else { return [] }
            s.changes.append(Change(version: s.version, key: .document(key)))
            return s.clients.values.map(\.wake)
        }
        for wake in wakes { wake.yield() }
    }

    private func record(device: String, _ kind: RecentItem.Kind, payload: [UInt8]) {
        let wakes = state.withLock { s -> [AsyncStream<Void>.Continuation] in
            s.version += 1
            s.recent[device, default: Ring(capacity: Self.recentPerDevice)]
                .append(RecentItem(version: s.version, kind: kind, payload: payload))
            if kind == .response, !s.pending.isEmpty { routeResponse(payload, &s) }
            guard !s.clients.isEmpty else { return [] }
            s.changes.append(Change(version: s.version, key: .recent(device)))
            return s.clients.values.map(\.wake)
        }
        for wake in wakes { wake.yield() }
    }

    func wakeAll(onlyIfOpen: Bool) {
        let wakes = state.withLock { $0.clients.values.map(\.wake) }
        for wake in wakes { wake.yield() }
    }

    // MARK: - Pages

    /// A page connected: its id and the stream that wakes it when something changed.
    func connect() -> (id: Int, wake: AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s -> Int in
            let id = s.nextClient
            s.nextClient += 1
            s.clients[id] = Client(wake: continuation)
            return id
        }
        return (id, stream)
    }

    func disconnect(_ id: Int) {
        let wake = state.withLock { s -> AsyncStream<Void>.Continuation? in
            let client = s.clients.removeValue(forKey: id)
            s.pending = s.pending.filter { $0.value.client != id }
            if s.clients.isEmpty { s.changes = Ring(capacity: Self.changeLogCapacity) }
            return client?.wake
        }
        wake?.finish()
    }

    /// What a page needs to draw everything: `{"type":"snapshot","version",...,"documents",...,"recent"}`.
    func snapshot(meta: [UInt8]) -> (message: [UInt8], version: UInt64) {
        let (version, documents, recent) = state.withLock { s in
            (s.version, s.documents, s.recent.mapValues(\.elements))
        }
        var json = JSONText(capacity: 64 * 1024)
        json.raw(#"{"type":"snapshot","version":"#)
        json.number(version)
        json.raw(#","meta":"#)
        json.raw(meta)
        json.raw(#","documents":{"#)
        for (n, (topic, document)) in documents.sorted(by: { $0.key < $1.key }).enumerated() {
            if n > 0 { json.raw(",") }
            json.string(String(topic.dropFirst(prefix.count)))
            json.raw(":")
            json.payload(document.payload)
        }
        json.raw(#"},"recent":["#)
        var first = true
        for (device, items) in recent.sorted(by: { $0.key < $1.key }) {
            for item in items { Self.append(item, device: device, to: &json, first: &first) }
        }
        json.raw("]}")
        return (json.bytes, version)
    }

    /// What changed after `version` (nil: nothing), with this page's command responses;
    /// `resync` when the page is too far behind and needs a new snapshot.
    func update(client: Int, after version: UInt64) -> (message: [UInt8]?, version: UInt64, resync: Bool) {
        var documents: [(String, [UInt8]?)] = []
        var items: [(String, RecentItem)] = []
        var direct: [[UInt8]] = []
        var resync = false
        let latest = state.withLock { s -> UInt64 in
            direct = s.clients[client]?.direct ?? []
            s.clients[client]?.direct = []
            guard s.version > version else { return s.version }
            if let oldest = s.changes.first, s.changes.isFull, oldest.version > version + 1 {
                resync = true
                return s.version
            }
            var seen = Set<ChangeKey>()
            for change in s.changes.suffix(while: { $0.version > version }) where seen.insert(change.key).inserted {
                switch change.key {
                case .document(let key): documents.append((key, s.documents[key]?.payload))
                case .recent(let device):
                    for item in s.recent[device]?.suffix(while: { $0.version > version }) ?? [] { items.append((device, item)) }
                }
            }
            return s.version
        }
        if resync { return (nil, latest, true) }
        guard !documents.isEmpty || !items.isEmpty || !direct.isEmpty else { return (nil, latest, false) }
        var json = JSONText(capacity: 4096)
        json.raw(#"{"type":"update","version":"#)
        json.number(latest)
        json.raw(#","documents":{"#)
        for (n, (topic, payload)) in documents.enumerated() {
            if n > 0 { json.raw(",") }
            json.string(String(topic.dropFirst(prefix.count)))
            json.raw(":")
            json.payload(payload ?? [])
        }
        json.raw(#"},"recent":["#)
        var first = true
        for (device, item) in items.sorted(by: { $0.1.version < $1.1.version }) {
            Self.append(item, device: device, to: &json, first: &first)
        }
        json.raw(#"],"responses":["#)
        for (n, response) in direct.enumerated() {
            if n > 0 { json.raw(",") }
            json.raw(response)
        }
        json.raw("]}")
        return (json.bytes, latest, false)
    }

    static func append(_ item: RecentItem, device: String, to json: inout JSONText, first: inout Bool) {
        if !first { json.raw(",") }
        first = false
        json.raw(#"{"device":"#)
        json.string(device)
        json.raw(#","kind":"#)
        json.string(item.kind.rawValue)
        json.raw(#","version":"#)
        json.number(item.version)
        json.raw(#","document":"#)
        json.payload(item.payload)
        json.raw("}")
    }
}
