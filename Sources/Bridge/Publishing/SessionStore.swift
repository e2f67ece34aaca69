import CastProtocol
import Foundation

/// What the bridge knows about running app sessions, for `state_dir`: the I/O side writes
/// `sessionSnapshot()` (JSON, Codable) when `BridgeOutput.sessionsChanged` is true and hands the
/// saved snapshot to `restore(_:)` right after creating the core. A restored session that is
/// still running when the device answers is joined silently: no `session_started` event, and
/// (as always) no relaunch or reload. A session the bridge's own `load` started keeps its queue
/// the bridge's across the restart (`loadedByBridge`; absent in files of older versions).
public struct SessionSnapshot: Codable, Sendable, Hashable {
    public struct Entry: Codable, Sendable, Hashable {
        public var appId: String
        public var sessionId: String?
        public var transportId: String?
        public var mediaSessionId: Int?
        public var contentId: String?
        /// The bridge's own `load` started (or used) this app session: its queue is the bridge's
        /// to edit (`CommandPlanner.queuePlan`). Written only when true.
        public var loadedByBridge: Bool?

        public init(appId: String, sessionId: String?, transportId: String?, mediaSessionId: Int?, contentId: String?,
                    loadedByBridge: Bool? = nil) {
            self.appId = appId
            self.sessionId = sessionId
            self.transportId = transportId
            self.mediaSessionId = mediaSessionId
            self.contentId = contentId
            self.loadedByBridge = loadedByBridge
        }
    }

    public var devices: [DeviceID: Entry]

    public init(devices: [DeviceID: Entry] = [:]) { self.devices = devices }
}

extension SessionSnapshot {
    /// The current sessions of every device with a running app; a session the bridge's own
    /// `load` started says so (`loadedByBridge`).
    init(_ registry: DeviceRegistry, loads: BridgeLoads) {
        var entries: [DeviceID: Entry] = [:]
        for id in registry.ids {
            guard let device = registry[id], let app = device.activeApp else { continue }
            let loaded = app.sessionId != nil && loads.session(id) == app.sessionId
            entries[id] = Entry(appId: app.appId, sessionId: app.sessionId, transportId: app.transportId,
                                mediaSessionId: device.media?.mediaSessionId, contentId: device.media?.effectiveMedia?.contentId,
                                loadedByBridge: loaded ? true : nil)
        }
        self.init(devices: entries)
    }
}

/// The sessions a previous run saved, until each device answers once: a session still running
/// then is joined silently (no `session_started`).
struct RestoredSessions: Sendable {
    private var saved: [DeviceID: SessionSnapshot.Entry] = [:]

    init(saved: [DeviceID: SessionSnapshot.Entry] = [:]) { self.saved = saved }

    /// True (once) when `app` is the session a previous run saved for the device.
    mutating func consumeRestored(_ id: DeviceID, _ app: ReceiverApplication) -> Bool {
        guard let entry = saved.removeValue(forKey: id) else { return false }
        return entry.appId == app.appId && entry.sessionId != nil && entry.sessionId == app.sessionId
    }
}
