import CastProtocol
import Foundation

/// Everything retained: what was last published on each retained topic (for change-only
/// publishing and for republishing after a broker reconnect), what was published per device
/// (`state_dir/published.json`, so a device gone after a restart is cleared), and the pacing of
/// `bridge/info` and `bridge/devices`. Owns that state; nothing else writes retained topics.
struct RetainedPublisher: Sendable {
    /// Retained topics as last published: a hash of the content without timestamps (change
    /// detection without encoding the document: most statuses change one document of a device,
    /// not all of them) and the payload as sent (for republishing after a broker reconnect).
    /// Home Assistant discovery configs keep only the hash (`payload` nil): at ~10 KiB per
    /// device they were the largest thing the core kept, and the core rebuilds them from the
    /// device whenever it needs them again (`brokerConnected()`: after a broker (re)connect they
    /// are all published again, rebuilt).
    private var retained: [String: (content: Int, payload: [UInt8]?)] = [:]
    /// What is retained per device, and the devices gone since the last run (cleared on the
    /// first broker connect).
    private(set) var published = PublishedSnapshot()
    private var goneAtStart: [DeviceID] = []
    /// `bridge/info` and `bridge/devices` are O(devices) to build and to send: a storm of device
    /// events (a thousand devices coming back after a Wi-Fi outage) publishes them at most once a
    /// second, the rest on the next tick.
    private var bridgeTopicsDirty = false
    private var lastBridgeTopicsPublish: Date?
    /// With `media.position_interval`: when each playing device's position was last republished.
    private var lastPositionPublish: [DeviceID: Date] = [:]
    /// After a broker (re)connect: the retained topics owed to the new connection (as the set,
    /// and in the order they go out), published again in parts by `republishOwed`. A topic
    /// published or cleared meanwhile is no longer owed: its newer value went out already.
    private var owed: Set<String> = []
    private var owedOrder: [String] = []
    private var owedPosition = 0
    /// Topics per part: ~0.3 MB of payloads at most, about a millisecond in a release build.
    static let republishPart = 512

    /// Publishes a retained JSON document when its content changed, adding `updated_at: stamp`
    /// when given (a timestamp is not content). True when it published. The document is encoded
    /// once, and only when it is published.
    /// `rebuilt`: only the hash is kept (the caller publishes the document again, rebuilt, after
    /// a broker reconnect; `republishOwed` leaves it out).
    @discardableResult
    mutating func publish(_ topic: String, _ doc: JSONValue, stamp: Date? = nil, force: Bool = false,
                          rebuilt: Bool = false, _ out: inout BridgeOutput) -> Bool {
        let content = doc.hashValue
        if !force, retained[topic]?.content == content { return false }
        var sent = doc
        if let stamp, case .object(var o) = doc {
            o["updated_at"] = .time(stamp)
            sent = .object(o)
        }
        let payload = JSONOutput.bytes(sent)
        retained[topic] = (content, rebuilt ? nil : payload)
        paid(topic)
        out.publish(Publication(topic: topic, payload: payload, retain: true))
        return true
    }

    mutating func publishText(_ topic: String, _ text: String, _ out: inout BridgeOutput) {
        let bytes = Array(text.utf8)
        let content = bytes.hashValue
        if retained[topic]?.content == content { return }
        retained[topic] = (content, bytes)
        paid(topic)
        out.publish(Publication(topic: topic, payload: bytes, retain: true))
    }

    /// Records `text` as published on `topic` (the caller published it itself).
    mutating func record(_ topic: String, text: String) {
        retained[topic] = (Array(text.utf8).hashValue, Array(text.utf8))
        paid(topic)
    }

    /// Forgets what was published on `topics` (nothing is sent): the next publish of each goes
    /// out whatever its content (instance mode: a device that comes back to this instance).
    mutating func unrecord(_ topics: [String]) {
        for topic in topics {
            retained.removeValue(forKey: topic)
            paid(topic)
        }
    }

    /// Clears a retained topic (empty retained payload).
    mutating func clear(_ topic: String, _ out: inout BridgeOutput) {
        retained.removeValue(forKey: topic)
        paid(topic)
        out.publish(Publication(topic: topic, payload: [], retain: true))
    }

