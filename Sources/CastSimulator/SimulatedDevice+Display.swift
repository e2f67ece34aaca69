import CastProtocol
import Foundation
import NIOCore

/// What the simulated DashCast receiver shows (`SimulatedDevice.dashCastState()`).
public struct DashCastState: Sendable, Hashable, Codable {
    /// The receiver page is up ("Application ready"); messages before that are lost.
    public var ready = false
    /// The page shown (the last `url` the receiver took).
    public var url: String?
    /// The last page came with `force`: the receiver navigated away to it and handles no
    /// further message (`responsive` is false).
    public var force = false
    /// The page is reloaded every `reloadTime` milliseconds (`reload` with a `reload_time`).
    public var reload = false
    public var reloadTime = 0
    /// Pages taken since the launch.
    public var loads = 0
    /// False once a forced page replaced the receiver page.
    public var responsive = true

    public init() {}

    /// The status texts the real receiver page sets: while it loads, and once it is ready.
    static let startingText = "Application is starting"
    static let readyText = "Application ready"
}

/// What the simulated Lovelace receiver knows (`SimulatedDevice.lovelaceState()`). The refresh
/// token a sender sent is not kept here.
public struct LovelaceState: Sendable, Hashable, Codable {
    public var connected = false
    public var showDemo = false
    public var hassUrl: String?
    public var hassUUID: String?
    public var clientId: String?
    /// The view shown: the `viewPath` as sent (a path, an index, or null).
    public var lovelacePath: JSONValue? = .null
    /// The dashboard shown: absent until a view was shown, null for the default dashboard.
    public var urlPath: JSONValue?
    /// `connect` messages handled since the launch.
    public var connects = 0
    /// The `error_code` of the last receiver_error sent (nil: none yet).
    public var lastErrorCode: Int?

    public init() {}
}

/// The Lovelace receiver's error codes (receiver_error `error_code`).
public enum LovelaceErrorCode {
    public static let connectionFailed = 1
    public static let authenticationFailed = 2
    public static let connectionLost = 3
    public static let hassURLMissing = 4
    public static let noHTTPS = 5
    public static let wrongInstance = 20
    public static let notConnected = 21
    public static let fetchConfigFailed = 22

    /// The simulator's own wording of each code (senders act on the code).
    static func message(_ code: Int) -> String {
        switch code {
        case connectionFailed: return "Could not reach the Home Assistant websocket API."
        case authenticationFailed: return "Home Assistant did not accept the authentication."
        case connectionLost: return "Lost the connection to Home Assistant."
        case hassURLMissing: return "No hassUrl was given."
        case noHTTPS: return "Home Assistant must be reached over https:// for casting."
        case wrongInstance: return "Connected to another Home Assistant instance."
        case notConnected: return "Not connected to Home Assistant, cannot show a dashboard."
        case fetchConfigFailed: return "Could not fetch the dashboard configuration."
        default: return "Unknown error."
        }
    }
}

/// Per-device settings of the display apps and timeouts (from the configuration; changed by
/// the control actions).
struct DisplaySettings: Sendable {
    var pageTimeout: Double?
    var displayTimeout: Double?
    var lovelaceAllowsHTTP: Bool
    var lovelaceVerifiesTokens: Bool
    /// Armed Lovelace failures: the error code and how many more times (nil: every time).
    var lovelaceFailure: (code: Int, remaining: Int?)?

    init(_ configuration: SimulatedDeviceConfiguration) {
        pageTimeout = configuration.pageTimeout
        displayTimeout = configuration.displayTimeout
        lovelaceAllowsHTTP = configuration.lovelaceAllowsHTTP
        lovelaceVerifiesTokens = configuration.lovelaceVerifiesTokens
    }
}

// The display receivers (DashCast, Home Assistant's Lovelace receiver), the page and display
// timeouts, and apps started or stopped by someone else (docs/simulator.md, "Display receivers").
extension SimulatedDevice {
    /// The Lovelace receiver's placeholder image (a dashboard shows as an image "playing").
    static let lovelaceImage = "https://cast.home-assistant.io/images/google-nest-hub.png"
    /// How often the Lovelace receiver reloads that image on a display with its own timeout.
    static let lovelaceKeepAlive: Double = 540

    var display: DisplaySettings {
        get { loop.value.display }
        set { loop.value.display = newValue }
    }

    // MARK: - Sending to an app's senders

    /// Every sender (connection and source id) connected to `transport`, in connection order.
    func senders(of transport: String) -> [(SenderConnection, String)] {
        connections.values.sorted(by: { $0.number < $1.number }).flatMap { connection in
            connection.sources(connectedTo: transport).sorted().map { (connection, $0) }
        }
    }

