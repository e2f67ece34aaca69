import CastProtocol
import Foundation

/// What the bridge knows about running app sessions, for `state_dir`: the I/O side writes
/// `sessionSnapshot()` (JSON, Codable) when `BridgeOutput.sessionsChanged` is true and hands the
/// saved snapshot to `restore(_:)` right after creating the core. A restored session that is
/// still running when the device answers is joined silently: no `session_started` event, and
/// (as always) no relaunch or reload.
public struct SessionSnapshot: Codable, Sendable, Hashable {
    public struct Entry: Codable, Sendable, Hashable {
        public var appId: String
        public var sessionId: String?
        public var transportId: String?
        public var mediaSessionId: Int?
        public var contentId: String?

        public init(appId: String, sessionId: String?, transportId: String?, mediaSessionId: Int?, contentId: String?) {
            self.appId = appId
            self.sessionId = sessionId
            self.transportId = transportId
            self.mediaSessionId = mediaSessionId
            self.contentId = contentId
        }
    }

    public var devices: [DeviceID: Entry]

    public init(devices: [DeviceID: Entry] = [:]) { self.devices = devices }
}

extension BridgeCore {
    /// The current sessions of every device with a running app.
    public func sessionSnapshot() -> SessionSnapshot {
        var entries: [DeviceID: SessionSnapshot.Entry] = [:]
        for (id, device) in devices {
            guard let app = device.activeApp else { continue }
            entries[id] = .init(appId: app.appId, sessionId: app.sessionId, transportId: app.transportId,
                                mediaSessionId: device.media?.mediaSessionId, contentId: device.media?.effectiveMedia?.contentId)
        }
        return SessionSnapshot(devices: entries)
    }

    /// Seeds the sessions saved by a previous run.
    public mutating func restore(_ snapshot: SessionSnapshot) {
        restoredSessions = snapshot.devices
    }

    /// True (once) when `app` is the session a previous run saved for the device.
    mutating func consumeRestoredSession(_ id: DeviceID, _ app: ReceiverApplication) -> Bool {
        guard let saved = restoredSessions[id] else { return false }
        restoredSessions.removeValue(forKey: id)
        return saved.appId == app.appId && saved.sessionId != nil && saved.sessionId == app.sessionId
    }
}
