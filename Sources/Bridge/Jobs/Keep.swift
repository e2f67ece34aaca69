import CastProtocol
import Foundation

/// Keeps a page or an app on displays (mqtt-api.md §13). Owns every device's keep; acts only on
/// what the bridge already receives (receiver statuses, the app's messages, completions) and on
/// its own deadlines, checked by the bridge's one-second tick: no polling of the device.
///
/// The rules: launch only on the idle screen (or nothing) inside the window; another app, or a
/// group that plays, means `yielding`, and the launch comes `yield_seconds` after the idle
/// screen returns (at once after a reconnect, a restart or a new keep); a page already showing is
/// never launched again; one launch in flight; failures back off 5 s doubling to 10 min; a silent
/// launch mutes first and unmutes as soon as the app shows, fails, or the display is back.
struct KeepJobs: Sendable {
    static let firstBackoff = 5.0
    static let maxBackoff = 600.0
    /// A page that closes this soon after it showed counts as a failed launch (backs off).
    static let shortLived = 60.0
    /// DashCast's status text once its page listens.
    static let dashcastReady = "Application ready"
    /// How long after a launch the page goes to a DashCast that never said it is ready.
    static let readyWait = 10.0
    let requestTimeout: Double
    /// The bridge machine's local time, for `when` windows (made once: not per tick).
    var calendar: Calendar
    private(set) var entries: [DeviceID: KeepEntry] = [:]
    /// Configured keeps by the name the configuration file used (id, friendly name or topic).
    private var configured: [String: KeepSpec] = [:]
    /// Configured keeps a command cleared in this run (the file applies again after a restart).
    private var clearedConfigured: Set<DeviceID> = []