    /// `topic` went out (or away) after a connect: a part of the republish does not send it again.
    @inline(__always)
    private mutating func paid(_ topic: String) {
        if !owed.isEmpty { owed.remove(topic) }
    }

    /// A broker (re)connect, before anything is published on it: every retained topic kept with
    /// its payload is owed to the new connection (`republishOwed` sends them, in parts), and the
    /// topics kept as a hash only (discovery configs) are forgotten, so that the core's next
    /// `publishConfigs` / `publishBridgeConfigs` publishes each again, rebuilt, changed or not: a
    /// restarted broker without persistence has lost them.
    mutating func brokerConnected() {
        retained = retained.filter { $0.value.payload != nil }
        owedOrder = retained.keys.sorted()
        owed = Set(owedOrder)
        owedPosition = 0
    }

    /// Whether the payload last published on `topic` is kept (nil: nothing is retained there).
    func keepsPayload(_ topic: String) -> Bool? { retained[topic].map { $0.payload != nil } }

    /// Whether topics are still owed since the last connect.
    var owesRepublish: Bool { !owed.isEmpty }

    /// The next part of what is owed since the connect: up to `count` topics as last published
    /// (a topic published or cleared since is skipped: it went out already).
    mutating func republishOwed(_ count: Int, _ out: inout BridgeOutput) {
        var sent = 0
        while sent < count, owedPosition < owedOrder.count {
            let topic = owedOrder[owedPosition]
            owedPosition += 1
            guard owed.remove(topic) != nil, let payload = retained[topic]?.payload else { continue }
            out.publish(Publication(topic: topic, payload: payload, retain: true))
            sent += 1
        }
        if owedPosition >= owedOrder.count || owed.isEmpty {
            owed = []
            owedOrder = []
            owedPosition = 0
        }
    }

    // MARK: - Pacing

    /// True when `bridge/info` and `bridge/devices` should go out now; otherwise they are marked
    /// for the next tick.
    mutating func bridgeTopicsDue(now: Date, force: Bool = false) -> Bool {
        if !force, let last = lastBridgeTopicsPublish, now.timeIntervalSince(last) < 1, now >= last {
            bridgeTopicsDirty = true
            return false
        }
        bridgeTopicsDirty = false
        lastBridgeTopicsPublish = now
        return true
    }

    var bridgeTopicsPending: Bool { bridgeTopicsDirty }

    /// True when a playing device's position is due for republishing (and records it).
    mutating func positionDue(_ id: DeviceID, since changed: Date?, interval: Double, now: Date) -> Bool {
        let last = [lastPositionPublish[id], changed].compactMap { $0 }.max()
        if let last, now.timeIntervalSince(last) < interval { return false }
        lastPositionPublish[id] = now
        return true
    }

    // MARK: - What is retained per device (state_dir)

    /// The device certificate (SHA-256) of a device's last authenticated connection, as this or
    /// an earlier run remembered it (state_dir).
    func rememberedCertificate(_ id: DeviceID) -> String? { published.devices[id]?.certificate }

    /// Remembers the device certificate of an authenticated connection (state_dir), for the
    /// `certificate_changed` check of later connections and runs.
    mutating func rememberCertificate(_ id: DeviceID, _ sha256: String, _ out: inout BridgeOutput) {
        guard published.devices[id] != nil, published.devices[id]?.certificate != sha256 else { return }
        published.devices[id]?.certificate = sha256
        out.publishedChanged = true
    }

    /// A device a previous run (or this one) published, by id, topic name or friendly name.
    func remembered(_ key: String) -> (id: DeviceID, entry: PublishedSnapshot.Device)? {
        guard let id = published.device(key), let entry = published.devices[id] else { return nil }
        return (id, entry)
    }

    /// Seeds what a previous run published; `gone` (the devices that are no longer configured)
    /// are cleared by `clearGone` on the first broker connect.
    mutating func restore(_ snapshot: PublishedSnapshot, gone: (DeviceID, PublishedSnapshot.Device) -> Bool) {
        published = snapshot
        goneAtStart = snapshot.devices.keys.filter { id in snapshot.devices[id].map { gone(id, $0) } ?? false }.sorted()
    }

