import CastProtocol
import Foundation

/// What the bridge knows about one device: how discovery describes it, its topic name, and the
/// newest snapshot its Cast client sent, kept as it came (while offline: the last known state).
struct DeviceRecord: Sendable {
    var descriptor: DeviceDescriptor
    /// Assigned once per run (TopicNameRegistry).
    let topic: String
    var snapshot = DeviceSnapshot()
    /// Has been online at least once this run (`connected` vs `reconnected` event).
    var everOnline = false
    /// Since when the device could not be reached (for the `reconnected` downtime).
    var offlineSince: Date?
    /// When the receiver and the media content last changed (`updated_at`).
    var receiverUpdatedAt: Date?
    var mediaUpdatedAt: Date?
    /// SHA-256 of the device certificate of the last authenticated connection (this run).
    var authenticatedCertificate: String?

    init(descriptor: DeviceDescriptor, topic: String) {
        self.descriptor = descriptor
        self.topic = topic
    }

    var id: DeviceID { descriptor.id }
    var online: Bool { snapshot.isOnline }
    var receiver: ReceiverStatus? { snapshot.receiver }
    var media: MediaStatus? { snapshot.media }
    /// The running app unless it is the idle screen.
    var activeApp: ReceiverApplication? { snapshot.activeApp }
    /// The state word of `<dev>/state`.
    var stateWord: String { Documents.stateWord(app: activeApp, media: media) }
    /// The media position now, extrapolated while playing.
    func position(at now: Date) -> Double? { snapshot.position(at: now) }

    /// True when the running app speaks the media namespace (or does not say which it speaks).
    var appSpeaksMedia: Bool {
        guard let app = activeApp else { return false }
        return app.namespaces.isEmpty || app.namespaces.contains(CastNamespace.media)
    }
}

/// What one snapshot changed, for the parts that react to changes (events, jobs, publishing).
struct DeviceChange: Sendable {
    enum Link: Sendable {
        /// Online with a new connection; `downtime` is nil the first time in this run.
        case cameOnline(downtime: Double?)
        case wentOffline(reason: String)
    }

    var id: DeviceID
    var link: Link?
    var oldApp: ReceiverApplication?
    var newApp: ReceiverApplication?
    var oldMedia: MediaStatus?
    var newMedia: MediaStatus?
    /// The position the old media had reached when the change arrived.
    var oldPosition: Double?
    /// The link and the device-auth result before the change (DeviceAuthChange).
    var oldLink: DeviceSnapshot.Link = .unknown
    var oldAuthentication: DeviceAuthResult?
    /// Why the app's media is not followed, when that just began (the one `error` event of it).
    var joinFailed: String?

    var sessionChanged: Bool { oldApp?.sessionId != newApp?.sessionId || oldApp?.appId != newApp?.appId }
    var mediaChanged: Bool { oldMedia != newMedia }
}

/// The devices and their topic names. Owns both; nothing else writes them.
struct DeviceRegistry: Sendable {
    private(set) var names = TopicNameRegistry()
    private(set) var records: [DeviceID: DeviceRecord] = [:]
    /// Devices whose kept snapshot is online, counted as snapshots are applied (the metrics read
    /// it every tick: counting the records then copied every record, 10 000 of them a second).
    private(set) var onlineCount = 0

    subscript(id: DeviceID) -> DeviceRecord? { records[id] }

    /// Ids in a stable order (for output that must not depend on hashing).
    var ids: [DeviceID] { records.keys.sorted() }
    var count: Int { records.count }

    func topicName(_ id: DeviceID) -> String { records[id]?.topic ?? id }

    /// The device with this topic name.
    func device(topic: String) -> DeviceID? {
        guard let id = names.device(named: topic), records[id] != nil else { return nil }
        return id
    }

    /// Finds a device by topic name, friendly name (case-insensitive) or id.
    func resolve(_ key: String) -> DeviceID? {
        if let id = device(topic: key) { return id }
        if records[key] != nil { return key }
        let lower = key.lowercased()
        if records[lower] != nil { return lower }
        return records.values.sorted { $0.id < $1.id }.first { $0.descriptor.friendlyName.lowercased() == lower }?.id
    }

    /// A new device (with its topic name), or nil when it is known.
    mutating func add(_ d: DeviceDescriptor) -> DeviceRecord? {
        guard records[d.id] == nil else { return nil }
        let record = DeviceRecord(descriptor: d, topic: names.assign(id: d.id, friendlyName: d.friendlyName, override: d.topicOverride))
        records[d.id] = record
        return record
    }

    /// A known device described anew; true when the description changed.
    mutating func update(_ d: DeviceDescriptor) -> Bool {
        guard let record = records[d.id], record.descriptor != d else { return false }
        records[d.id]?.descriptor = d
        return true
    }

    mutating func remove(_ id: DeviceID) -> DeviceRecord? {
        guard let record = records.removeValue(forKey: id) else { return nil }
        if record.online { onlineCount -= 1 }
        return record
    }

    /// The device authenticated with the certificate whose SHA-256 is `certificate`.
    mutating func authenticated(_ id: DeviceID, certificate: String) { records[id]?.authenticatedCertificate = certificate }

    /// Keeps `snapshot` as the device's state and says what it changed. A snapshot of an older
    /// connection than the one already kept is stale and ignored (nil).
    mutating func apply(_ snapshot: DeviceSnapshot, to id: DeviceID, now: Date) -> DeviceChange? {
        guard var record = records[id], snapshot.generation >= record.snapshot.generation else { return nil }
        let old = record.snapshot
        var change = DeviceChange(id: id, oldApp: old.activeApp, newApp: snapshot.activeApp, oldMedia: old.media,
                                  newMedia: snapshot.media, oldPosition: old.position(at: now), oldLink: old.link,
                                  oldAuthentication: old.authentication)
        if let failure = snapshot.joinFailure, old.joinFailure == nil { change.joinFailed = failure }
        switch (old.isOnline, snapshot.isOnline) {
        case (false, true):
            let silence = record.offlineSince.map { max(0, now.timeIntervalSince($0)) }
            change.link = .cameOnline(downtime: record.everOnline ? (silence ?? 0) : nil)
            record.everOnline = true
            record.offlineSince = nil
        case (true, false):
            if case .offline(let reason, let silentSince) = snapshot.link {
                change.link = .wentOffline(reason: reason.description)
                record.offlineSince = silentSince.map { min($0, now) } ?? now
            }
        default:
            break
        }
        if old.receiver != snapshot.receiver { record.receiverUpdatedAt = now }
        if old.media != snapshot.media { record.mediaUpdatedAt = now }
        onlineCount += (snapshot.isOnline ? 1 : 0) - (old.isOnline ? 1 : 0)
        record.snapshot = snapshot
        records[id] = record
        return change
    }
}
