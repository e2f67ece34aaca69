import CastProtocol

/// What the bridge's own `load` commands did per device: the app session each started (its queue
/// is one the bridge may edit, `CommandPlanner.queuePlan`) and the app a running load replaces
/// (its response names it). Bounded by the number of devices; owned by the core, written only on
/// the command path.
struct BridgeLoads: Sendable {
    private var sessions: [DeviceID: String] = [:]
    private var replacing: [DeviceID: ReceiverApplication] = [:]

    /// The app session the bridge's last successful `load` on the device started or used.
    func session(_ id: DeviceID) -> String? { sessions[id] }

    /// A session a previous run's `load` started (the state file), still the bridge's if it runs.
    mutating func restore(_ id: DeviceID, session: String) { sessions[id] = session }

    /// A `load` is about to run on `device`: remembers the running app it replaces (another app
    /// than the load's).
    mutating func starting(_ load: LoadCommand, on device: DeviceRecord) {
        if let app = device.activeApp, app.appId != load.appId {
            replacing[device.id] = app
        } else {
            replacing[device.id] = nil
        }
    }

    /// The `load` finished: on success the app session now running is the bridge's. Returns the
    /// app it replaced.
    mutating func finished(_ id: DeviceID, device: DeviceRecord?, ok: Bool) -> ReceiverApplication? {
        if ok, let session = device?.activeApp?.sessionId { sessions[id] = session }
        return replacing.removeValue(forKey: id)
    }

    /// `"replaced"` of a load's response: the app it replaced, or null.
    static func document(_ app: ReceiverApplication?) -> JSONValue {
        guard let app else { return .null }
        return .object(["app_id": .string(app.appId), "app_name": .str(app.displayName), "session_id": .str(app.sessionId)])
    }
}
