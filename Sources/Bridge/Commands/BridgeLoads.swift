import CastProtocol
import Foundation

/// What the bridge's own `load` commands did per device: the app session each started (its queue
/// is one the bridge may edit, `CommandPlanner.queuePlan`) and the app a running load replaces
/// (its response names it). Bounded by the number of devices; owned by the core, written only on
/// the command path.
struct BridgeLoads: Sendable {
    private var sessions: [DeviceID: String] = [:]
    private var replacing: [DeviceID: ReceiverApplication] = [:]
    /// Loads under way, by device (what a device's IDLE / ERROR status during one belongs to).
    private var running: Set<DeviceID> = []
    /// The last failed load per device, already reported by its `load_failed` response and
    /// event: the content it tried, and when. Cleared by the status it explains or by new content.
    private var failed: [DeviceID: (contentId: String?, at: Date)] = [:]
    /// How long after a failed load the device's IDLE / ERROR status is taken as that load's.
    static let failureEcho: TimeInterval = 15

    /// The app session the bridge's last successful `load` on the device started or used.
    func session(_ id: DeviceID) -> String? { sessions[id] }

    /// A session a previous run's `load` started (the state file), still the bridge's if it runs.
    mutating func restore(_ id: DeviceID, session: String) { sessions[id] = session }

    /// A `load` is about to run on `device`: remembers the running app it replaces (another app
    /// than the load's).
    mutating func starting(_ load: LoadCommand, on device: DeviceRecord) {
        running.insert(device.id)
        failed[device.id] = nil
        if let app = device.activeApp, app.appId != load.appId {
            replacing[device.id] = app
        } else {
            replacing[device.id] = nil
        }
    }

    /// The `load` finished: on success the app session now running is the bridge's. Returns the
    /// app it replaced.
    mutating func finished(_ id: DeviceID, device: DeviceRecord?, ok: Bool) -> ReceiverApplication? {
        running.remove(id)
        if ok, let session = device?.activeApp?.sessionId { sessions[id] = session }
        return replacing.removeValue(forKey: id)
    }

    /// The load was refused before anything was sent (its plan failed).
    mutating func abandoned(_ id: DeviceID) {
        running.remove(id)
        replacing[id] = nil
    }

    /// The load failed and was reported (`load_failed`).
    mutating func failed(_ id: DeviceID, contentId: String?, now: Date) {
        failed[id] = (contentId, now)
    }

    /// New content started on the device: an earlier failure explains nothing any more.
    mutating func contentStarted(_ id: DeviceID) { failed[id] = nil }

    /// True when the device's media just ended with an ERROR that a load of the bridge already
    /// reported (or is about to: one is under way): one failed load is one report. The failure
    /// is used up.
    mutating func explainsError(_ id: DeviceID, contentId: String?, now: Date) -> Bool {
        if running.contains(id) { return true }
        guard let failure = failed[id], now.timeIntervalSince(failure.at) <= Self.failureEcho else { return false }
        let content = contentId.flatMap { $0.isEmpty ? nil : $0 }
        guard content == nil || failure.contentId == nil || content == failure.contentId else { return false }
        failed[id] = nil
        return true
    }

    /// `"replaced"` of a load's response: the app it replaced, or null.
    static func document(_ app: ReceiverApplication?) -> JSONValue {
        guard let app else { return .null }
        return .object(["app_id": .string(app.appId), "app_name": .str(app.displayName), "session_id": .str(app.sessionId)])
    }
}