    /// First broker connect: the retained topics of devices gone since the previous run that
    /// this run does not know (`known`) are cleared, once.
    mutating func clearGone(known: (DeviceID) -> Bool, topics: TopicGrammar, _ out: inout BridgeOutput) {
        for id in goneAtStart where !known(id) {
            out.logs.append("clearing the retained topics of \(published.devices[id]?.name ?? id) (\(id)): it is no longer configured")
            forget(id, topic: nil, topics: topics, &out)
        }
        goneAtStart = []
    }

    /// Home Assistant discovery is off: every config a previous run published is cleared.
    mutating func clearAllDiscovery(_ out: inout BridgeOutput) {
        for id in published.devices.keys.sorted() {
            guard let configs = published.devices[id]?.discovery, !configs.isEmpty else { continue }
            for t in configs { clear(t, &out) }
            published.devices[id]?.discovery = []
            out.publishedChanged = true
        }
        for t in published.bridge { clear(t, &out) }
        if !published.bridge.isEmpty {
            published.bridge = []
            out.publishedChanged = true
        }
    }

    /// A device's discovery configs (change-only, or all with `force`), after clearing the ones
    /// it had under other topics (the other discovery mode: Home Assistant would keep two copies
    /// of each entity); nil (discovery off): nothing is published, the device's retained topics
    /// are still remembered for removal after a restart.
    mutating func publishConfigs(_ d: DeviceRecord, _ configs: [(String, JSONValue)]?, force: Bool, _ out: inout BridgeOutput) {
        let before = published.devices[d.id]?.discovery ?? []
        guard let configs else { return remember(d, discovery: before, &out) }
        let current = Set(configs.map(\.0))
        for stale in before.sorted() where !current.contains(stale) { clear(stale, &out) }
        for (topic, doc) in configs { publish(topic, doc, force: force, rebuilt: true, &out) }
        remember(d, discovery: configs.map(\.0).sorted(), &out)
    }

    /// The bridge's own discovery configs, the same way.
    mutating func publishBridgeConfigs(_ configs: [(String, JSONValue)], force: Bool, _ out: inout BridgeOutput) {
        let current = Set(configs.map(\.0))
        for stale in published.bridge.sorted() where !current.contains(stale) { clear(stale, &out) }
        for (topic, doc) in configs { publish(topic, doc, force: force, rebuilt: true, &out) }
        let topics = configs.map(\.0).sorted()
        if published.bridge != topics {
            published.bridge = topics
            out.publishedChanged = true
        }
    }

    /// Records what is retained for a device now.
    private mutating func remember(_ d: DeviceRecord, discovery: [String], _ out: inout BridgeOutput) {
        let entry = PublishedSnapshot.Device(topic: d.topic, name: d.descriptor.friendlyName,
                                             source: d.descriptor.source.rawValue, discovery: discovery,
                                             group: d.descriptor.castType == .group ? true : nil,
                                             configured: d.descriptor.configuredID,
                                             certificate: d.authenticatedCertificate ?? published.devices[d.id]?.certificate)
        if published.devices[d.id] != entry {
            published.devices[d.id] = entry
            out.publishedChanged = true
        }
    }

    /// Clears everything retained for a device the bridge published before (by this or an
    /// earlier run), each topic once: discovery configs first (remembered ones and `discovery`;
    /// Home Assistant then drops the entities), then the device topics.
    mutating func forget(_ id: DeviceID, topic: String?, discovery: [String] = [], topics: TopicGrammar,
                         _ out: inout BridgeOutput) {
        let entry = published.devices.removeValue(forKey: id)
        if entry != nil { out.publishedChanged = true }
        lastPositionPublish.removeValue(forKey: id)
        for t in Set((entry?.discovery ?? []) + discovery).sorted() { clear(t, &out) }
        var names = Set<String>()
        if let name = entry?.topic { names.insert(name) }
        if let topic { names.insert(topic) }
        let leaves = PublishedSnapshot.retainedDeviceLeaves + (entry?.group == true ? PublishedSnapshot.retainedGroupLeaves : [])
        for name in names.sorted() {
            for leaf in leaves { clear(topics.device(name, leaf), &out) }
        }
    }
}
