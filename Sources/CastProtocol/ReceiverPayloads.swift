/// Well-known receiver app ids.
public enum CastAppID {
    /// The Default Media Receiver.
    public static let defaultMediaReceiver = "CC1AD845"
    /// The Backdrop / idle screen app.
    public static let backdrop = "E8C28D3C"
}

/// Device volume as reported in RECEIVER_STATUS.
public struct ReceiverVolume: Codable, Sendable, Hashable {
    /// `attenuation`, `fixed` or `master`.
    public var controlType: String?
    public var level: Double?
    public var muted: Bool?
    public var stepInterval: Double?

    public init(controlType: String? = nil, level: Double? = nil, muted: Bool? = nil, stepInterval: Double? = nil) {
        self.controlType = controlType
        self.level = level
        self.muted = muted
        self.stepInterval = stepInterval
    }
}

/// One running application in RECEIVER_STATUS.
public struct ReceiverApplication: Codable, Sendable, Hashable {
    public var appId: String
    public var appType: String?
    public var displayName: String?
    public var iconUrl: String?
    public var isIdleScreen: Bool?
    public var launchedFromCloud: Bool?
    /// Namespaces the app speaks (the wire shape is `[{"name": ...}]`).
    public var namespaces: [String]
    public var sessionId: String?
    public var statusText: String?
    public var transportId: String?
    public var universalAppId: String?

    public init(
        appId: String, appType: String? = "WEB", displayName: String? = nil, iconUrl: String? = nil,
        isIdleScreen: Bool? = false, launchedFromCloud: Bool? = false, namespaces: [String] = [],
        sessionId: String? = nil, statusText: String? = nil, transportId: String? = nil,
        universalAppId: String? = nil
    ) {
        self.appId = appId
        self.appType = appType
        self.displayName = displayName
        self.iconUrl = iconUrl
        self.isIdleScreen = isIdleScreen
        self.launchedFromCloud = launchedFromCloud
        self.namespaces = namespaces
        self.sessionId = sessionId
        self.statusText = statusText
        self.transportId = transportId
        self.universalAppId = universalAppId
    }

    struct NamespaceEntry: Codable, Hashable { var name: String }

    enum CodingKeys: String, CodingKey {
        case appId, appType, displayName, iconUrl, isIdleScreen, launchedFromCloud, namespaces, sessionId,
             statusText, transportId, universalAppId
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        appId = try c.decode(String.self, forKey: .appId)
        appType = try? c.decodeIfPresent(String.self, forKey: .appType)
        displayName = try? c.decodeIfPresent(String.self, forKey: .displayName)
        iconUrl = try? c.decodeIfPresent(String.self, forKey: .iconUrl)
        isIdleScreen = try? c.decodeIfPresent(Bool.self, forKey: .isIdleScreen)
        launchedFromCloud = try? c.decodeIfPresent(Bool.self, forKey: .launchedFromCloud)
        let entries = (try? c.decodeIfPresent([NamespaceEntry].self, forKey: .namespaces)) ?? nil
        namespaces = entries?.map(\.name) ?? []
        sessionId = try? c.decodeIfPresent(String.self, forKey: .sessionId)
        statusText = try? c.decodeIfPresent(String.self, forKey: .statusText)
        // The endpoint we CONNECT to: an empty, huge or control-character id is no endpoint
        // (a real device drops a connection that addresses one), so it counts as absent.
        transportId = ((try? c.decodeIfPresent(String.self, forKey: .transportId)) ?? nil).flatMap(CastEndpoint.validated)
        universalAppId = try? c.decodeIfPresent(String.self, forKey: .universalAppId)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(appId, forKey: .appId)
        try c.encodeIfPresent(appType, forKey: .appType)
        try c.encodeIfPresent(displayName, forKey: .displayName)
        try c.encodeIfPresent(iconUrl, forKey: .iconUrl)
        try c.encodeIfPresent(isIdleScreen, forKey: .isIdleScreen)
        try c.encodeIfPresent(launchedFromCloud, forKey: .launchedFromCloud)
        try c.encode(namespaces.map(NamespaceEntry.init(name:)), forKey: .namespaces)
        try c.encodeIfPresent(sessionId, forKey: .sessionId)
        try c.encodeIfPresent(statusText, forKey: .statusText)
        try c.encodeIfPresent(transportId, forKey: .transportId)
        try c.encodeIfPresent(universalAppId, forKey: .universalAppId)
    }