    /// Sends `json` from the running app to one sender, or (`to: nil`) to each sender connected
    /// to it, addressed to each by id (as a receiver's `sendCustomMessage` per sender does; not `*`).
    func sendFromApp(_ json: String, namespace: String, session: String,
                     to target: (connection: SenderConnection, source: String)?) {
        guard app?.sessionId == session else { return }
        let targets = target.map { [($0.connection, $0.source)] } ?? senders(of: session)
        for (connection, source) in targets {
            send(CastMessage(source: session, destination: source, namespace: namespace, json: json), on: connection)
        }
    }

    /// Called by `launch` once a new app session runs.
    func appLaunched() {
        guard let running = app else { return }
        app?.lastActivity = configuration.clock.now()
        if running.kind == .dashCast {
            // The receiver page takes a moment before it listens on its namespace.
            let session = running.sessionId
            later(configuration.launchLatency) {
                guard !self.shutDown, self.app?.sessionId == session else { return }
                self.app?.dashCast?.ready = true
                self.app?.statusText = DashCastState.readyText
                self.broadcastReceiverStatus()
            }
        }
    }

    // MARK: - DashCast

    /// `{"url", "force", "reload", "reload_time"}`: a page to show. The real page loads it into
    /// a frame and echoes the message to its sender; with `force` it navigates away to it
    /// instead (no echo, and nothing listens any more).
    func handleDashCast(_ message: CastMessage, on connection: SenderConnection) {
        guard let running = app, let state = running.dashCast, state.ready, state.responsive,
              let json = Self.parseJSON(message.payload), let url = json["url"]?.stringValue
        else { return }
        var next = state
        next.url = url
        next.loads += 1
        if Self.truthy(json["force"]) {
            next.force = true
            next.responsive = false
            next.reload = false
            next.reloadTime = 0
            app?.dashCast = next
            return
        }
        let reloadTime = Self.truthy(json["reload"]) ? Self.leadingInteger(json["reload_time"]) ?? 0 : 0
        next.force = false
        next.reload = reloadTime != 0
        next.reloadTime = reloadTime
        app?.dashCast = next
        let echo = CastMessage(sourceID: running.transportId, destinationID: message.sourceID,
                               namespace: message.namespace, payload: message.payload)
        later(replyDelay) { self.send(echo, on: connection) }
    }

    /// JavaScript truthiness of a message field.
    static func truthy(_ value: JSONValue?) -> Bool {
        switch value {
        case .none, .null?: return false
        case .bool(let flag)?: return flag
        case .number(let number)?: return number != 0 && !number.isNaN
        case .string(let text)?: return !text.isEmpty
        case .array?, .object?: return true
        }
    }

    /// `parseInt(value, 10)` of a number or a string; nil where that is NaN.
    static func leadingInteger(_ value: JSONValue?) -> Int? {
        switch value {
        case .number(let number)?:
            guard number.isFinite, abs(number) < 9e15 else { return nil }
            return Int(number.rounded(.towardZero))
        case .string(let text)?:
            let trimmed = text.drop(while: { $0 == " " || $0 == "\t" || $0 == "\n" })
            let sign = trimmed.first == "-" ? -1 : 1
            let digits = trimmed.drop(while: { $0 == "-" || $0 == "+" }).prefix(while: { $0.isASCII && $0.isNumber }).prefix(15)
            return Int(digits).map { sign * $0 }
        default:
            return nil
        }
    }

    // MARK: - Lovelace

    func handleLovelace(_ message: CastMessage, on connection: SenderConnection) {
        guard let running = app, running.lovelace != nil, let json = Self.parseJSON(message.payload),
              let type = json["type"]?.stringValue else { return }
        let session = running.sessionId
        let sender = (connection: connection, source: message.sourceID)
        switch type {
        case "get_status":
            later(replyDelay) { self.lovelaceGetStatus(json, session: session, sender: sender) }
        case "connect":
            lovelaceConnect(json, session: session)
        case "show_lovelace_view":
            later(replyDelay) { self.lovelaceShowView(json, session: session, sender: sender) }
        case "show_demo":
            later(replyDelay) {
                guard self.app?.sessionId == session else { return }
                self.app?.lovelace?.showDemo = true
                self.app?.lovelace?.lovelacePath = .string("overview")
                self.sendLovelaceStatus(session: session, to: nil)
            }
        default:
            break  // the real receiver only logs unknown types
        }
    }