    init(requestTimeout: Double, configured: [String: KeepSpec] = [:], timeZone: TimeZone = .current) {
        self.requestTimeout = requestTimeout
        self.configured = configured
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    var isEmpty: Bool { entries.isEmpty }
    func entry(_ id: DeviceID) -> KeepEntry? { entries[id] }

    // MARK: - Setting and restoring

    /// The file's keep for a device, named by id, topic name or friendly name.
    private func configuredSpec(_ device: DeviceRecord) -> KeepSpec? {
        configured[device.id] ?? configured[device.topic] ?? configured[device.descriptor.friendlyName]
    }

    /// A device became known: its configured keep, unless a command set or cleared one.
    mutating func deviceKnown(_ device: DeviceRecord, now: Date) -> Bool {
        guard entries[device.id] == nil, !clearedConfigured.contains(device.id),
              let spec = configuredSpec(device)
        else { return false }
        entries[device.id] = KeepEntry(spec: spec, enabled: true, configured: true, now: now)
        return true
    }

    /// Restores what `state_dir/keeps.json` held. A configured keep whose settings changed in
    /// the file since takes the file's (its launch count stays).
    mutating func restore(_ saved: KeepSnapshot, now: Date) {
        for (id, s) in saved.devices {
            var e = KeepEntry(spec: s.spec, enabled: s.enabled, configured: s.configured, now: now)
            e.launches = s.launches
            e.session = s.session
            e.configuredSession = s.configuredSession
            e.restore = s.restore
            entries[id] = e
        }
    }

    /// Applies the configured keeps to restored entries once the device's names are known.
    mutating func reconcileConfigured(_ device: DeviceRecord) {
        guard var e = entries[device.id], e.configured else { return }
        let spec = configuredSpec(device)
        if let spec, spec != e.spec {
            e.spec = spec
            e.configuredSession = nil
            entries[device.id] = e
        } else if spec == nil, e.restore == nil {
            // Gone from the file: the keep ends.
            entries.removeValue(forKey: device.id)
        }
    }

    var snapshot: KeepSnapshot { KeepSnapshot(devices: entries.mapValues(\.saved)) }

    /// The command: the entry's new settings or switch; the response's data.
    mutating func command(_ command: KeepCommand, device: DeviceRecord, now: Date) -> Result<JSONValue, BridgeError> {
        switch command {
        case .set(let spec, let enabled):
            var e = KeepEntry(spec: spec, enabled: enabled, configured: false, now: now)
            if let old = entries[device.id] {
                e.launches = old.launches
                e.restore = old.restore
                e.pending = old.pending
                if old.spec.appId == spec.appId {
                    e.session = old.session
                    // The same page already sent to this session is not sent again.
                    if old.spec == spec { e.configuredSession = old.configuredSession }
                    if old.spec.hassURL == spec.hassURL, old.spec.refreshToken == spec.refreshToken {
                        e.connectedSession = old.connectedSession
                        e.statusSession = old.statusSession
                        if old.spec.viewPath == spec.viewPath, old.spec.dashboardPath == spec.dashboardPath { e.viewSession = old.viewSession }
                    }
                }
                e.state = old.state
                e.since = old.since
            } else {
                e.launches = 0
            }
            entries[device.id] = e
        case .on, .off:
            guard var e = entries[device.id] else {
                return .failure(BridgeError.invalid("\(device.topic) has no keep to switch; send one, e.g. "
                    + "{\"app\": \"dashcast\", \"url\": \"https://…\"}"))
            }
            if case .on = command {
                if !e.enabled { e.freshLink = true; e.failures = 0; e.backoffUntil = nil; e.waitUntil = nil }
                e.enabled = true
            } else {
                e.enabled = false
            }
            entries[device.id] = e
        case .clear:
            entries.removeValue(forKey: device.id)
            if configuredSpec(device) != nil { clearedConfigured.insert(device.id) }
            return .success(.object(["state": .string(KeepState.off.rawValue), "keep": .null]))
        }
        return .success(entries[device.id]?.document ?? .null)
    }

    /// A device removed from the bridge: its keep goes with it (a rediscovered device gets its
    /// configured keep again).
    mutating func forget(_ id: DeviceID) { entries.removeValue(forKey: id) }

    // MARK: - Reacting

    /// The device reconnected or went offline: the next idle screen is a fresh one.
    mutating func linkChanged(_ id: DeviceID) {
        guard var e = entries[id] else { return }
        e.freshLink = true
        e.waitUntil = nil
        e.sawOther = false
        e.connectedSession = nil
        e.statusSession = nil
        e.connectSession = nil
        e.connectDeadline = nil
        entries[id] = e
    }

    /// What the keep of `device` does now. `groupPlaying`: a group the device is in plays.
    mutating func evaluate(_ device: DeviceRecord, groupPlaying: Bool, now: Date) -> [(CastOperationKind, KeepStep)] {
        guard var e = entries[device.id] else { return [] }
        defer { entries[device.id] = e }
        return Self.evaluate(&e, device, groupPlaying: groupPlaying, now: now, calendar: calendar, requestTimeout: requestTimeout)
    }

    /// The devices whose keep has a deadline due (the tick evaluates them).
    func due(now: Date) -> [DeviceID] {
        entries.compactMap { id, e in
            guard e.enabled else { return nil }
            for deadline in [e.waitUntil, e.backoffUntil, e.connectDeadline, e.readyDeadline] where deadline.map({ $0 <= now }) == true {
                return id
            }
            // The window opening: an entry waiting outside it checks every tick (a comparison).
            return e.state == .outsideWindow ? id : nil
        }.sorted()
    }

    private static func minuteOfDay(_ now: Date, _ calendar: Calendar) -> Int {
        let c = calendar.dateComponents([.hour, .minute], from: now)
        return (c.hour ?? 0) * 60 + (c.minute ?? 0)
    }

    private static func set(_ e: inout KeepEntry, _ state: KeepState, _ reason: String?, _ detail: String? = nil, now: Date) {
        if e.state != state { e.since = now }
        e.state = state
        e.reason = reason
        e.detail = detail
    }

    /// Someone else has the display: nothing to do until the idle screen is back.
    private static func yield(_ e: inout KeepEntry, _ reason: String, _ detail: String, now: Date) -> [(CastOperationKind, KeepStep)] {
        e.sawOther = true
        e.freshLink = false
        e.waitUntil = nil
        set(&e, .yielding, reason, detail, now: now)
        return []
    }

    /// The page shows (`fresh`: a page the keep just sent or launched): failures and their
    /// backoff are over.
    private static func shown(_ e: inout KeepEntry, now: Date, fresh: Bool = false) {
        if fresh || e.state != .showing { e.shownAt = now }
        e.failures = 0
        e.backoffUntil = nil
        set(&e, .showing, nil, now: now)
    }

    private static func evaluate(_ e: inout KeepEntry, _ device: DeviceRecord, groupPlaying: Bool, now: Date, calendar: Calendar,
                                 requestTimeout: Double) -> [(CastOperationKind, KeepStep)] {
        guard device.online else {
            set(&e, e.enabled ? .offline : .off, e.enabled ? "device_offline" : "switched_off", now: now)
            return []
        }
        guard let receiver = device.receiver else { return [] }  // its first status is on the way
        let app = device.activeApp
        let ours = app.map { $0.appId == e.spec.appId } ?? false
        // A silent launch's mute goes back as soon as the app shows, the launch failed, or the
        // display is back: never left muted.
        if let restore = e.restore, !e.restoring, ours || e.pending == 0 {
            if receiver.volume?.muted == restore.muted {
                e.restore = nil  // already as it was
            } else {
                e.restoring = true
                e.pending += 1
                return [(.setMuted(restore.muted), .restore)]
            }
        }
        guard e.enabled else {
            set(&e, .off, "switched_off", now: now)
            return []
        }
        guard e.pending == 0 else {
            if e.state == .off { set(&e, .launching, nil, now: now) }
            return []
        }
        if let app, ours {
            return showing(&e, app, now: now, requestTimeout: requestTimeout)
        }
        e.session = nil
        // Someone else's: another app, a group that plays, or (on the idle screen) a Chromecast
        // whose TV is off (standby), where a launch would switch the TV on over HDMI-CEC. The
        // page comes `yield_seconds` after the idle screen is back.
        if let app {
            return yield(&e, "app_showing", "\(app.displayName ?? app.appId) is showing", now: now)
        }
        if groupPlaying {
            return yield(&e, "group_playing", "a speaker group the display is in is playing", now: now)
        }
        if receiver.isStandBy == true {
            return yield(&e, "standby", "the TV is off (standby); the page comes back when it is switched on", now: now)
        }
        // Our page went away while the display stayed connected: smart displays close a page
        // without media after about ten minutes whatever it does (docs/displays.md), so it comes
        // back at once. Soon after it showed, that counts as a failure (no loop).
        if e.state == .showing, let shown = e.shownAt, now.timeIntervalSince(shown) < shortLived {
            fail(&e, "page_closed", "the page closed \(Int(now.timeIntervalSince(shown))) s after it showed", now: now)
            return []
        }
        if let window = e.spec.window, !window.contains(minute: minuteOfDay(now, calendar)) {
            set(&e, .outsideWindow, "outside_window",
                "keeps from \(KeepWindow.format(window.from)) to \(KeepWindow.format(window.to))", now: now)
            e.waitUntil = nil
            return []
        }
        if let until = e.backoffUntil, until > now {
            if e.state != .backoff { set(&e, .backoff, e.reason, e.detail, now: now) }
            return []
        }
        if !e.freshLink, e.sawOther {
            let until = e.waitUntil ?? now.addingTimeInterval(e.spec.yieldSeconds)
            e.waitUntil = until
            if until > now {
                set(&e, .yielding, "idle_screen_returned",
                    "launching \(formatSeconds(until.timeIntervalSince(now).rounded(.up))) s after the idle screen returned", now: now)
                return []
            }
        }
        return launch(&e, receiver, now: now, requestTimeout: requestTimeout)
    }

    /// The keep's app runs: showing, or the step that makes it show the page.
    private static func showing(_ e: inout KeepEntry, _ app: ReceiverApplication, now: Date,
                                requestTimeout: Double) -> [(CastOperationKind, KeepStep)] {
        let session = app.sessionId
        e.freshLink = false
        e.sawOther = false
        e.waitUntil = nil
        if e.session != session {
            e.session = session
            e.connectedSession = nil
            e.statusSession = nil
            e.viewSession = nil
            e.foreignSession = nil
        }
        switch e.spec.receiver {
        case .dashcast:
            // The session the keep launched gets its page once the receiver is ready: DashCast
            // loses a URL sent before it says "Application ready" (catt waits for it too); a
            // receiver that never says so gets it after `readyWait`.
            if e.launchedSession == session, e.configuredSession != session {
                let ready = app.statusText == Self.dashcastReady || (e.readyDeadline.map { $0 <= now } ?? true)
                guard ready, let op = configureOperation(e.spec) else { return [] }
                e.readyDeadline = nil
                e.pending += 1
                return [(op, .configure)]
            }
            // Same app: the page shows (DashCast does not say which URL it shows).
            shown(&e, now: now)
            return []
        case .app:
            // Same app: it shows. A session the keep launched and could not configure gets its
            // messages now.
            if e.configuredSession != session, e.state == .launching, let op = configureOperation(e.spec) {
                e.pending += 1
                return [(op, .configure)]
            }
            shown(&e, now: now)
            return []
        case .lovelace:
            if e.foreignSession == session {
                set(&e, .yielding, "app_showing", "the Lovelace receiver shows another Home Assistant", now: now)
                return []
            }
            if e.connectedSession == session {
                if e.viewSession == session {
                    shown(&e, now: now)
                    return []
                }
                e.pending += 1
                return [(.send(namespace: KeepReceiver.lovelaceNamespace, payload: .string(lovelacePayload(e.spec, "show_lovelace_view")),
                               appId: nil, awaitReply: false), .view)]
            }
            if let deadline = e.connectDeadline, e.connectSession == session || e.connectSession == nil {
                if deadline > now { return [] }
                e.connectDeadline = nil
                e.connectSession = nil
                fail(&e, "connection_failed", "the Lovelace receiver did not report a connection to Home Assistant", now: now)
                return []
            }
            if e.statusSession != session {
                // Ask first: a page already showing (after a restart) is not connected again.
                e.statusSession = session
                e.connectDeadline = now.addingTimeInterval(requestTimeout)
                e.connectSession = session
                e.pending += 1
                set(&e, .launching, "checking", "asking the Lovelace receiver what it shows", now: now)
                return [(.send(namespace: KeepReceiver.lovelaceNamespace, payload: .string(lovelacePayload(e.spec, "get_status")),
                               appId: nil, awaitReply: false), .askStatus)]
            }
            if let until = e.backoffUntil, until > now {
                if e.state != .backoff { set(&e, .backoff, e.reason, e.detail, now: now) }
                return []
            }
            // Running, not connected to us: `connect` (a launch attempt by the contract's count).
            e.launches += 1
            e.connectSession = session
            e.connectDeadline = now.addingTimeInterval(requestTimeout * 3)
            e.pending += 1
            set(&e, .launching, nil, now: now)
            return [(.send(namespace: KeepReceiver.lovelaceNamespace, payload: .string(lovelacePayload(e.spec, "connect")),
                           appId: nil, awaitReply: false), .launch)]
        }
    }

    private static func launch(_ e: inout KeepEntry, _ receiver: ReceiverStatus, now: Date,
                               requestTimeout: Double) -> [(CastOperationKind, KeepStep)] {
        var ops: [(CastOperationKind, KeepStep)] = []
        if e.spec.silent, let volume = receiver.volume, volume.muted == false, e.restore == nil {
            e.restore = SilentRestore(muted: false)
            ops.append((.setMuted(true), .mute))
        }
        e.freshLink = false
        e.sawOther = false
        e.waitUntil = nil
        e.session = nil
        e.configuredSession = nil
        e.connectedSession = nil
        e.statusSession = nil
        e.viewSession = nil
        e.launches += 1
        set(&e, .launching, nil, now: now)
        switch e.spec.receiver {
        case .lovelace:
            // Launched and connected in one operation; its answer is a receiver_status.
            e.statusSession = "launch"
            e.connectSession = nil
            e.connectDeadline = now.addingTimeInterval(requestTimeout * 4)
            ops.append((.send(namespace: KeepReceiver.lovelaceNamespace, payload: .string(lovelacePayload(e.spec, "connect")),
                              appId: e.spec.appId, awaitReply: false), .launch))
        case .dashcast:
            e.launchedSession = nil
            e.readyDeadline = nil
            ops.append((.launch(appId: e.spec.appId), .launch))
        case .app:
            if let op = configureOperation(e.spec, launching: true) {
                ops.append((op, .launch))
                // An app's further messages follow its first.
                for m in e.spec.messages.dropFirst() {
                    ops.append((.send(namespace: m.namespace, payload: .string(m.data), appId: nil, awaitReply: false), .configure))
                }
            } else {
                ops.append((.launch(appId: e.spec.appId), .launch))
            }
        }
        e.pending += ops.count
        return ops
    }

    /// DashCast's page, or an app's first message (launching: in that app, launched first).
    private static func configureOperation(_ spec: KeepSpec, launching: Bool = false) -> CastOperationKind? {
        let appId = launching ? spec.appId : nil
        switch spec.receiver {
        case .dashcast:
            guard let url = spec.url else { return nil }
            let message: JSONValue = .object(["url": .string(url), "force": .bool(spec.force), "reload": .bool(spec.reloadSeconds > 0),
                                              "reload_time": .int(Int(jsonNumber: (min(max(spec.reloadSeconds, 0), 86_400) * 1000).rounded()) ?? 0)])
            return .send(namespace: KeepReceiver.dashcastNamespace, payload: .string(JSONOutput.text(message)), appId: appId, awaitReply: false)
        case .app:
            guard let m = spec.messages.first else { return nil }
            return .send(namespace: m.namespace, payload: .string(m.data), appId: appId, awaitReply: false)
        case .lovelace:
            return nil
        }
    }

    /// The Lovelace receiver's messages (pychromecast's and Home Assistant's frontend's shapes).
    static func lovelacePayload(_ spec: KeepSpec, _ type: String) -> String {
        var o: [String: JSONValue] = ["type": .string(type), "hassUrl": .str(spec.hassURL)]
        if let uuid = spec.hassUUID { o["hassUUID"] = .string(uuid) }
        switch type {
        case "connect":
            o["refreshToken"] = .str(spec.refreshToken)
            o["clientId"] = .str(spec.clientId)
        case "show_lovelace_view":
            o["viewPath"] = .str(spec.viewPath)
            o["urlPath"] = .str(spec.dashboardPath)
        default:
            break
        }
        return JSONOutput.text(.object(o))
    }

    private static func fail(_ e: inout KeepEntry, _ reason: String, _ detail: String, now: Date) {
        e.failures += 1
        let delay = min(maxBackoff, firstBackoff * pow(2, Double(min(e.failures - 1, 16))))
        e.backoffUntil = now.addingTimeInterval(delay)
        e.waitUntil = nil
        e.sawOther = false
        e.freshLink = true
        set(&e, .backoff, reason, "\(detail); trying again in \(formatSeconds(delay)) s", now: now)
    }

    /// A keep operation finished.
    mutating func stepDone(_ id: DeviceID, _ step: KeepStep, _ result: Result<OperationResult, BridgeError>,
                           device: DeviceRecord?, now: Date) -> [String] {
        guard var e = entries[id] else { return [] }
        defer { entries[id] = e }
        e.pending = max(0, e.pending - 1)
        var logs: [String] = []
        let topic = device?.topic ?? id
        switch (step, result) {
        case (.restore, .success):
            e.restore = nil
            e.restoring = false
        case (.restore, .failure(let error)):
            e.restoring = false
            logs.append("\(topic): keep could not restore the mute after a silent launch (\(error.message)); trying again")
        case (.mute, .failure):
            // Nothing was muted.
            e.restore = nil
        case (.launch, .success):
            let session = device?.activeApp.flatMap { $0.appId == e.spec.appId ? $0.sessionId : nil }
            e.session = session ?? e.session
            switch e.spec.receiver {
            case .dashcast:
                e.launchedSession = session
                e.readyDeadline = now.addingTimeInterval(Self.readyWait)
            case .app:
                e.configuredSession = e.session
                if session != nil {
                    Self.shown(&e, now: now, fresh: true)
                }
            case .lovelace:
                e.connectSession = e.session
                e.statusSession = e.session
            }
        case (.launch, .failure(let error)):
            let reason = error.code == .launchError ? "launch_failed" : error.code.rawValue
            Self.fail(&e, reason, error.message, now: now)
            logs.append("\(topic): keep could not launch \(e.spec.summary): \(error.message)")
        case (.configure, .success):
            if let s = device?.activeApp?.sessionId { e.configuredSession = s }
            if e.spec.receiver == .dashcast, e.configuredSession == e.session {
                Self.shown(&e, now: now, fresh: true)
            }
        case (.view, .success):
            e.viewSession = e.session
            Self.shown(&e, now: now, fresh: true)
        case (.configure, .failure(let error)), (.view, .failure(let error)), (.askStatus, .failure(let error)):
            Self.fail(&e, "launch_failed", error.message, now: now)
            logs.append("\(topic): keep could not talk to \(e.spec.summary): \(error.message)")
        case (.askStatus, .success), (.mute, .success):
            break
        }
        return logs
    }

    /// A message of the Lovelace receiver (its status or an error). Returns a log line.
    mutating func lovelaceMessage(_ id: DeviceID, _ payload: CastPayload, device: DeviceRecord, now: Date) -> String? {
        guard var e = entries[id], e.spec.receiver == .lovelace, let session = device.activeApp?.sessionId,
              device.activeApp?.appId == e.spec.appId,
              case .object(let o)? = JSONOutput.parse(payload.bytes), let type = o["type"]?.stringValue else { return nil }
        defer { entries[id] = e }
        if e.session != session { e.session = session }
        switch type {
        case "receiver_status":
            e.statusSession = session
            let connected = o["connected"]?.boolValue == true
            let url = o["hassUrl"]?.stringValue
            let sameHass = url.map { Self.sameURL($0, e.spec.hassURL) } ?? false
            if connected, !sameHass {
                e.foreignSession = session
                e.connectDeadline = nil
                return nil
            }
            if connected {
                e.connectedSession = session
                e.connectDeadline = nil
                e.connectSession = nil
                // The view it shows already (after a restart) needs no message.
                let path = o["lovelacePath"].flatMap { v -> String? in v.stringValue ?? v.doubleValue.map { formatSeconds($0) } }
                let urlPath = o["urlPath"]?.stringValue
                if path != nil, path == e.spec.viewPath, urlPath == e.spec.dashboardPath { e.viewSession = session }
            } else if e.connectSession != session || e.connectDeadline == nil {
                // Not connected and nothing asked: connect (evaluate does it).
                e.connectDeadline = nil
                e.connectSession = nil
                e.connectedSession = nil
            }
            return nil
        case "receiver_error":
            let code = o["error_code"]?.intValue
            let message = o["error_message"]?.stringValue.map { String($0.prefix(200)) } ?? "no message"
            e.connectDeadline = nil
            e.connectSession = nil
            if code == 20 {
                // The receiver shows another Home Assistant: someone else's page.
                e.foreignSession = session
                return nil
            }
            if code == 21 {
                // Not connected: connect again (not a failure of ours).
                e.connectedSession = nil
                e.statusSession = session
                return nil
            }
            e.connectedSession = nil
            Self.fail(&e, Self.lovelaceReason(code), "the Lovelace receiver: \(message)", now: now)
            return "\(device.topic): keep: the Lovelace receiver refused (\(Self.lovelaceReason(code)), \(message))"
        default:
            return nil
        }
    }

    static func lovelaceReason(_ code: Int?) -> String {
        switch code {
        case 1: return "connection_failed"
        case 2: return "auth_error"
        case 3: return "connection_lost"
        case 4: return "hass_url_missing"
        case 5: return "no_https"
        case 20: return "wrong_instance"
        case 22: return "fetch_config_failed"
        default: return "receiver_error"
        }
    }

    /// Home Assistant's URL as the receiver reports it (it may add or drop a trailing slash).
    static func sameURL(_ a: String, _ b: String?) -> Bool {
        guard let b else { return false }
        func norm(_ s: String) -> String { s.hasSuffix("/") ? String(s.dropLast()) : s }
        return norm(a).lowercased() == norm(b).lowercased()
    }
}