    /// True for the idle/backdrop screen (which counts as "no app").
    public var isIdle: Bool { isIdleScreen == true || appId == CastAppID.backdrop }
}

/// The `status` object of RECEIVER_STATUS.
public struct ReceiverStatus: Codable, Sendable, Hashable {
    public var applications: [ReceiverApplication]
    public var volume: ReceiverVolume?
    /// HDMI-CEC active input; nil when the device does not say (unknown, not false).
    public var isActiveInput: Bool?
    /// HDMI-CEC standby; nil when the device does not say.
    public var isStandBy: Bool?
    public var userEq: JSONValue?

    public init(applications: [ReceiverApplication] = [], volume: ReceiverVolume? = nil,
                isActiveInput: Bool? = nil, isStandBy: Bool? = nil, userEq: JSONValue? = nil) {
        self.applications = applications
        self.volume = volume
        self.isActiveInput = isActiveInput
        self.isStandBy = isStandBy
        self.userEq = userEq
    }

    enum CodingKeys: String, CodingKey { case applications, volume, isActiveInput, isStandBy, userEq }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        applications = (try? c.decodeIfPresent([ReceiverApplication].self, forKey: .applications)) ?? []
        volume = try? c.decodeIfPresent(ReceiverVolume.self, forKey: .volume)
        isActiveInput = try? c.decodeIfPresent(Bool.self, forKey: .isActiveInput)
        isStandBy = try? c.decodeIfPresent(Bool.self, forKey: .isStandBy)
        userEq = try? c.decodeIfPresent(JSONValue.self, forKey: .userEq)
    }

    /// The running app (pychromecast also looks only at the first entry), nil when none runs.
    public var runningApp: ReceiverApplication? { applications.first }

    /// The running app unless it is the idle screen.
    public var activeApp: ReceiverApplication? {
        guard let app = applications.first, !app.isIdle else { return nil }
        return app
    }
}

/// Requests on `urn:x-cast:com.google.cast.receiver` (destination `receiver-0`).
public enum ReceiverRequest: Sendable, Hashable {
    case getStatus
    case launch(appId: String)
    /// STOP of a session; nil stops whatever runs (as go-chromecast does).
    case stop(sessionId: String?)
    case setVolume(level: Double)
    case setMuted(Bool)
    case getAppAvailability(appIds: [String])

    struct VolumeBody: Encodable { var level: Double?; var muted: Bool? }
    struct Wire: Encodable {
        var type: String
        var requestId: Int
        var appId: AppIDField?
        var sessionId: String?
        var volume: VolumeBody?
    }
    enum AppIDField: Encodable {
        case one(String), many([String])
        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .one(let s): try c.encode(s)
            case .many(let a): try c.encode(a)
            }
        }
    }

    public var type: String {
        switch self {
        case .getStatus: return "GET_STATUS"
        case .launch: return "LAUNCH"
        case .stop: return "STOP"
        case .setVolume, .setMuted: return "SET_VOLUME"
        case .getAppAvailability: return "GET_APP_AVAILABILITY"
        }
    }

    /// The JSON text of the request with `requestId`.
    public func json(requestId: Int) -> String {
        directJSON(requestId: requestId) ?? wireJSON(requestId: requestId)
    }

    /// The same through `JSONEncoder` (what `directJSON` must equal; its tests compare them).
    func wireJSON(requestId: Int) -> String {
        var wire = Wire(type: type, requestId: requestId)
        switch self {
        case .getStatus: break
        case .launch(let appId): wire.appId = .one(appId)
        case .stop(let sessionId): wire.sessionId = sessionId
        case .setVolume(let level): wire.volume = VolumeBody(level: min(max(level, 0), 1))
        case .setMuted(let muted): wire.volume = VolumeBody(muted: muted)
        case .getAppAvailability(let ids): wire.appId = .many(ids)
        }
        return (try? CastJSON.encode(wire)) ?? #"{"type":"\#(type)","requestId":\#(requestId)}"#
    }
}