    func lovelaceStatusJSON(_ state: LovelaceState) -> String {
        var status: [String: JSONValue] = ["type": .string("receiver_status"), "connected": .bool(state.connected),
                                           "showDemo": .bool(state.showDemo)]
        if state.connected {
            if let hassUrl = state.hassUrl { status["hassUrl"] = .string(hassUrl) }
            if let uuid = state.hassUUID { status["hassUUID"] = .string(uuid) }
            if let path = state.lovelacePath { status["lovelacePath"] = path }
            if let urlPath = state.urlPath { status["urlPath"] = urlPath }
        }
        return (try? CastJSON.encode(JSONValue.object(status))) ?? "{}"
    }

    func sendLovelaceStatus(session: String, to sender: (connection: SenderConnection, source: String)?) {
        guard let state = app?.lovelace, app?.sessionId == session else { return }
        sendFromApp(lovelaceStatusJSON(state), namespace: SimulatedAppID.lovelaceNamespace, session: session, to: sender)
    }

    func sendLovelaceError(_ code: Int, session: String, to sender: (connection: SenderConnection, source: String)?) {
        guard app?.sessionId == session else { return }
        app?.lovelace?.lastErrorCode = code
        let error = JSONValue.object(["type": .string("receiver_error"), "error_code": .number(Double(code)),
                                      "error_message": .string(LovelaceErrorCode.message(code))])
        sendFromApp((try? CastJSON.encode(error)) ?? "{}", namespace: SimulatedAppID.lovelaceNamespace,
                    session: session, to: sender)
    }

    /// True when a message names another instance than the one connected (a field that is
    /// absent or empty names none).
    static func namesOtherInstance(_ json: JSONValue, _ state: LovelaceState) -> Bool {
        if let uuid = json["hassUUID"]?.stringValue, !uuid.isEmpty, uuid != state.hassUUID { return true }
        if let url = json["hassUrl"]?.stringValue, !url.isEmpty, url != state.hassUrl { return true }
        return false
    }

    func lovelaceGetStatus(_ json: JSONValue, session: String, sender: (connection: SenderConnection, source: String)) {
        guard let state = app?.lovelace, app?.sessionId == session else { return }
        if state.connected, Self.namesOtherInstance(json, state) {
            sendLovelaceError(LovelaceErrorCode.wrongInstance, session: session, to: sender)
        }
        sendLovelaceStatus(session: session, to: sender)
    }

    /// An armed failure for this kind of message (22 fails views, any other code connects).
    func takeLovelaceFailure(view: Bool) -> Int? {
        guard let failure = display.lovelaceFailure,
              (failure.code == LovelaceErrorCode.fetchConfigFailed) == view else { return nil }
        if let remaining = failure.remaining {
            display.lovelaceFailure = remaining > 1 ? (failure.code, remaining - 1) : nil
        }
        return failure.code
    }

    /// `connect`: checks the URL (and the token, when the device verifies tokens); on success
    /// every sender of the app gets the new receiver_status, on failure a receiver_error and
    /// the state stays as it was (a receiver that was connected stays connected).
    func lovelaceConnect(_ json: JSONValue, session: String) {
        app?.lovelace?.connects += 1
        let hassUrl = json["hassUrl"]?.stringValue ?? ""
        let uuid = json["hassUUID"]?.stringValue
        let clientId = json["clientId"]?.stringValue
        let refreshToken = json["refreshToken"]?.stringValue ?? ""
        func fail(_ code: Int) {
            later(replyDelay) { self.sendLovelaceError(code, session: session, to: nil) }
        }
        @Sendable func succeed() {
            guard !shutDown, app?.sessionId == session, var state = app?.lovelace else { return }
            if state.hassUUID != uuid {
                // Another instance: its dashboards are not the ones shown.
                state.lovelacePath = .null
                state.urlPath = nil
            }
            state.connected = true
            state.hassUrl = hassUrl
            state.hassUUID = uuid
            state.clientId = clientId
            app?.lovelace = state
            sendLovelaceStatus(session: session, to: nil)
        }
        if let code = takeLovelaceFailure(view: false) { return fail(code) }
        guard !hassUrl.isEmpty else { return fail(LovelaceErrorCode.hassURLMissing) }
        guard let endpoint = LovelaceTokenCheck.tokenEndpoint(hassUrl: hassUrl), let host = endpoint.host else {
            return fail(LovelaceErrorCode.connectionFailed)
        }
        if endpoint.scheme?.lowercased() == "http", host.lowercased() != "localhost", !display.lovelaceAllowsHTTP {
            return fail(LovelaceErrorCode.noHTTPS)
        }
        guard !refreshToken.isEmpty else { return fail(LovelaceErrorCode.authenticationFailed) }
        guard display.lovelaceVerifiesTokens else {
            later(replyDelay) { succeed() }
            return
        }
        guard LovelaceTokenCheck.isLoopback(host) else { return fail(LovelaceErrorCode.connectionFailed) }
        let body = LovelaceTokenCheck.formBody(refreshToken: refreshToken, clientId: clientId)
        LovelaceTokenCheck.check(endpoint: endpoint, body: body, on: eventLoop).whenSuccess { result in
            switch result {
            case .accepted: succeed()
            case .refused: self.sendLovelaceError(LovelaceErrorCode.authenticationFailed, session: session, to: nil)
            case .unreachable: self.sendLovelaceError(LovelaceErrorCode.connectionFailed, session: session, to: nil)
            }
        }
    }