/// Incoming messages on the receiver namespace.
public enum ReceiverResponse: Sendable, Hashable {
    case status(requestId: Int, ReceiverStatus)
    case launchError(requestId: Int?, reason: String?, extendedError: String?)
    /// Intermediate LAUNCH_STATUS (devices that ask the user first).
    case launchStatus(requestId: Int?, status: String?)
    case invalidRequest(requestId: Int?, reason: String?)
    case appAvailability(requestId: Int, availability: [String: String])
    case unknown(type: String?)

    /// The fields of the non-status replies (RECEIVER_STATUS's `status` object is decoded only
    /// by `StatusWrapper`, once).
    struct Wire: Decodable {
        var type: String?
        var reason: String?
        var extendedError: String?
        var availability: [String: String]?
    }
    struct LaunchStatusWire: Decodable { var status: String? }

    /// Parses a receiver-namespace payload. Throws only when the payload is not a JSON object.
    public static func parse(_ payload: CastPayload) throws -> ReceiverResponse {
        try parse(payload, parsedStatus: true)
    }

    /// The same with RECEIVER_STATUS decoded by `JSONDecoder` (the reference the parsed path is
    /// checked against: tests and the payload fuzzer).
    public static func parseWithJSONDecoder(_ payload: CastPayload) throws -> ReceiverResponse {
        try parse(payload, parsedStatus: false)
    }

    private static func parse(_ payload: CastPayload, parsedStatus: Bool) throws -> ReceiverResponse {
        guard let text = payload.text else { throw CastMessageError.invalid("binary payload on the receiver namespace") }
        guard let header = CastPayloadHeader.parse(payload) else {
            throw CastMessageError.invalid("receiver payload is not a JSON object")
        }
        let requestId = header.requestId
        if header.type == "RECEIVER_STATUS" {
            let status: ReceiverStatus
            if parsedStatus, case .object(let top)? = JSONValue.parse(text) {
                // `status` must be an object (StatusWrapper's one field, not optional).
                if case .object(let fields)? = top["status"] { status = ReceiverStatus(parsed: fields) } else { status = ReceiverStatus() }
            } else {
                status = (try? CastJSON.decode(StatusWrapper.self, from: text))?.status ?? ReceiverStatus()
            }
            return .status(requestId: requestId ?? 0, status)
        }
        let wire = try CastJSON.decode(Wire.self, from: text)
        switch header.type {
        case "LAUNCH_ERROR":
            return .launchError(requestId: requestId, reason: wire.reason, extendedError: wire.extendedError)
        case "LAUNCH_STATUS":
            let status = (try? CastJSON.decode(LaunchStatusWire.self, from: text))?.status
            return .launchStatus(requestId: requestId, status: status)
        case "INVALID_REQUEST":
            return .invalidRequest(requestId: requestId, reason: wire.reason)
        case "GET_APP_AVAILABILITY":
            return .appAvailability(requestId: requestId ?? 0, availability: wire.availability ?? [:])
        default:
            return .unknown(type: header.type)
        }
    }

    struct StatusWrapper: Decodable { var status: ReceiverStatus }

    /// Builds the JSON a device sends (used by the simulator).
    public func json() -> String {
        struct Out: Encodable {
            var type: String
            var requestId: Int?
            var status: ReceiverStatus?
            var reason: String?
            var extendedError: String?
            var availability: [String: String]?
            var responseType: String?
        }
        let out: Out
        switch self {
        case .status(let id, let status): out = Out(type: "RECEIVER_STATUS", requestId: id, status: status)
        case .launchError(let id, let reason, let ext):
            out = Out(type: "LAUNCH_ERROR", requestId: id, reason: reason, extendedError: ext)
        case .launchStatus(let id, _): out = Out(type: "LAUNCH_STATUS", requestId: id)
        case .invalidRequest(let id, let reason): out = Out(type: "INVALID_REQUEST", requestId: id, reason: reason)
        case .appAvailability(let id, let availability):
            out = Out(type: "GET_APP_AVAILABILITY", requestId: id, availability: availability,
                      responseType: "GET_APP_AVAILABILITY")
        case .unknown(let type): out = Out(type: type ?? "UNKNOWN")
        }
        return (try? CastJSON.encode(out)) ?? "{}"
    }
}