    /// `show_lovelace_view`: not connected → the status and error 21 to the asking sender; a
    /// message naming another instance → status and error 20; else the view is shown, the
    /// placeholder image "plays", and every sender gets the new status.
    func lovelaceShowView(_ json: JSONValue, session: String, sender: (connection: SenderConnection, source: String)) {
        guard var state = app?.lovelace, app?.sessionId == session else { return }
        state.showDemo = false
        app?.lovelace = state
        guard state.connected else {
            sendLovelaceStatus(session: session, to: sender)
            sendLovelaceError(LovelaceErrorCode.notConnected, session: session, to: sender)
            return
        }
        if Self.namesOtherInstance(json, state) {
            sendLovelaceStatus(session: session, to: sender)
            sendLovelaceError(LovelaceErrorCode.wrongInstance, session: session, to: sender)
            return
        }
        var urlPath = json["urlPath"] ?? .null
        if urlPath == .string("lovelace") || urlPath.stringValue == nil { urlPath = .null }
        state.lovelacePath = json["viewPath"]
        if urlPath == .string("energy") { state.lovelacePath = .null }
        state.urlPath = urlPath
        app?.lovelace = state
        if let code = takeLovelaceFailure(view: true) {
            sendLovelaceError(code, session: session, to: nil)
            return
        }
        let dashboard = urlPath.stringValue ?? "lovelace"
        let view = state.lovelacePath.flatMap { path -> String? in
            if let text = path.stringValue { return text }
            return path.intValue.map(String.init)
        }
        let title = view.map { "\(dashboard): \($0)" } ?? dashboard
        app?.statusText = "Casting: \(title)"
        showLovelaceImage(title: title, session: session)
        sendLovelaceStatus(session: session, to: nil)
        broadcastReceiverStatus()
    }

    /// Loads the placeholder image as the real receiver does for every view it shows (and,
    /// on a display with a timeout of its own, every 540 s to keep the display from closing it).
    func showLovelaceImage(title: String, session: String) {
        guard app?.sessionId == session else { return }
        let metadata = JSONValue.object(["metadataType": .number(0), "title": .string(title)])
        let media = JSONValue.object(["contentId": .string(Self.lovelaceImage), "contentType": .string("image/jpeg"),
                                      "streamType": .string("NONE"), "metadata": metadata])
        let now = configuration.clock.now()
        guard case .success = load(.object(["media": media, "autoplay": .bool(true)]), queue: false, at: now),
              let status = self.media?.status(at: now) else { return }
        app?.lovelaceImage = (now, title)
        broadcast(from: session, namespace: CastNamespace.media, json: MediaResponse.status(requestId: 0, [status]).json())
    }

    // MARK: - Page and display timeouts

    /// Applies the page and display timeouts at the clock's time (every tick, and around a
    /// manual clock's advance). Cheap when neither is set.
    func checkAppTimeouts() {
        let settings = display
        guard settings.pageTimeout != nil || settings.displayTimeout != nil,
              !shutDown, let running = app, running.kind != .backdrop else { return }
        let now = configuration.clock.now()
        if let limit = settings.displayTimeout {
            if running.kind == .lovelace, let (shown, title) = running.lovelaceImage, limit > Self.lovelaceKeepAlive,
               now - shown >= Self.lovelaceKeepAlive, media?.media?.contentId == Self.lovelaceImage {
                // The keep-alive always comes before the display's timeout: reload now, as of
                // the last reload that would have happened by now.
                let reloads = ((now - shown) / Self.lovelaceKeepAlive).rounded(.down)
                showLovelaceImage(title: title, session: running.sessionId)
                app?.lovelaceImage = (shown + reloads * Self.lovelaceKeepAlive, title)
                app?.lastActivity = shown + reloads * Self.lovelaceKeepAlive
            }
            if let activity = app?.lastActivity, now - activity >= limit {
                logger.debug("display timeout: closing \(running.appId)")
                closeTimedOutApp()
                return
            }
        }
        if let limit = settings.pageTimeout, !running.disablesIdleTimeout {
            let idle = media == nil && senders(of: running.transportId).isEmpty
            if !idle {
                app?.idleSince = nil
            } else if let since = running.idleSince {
                if now - since >= limit {
                    logger.debug("page timeout: closing \(running.appId)")
                    closeTimedOutApp()
                }
            } else {
                app?.idleSince = now
            }
        } else if running.idleSince != nil {
            app?.idleSince = nil
        }
    }

    func closeTimedOutApp() {
        stopApp(mediaIdleReason: media == nil ? nil : "CANCELLED")
        later(replyDelay) { self.broadcastReceiverStatus() }
    }

    // MARK: - Public API

    /// The running DashCast receiver's state (nil when DashCast does not run).
    public func dashCastState() async -> DashCastState? {
        try? await eventLoop.submit { self.app?.dashCast }.get()
    }

    /// The running Lovelace receiver's state (nil when it does not run).
    public func lovelaceState() async -> LovelaceState? {
        try? await eventLoop.submit { self.app?.lovelace }.get()
    }

    /// Sets the page timeout (seconds of the device clock; nil: never). See
    /// `SimulatedDeviceConfiguration.pageTimeout`.
    public func setPageTimeout(_ seconds: Double?) async {
        try? await eventLoop.submit {
            self.display.pageTimeout = seconds.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
            self.app?.idleSince = nil
        }.get()
    }

    /// Sets the display timeout (seconds of the device clock; nil: never), counted from now for
    /// the running app. See `SimulatedDeviceConfiguration.displayTimeout`.
    public func setDisplayTimeout(_ seconds: Double?) async {
        try? await eventLoop.submit {
            self.display.displayTimeout = seconds.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
            if self.app != nil { self.app?.lastActivity = self.configuration.clock.now() }
        }.get()
    }

    /// Changes the Lovelace receiver's options (nil leaves one as it is).
    public func setLovelaceOptions(allowsHTTP: Bool? = nil, verifiesTokens: Bool? = nil) async {
        try? await eventLoop.submit {
            if let allowsHTTP { self.display.lovelaceAllowsHTTP = allowsHTTP }
            if let verifiesTokens { self.display.lovelaceVerifiesTokens = verifiesTokens }
        }.get()
    }

    /// Makes the Lovelace receiver fail with receiver_error `errorCode`: code 22 fails
    /// `show_lovelace_view`, any other code fails `connect`; `count` times (nil: until told
    /// otherwise). A nil `errorCode` disarms it.
    public func failLovelace(errorCode: Int?, count: Int? = nil) async {
        try? await eventLoop.submit {
            if let errorCode, count.map({ $0 > 0 }) ?? true {
                self.display.lovelaceFailure = (errorCode, count)
            } else {
                self.display.lovelaceFailure = nil
            }
        }.get()
    }

    /// Starts `appId` as another sender or the Assistant would (a timer, an answer on the
    /// screen): the running app is stopped (CLOSE to its senders) and every connected sender
    /// sees the RECEIVER_STATUS. An id the simulator does not know runs as an app that only
    /// shows, named `displayName`. False for an unknown id without a name. An app that already
    /// runs stays as it is.
    @discardableResult
    public func remoteLaunch(appId: String, displayName: String? = nil, launchedFromCloud: Bool = false) async -> Bool {
        (try? await eventLoop.submit { () -> Bool in
            guard RunningApp.make(appId: appId) != nil || displayName != nil else { return false }
            if self.app?.appId == appId, self.app?.kind != .backdrop { return true }
            self.launch(appId: appId, launchedFromCloud: launchedFromCloud, displayName: displayName)
            self.later(self.replyDelay) { self.broadcastReceiverStatus() }
            return true
        }.get()) ?? false
    }

    /// Stops the running app as someone else would (the idle screen returns). False when only
    /// the idle screen runs.
    @discardableResult
    public func remoteStop() async -> Bool {
        (try? await eventLoop.submit { () -> Bool in
            guard let running = self.app, running.kind != .backdrop else { return false }
            self.stopApp(mediaIdleReason: self.media == nil ? nil : "CANCELLED")
            self.later(self.replyDelay) { self.broadcastReceiverStatus() }
            return true
        }.get()) ?? false
    }
}
