import CastProtocol
import Foundation

/// `<dev>/command/keep` (mqtt-api.md §13): keep a page or an app on a display.
public enum KeepCommand: Sendable, Hashable {
    /// A new keep (what, when, how), switched on or off (`"keep": false` with settings).
    case set(KeepSpec, enabled: Bool)
    /// `on` / `{"keep": true}`: the last keep again.
    case on
    /// `off` / `{"keep": false}`: the keep stops acting; its settings stay for `on`.
    case off
    /// An empty payload: the keep and its settings are gone.
    case clear
}

/// The Cast apps a keep knows by name.
public enum KeepReceiver: String, Sendable, Hashable, Codable {
    /// DashCast (`84912283`): shows a URL.
    case dashcast
    /// Home Assistant's Lovelace receiver (`A078F6B0`): shows a dashboard view.
    case lovelace
    /// Any other app by id, with optional messages once it is up.
    case app

    static let dashcastApp = "84912283"
    static let dashcastNamespace = "urn:x-cast:com.madmod.dashcast"
    static let lovelaceApp = "A078F6B0"
    static let lovelaceNamespace = "urn:x-cast:com.nabucasa.hast"
}

/// A message a keep sends on the app's namespace once it is up.
public struct KeepMessage: Sendable, Hashable, Codable {
    public var namespace: String
    /// The JSON text sent (an object's encoding, or a string as it is).
    public var data: String
}

/// A daily window in the bridge machine's local time; `from` later than `to` wraps past midnight.
public struct KeepWindow: Sendable, Hashable, Codable {
    /// Minutes after midnight.
    public var from: Int
    public var to: Int

    func contains(minute: Int) -> Bool {
        from < to ? (minute >= from && minute < to) : (minute >= from || minute < to)
    }

    static func parseTime(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count <= 2, parts[1].count == 2, let h = Int(parts[0]), let m = Int(parts[1]),
              (0...23).contains(h), (0...59).contains(m) else { return nil }
        return h * 60 + m
    }

    static func format(_ minute: Int) -> String {
        let h = minute / 60, m = minute % 60
        return (h < 10 ? "0" : "") + "\(h):" + (m < 10 ? "0" : "") + "\(m)"
    }
}

/// What to keep on a display, when, and how (parsed and checked; mqtt-api.md §13).
public struct KeepSpec: Sendable, Hashable, Codable {
    public var receiver: KeepReceiver
    public var appId: String
    /// DashCast: the page, whether to open it as the top page (`force`), and how often the
    /// receiver reloads it (seconds; 0 = never).
    public var url: String?
    public var force = false
    public var reloadSeconds: Double = 0
    /// Lovelace receiver.
    public var viewPath: String?
    public var dashboardPath: String?
    public var hassURL: String?
    public var hassUUID: String?
    /// Never published, never logged; kept only in `state_dir/keeps.json` (mode 0600).
    public var refreshToken: String?
    /// nil with `clientIdIsNull`: the receiver gets `clientId: null` (Home Assistant's
    /// system-user tokens carry no client id).
    public var clientId: String? = "cast2mqtt"
    /// Messages for the app once it is up (any app; DashCast's and Lovelace's own are built in).
    public var messages: [KeepMessage] = []
    /// nil: always.
    public var window: KeepWindow?
    public var yieldSeconds: Double = 30
    public var silent = false

    /// The app's namespace the keep talks on, if any.
    var namespace: String? {
        switch receiver {
        case .dashcast: return KeepReceiver.dashcastNamespace
        case .lovelace: return KeepReceiver.lovelaceNamespace
        case .app: return messages.first?.namespace
        }
    }

    /// The keep as `<dev>/keep` and the web page show it: no token.
    var summary: String {
        switch receiver {
        case .dashcast: return "dashcast"
        case .lovelace: return "lovelace"
        case .app: return appId
        }
    }
}

extension CommandParser {
    /// The keys of a keep (the command's JSON form and `displays.<device>.keep`).
    static let keepKeys: Set<String> = [
        "keep", "app", "url", "force", "reload_seconds", "view_path", "dashboard_path", "hass_url", "hass_uuid",
        "refresh_token", "client_id", "messages", "when", "yield_seconds", "silent",
    ]

    func parseKeep(_ body: Body) throws -> KeepCommand {
        switch body {
        case .short(let text):
            switch text.lowercased() {
            case "": return .clear
            case "on", "true": return .on
            case "off", "false": return .off
            default:
                throw BridgeError.invalid("keep takes on, off, an empty payload (forget the keep) or a JSON object like "
                    + "{\"app\": \"dashcast\", \"url\": \"https://…\"}")
            }
        case .json(let dict):
            let f = Fields(body: body, command: "keep")
            try f.allow(Self.keepKeys)
            let enabled = try f.bool("keep")
            let settings = dict.keys.filter { !Self.envelopeKeys.contains($0) && $0 != "keep" }
            if settings.isEmpty {
                guard let enabled else { throw BridgeError.invalid("keep needs \"app\" (dashcast, lovelace or an app id), or \"keep\": true/false") }
                return enabled ? .on : .off
            }
            return .set(try parseKeepSpec(dict), enabled: enabled ?? true)
        }
    }

    /// A keep's settings from a JSON object (the command, or the configuration file's mapping).
    func parseKeepSpec(_ dict: [String: JSONValue]) throws -> KeepSpec {
        let f = Fields(body: .json(dict), command: "keep")
        try f.allow(Self.keepKeys)
        guard let app = try f.string("app"), !app.isEmpty else {
            throw BridgeError.invalid("keep needs \"app\": dashcast, lovelace or an app id")
        }
        var spec: KeepSpec
        switch app.lowercased() {
        case "dashcast": spec = KeepSpec(receiver: .dashcast, appId: KeepReceiver.dashcastApp)
        case "lovelace": spec = KeepSpec(receiver: .lovelace, appId: KeepReceiver.lovelaceApp)
        default:
            try Self.checkAppId(app)
            spec = KeepSpec(receiver: app == KeepReceiver.dashcastApp ? .dashcast : app == KeepReceiver.lovelaceApp ? .lovelace : .app,
                            appId: app)
        }
        func url(_ key: String) throws -> String? {
            guard let u = try f.string(key) else { return nil }
            let lower = u.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), u.utf8.count > 8 else {
                throw BridgeError.invalid("\"\(key)\" must be an http:// or https:// URL")
            }
            return u
        }
        spec.url = try url("url")
        spec.force = try f.bool("force") ?? false
        if let reload = try f.number("reload_seconds") {
            guard (0...86_400).contains(reload) else { throw BridgeError.invalid("\"reload_seconds\" must be 0 (never) to 86400") }
            spec.reloadSeconds = reload
        }
        spec.viewPath = try f.string("view_path")
        spec.dashboardPath = try f.string("dashboard_path")
        spec.hassURL = try url("hass_url")
        spec.hassUUID = try f.string("hass_uuid")
        spec.refreshToken = try f.string("refresh_token")
        if dict["client_id"]?.isNull == true {
            spec.clientId = nil
        } else if let client = try f.string("client_id") {
            spec.clientId = client
        }
        switch spec.receiver {
        case .dashcast:
            guard spec.url != nil else { throw BridgeError.invalid("keep with dashcast needs \"url\": the page to show") }
        case .lovelace:
            guard spec.hassURL != nil else {
                throw BridgeError.invalid("keep with lovelace needs \"hass_url\": Home Assistant's URL as the display reaches it")
            }
            guard let token = spec.refreshToken, !token.isEmpty else {
                throw BridgeError.invalid("keep with lovelace needs \"refresh_token\" (Home Assistant's cast2mqtt.show_lovelace_view passes one)")
            }
        case .app:
            break
        }
        if let raw = dict["messages"], !raw.isNull {
            guard let list = raw.arrayValue, list.count <= 16 else {
                throw BridgeError.invalid("\"messages\" must be a list of up to 16 {\"namespace\", \"data\"} objects")
            }
            spec.messages = try list.map { item in
                guard case .object(let m) = item, let ns = m["namespace"]?.stringValue, let data = m["data"],
                      m.keys.allSatisfy({ $0 == "namespace" || $0 == "data" }) else {
                    throw BridgeError.invalid("each of \"messages\" is {\"namespace\": \"urn:x-cast:…\", \"data\": {…} or \"text\"}")
                }
                try checkNamespace(ns)
                let text: String
                switch data {
                case .string(let s): text = s
                case .object: text = JSONOutput.text(data)
                default: throw BridgeError.invalid("a message's \"data\" must be a JSON object or a string")
                }
                let payload = CastPayload.string(text)
                try checkCastSize(payload, namespace: ns)
                return KeepMessage(namespace: ns, data: text)
            }
        }
        switch dict["when"] {
        case nil, .null?: break
        case .string(let s)? where s == "always": break
        case .object(let w)?:
            guard w.keys.allSatisfy({ $0 == "from" || $0 == "to" }), let from = w["from"]?.stringValue.flatMap(KeepWindow.parseTime),
                  let to = w["to"]?.stringValue.flatMap(KeepWindow.parseTime) else {
                throw BridgeError.invalid("\"when\" is \"always\" or {\"from\": \"HH:MM\", \"to\": \"HH:MM\"}")
            }
            guard from != to else { throw BridgeError.invalid("\"when\": from and to are the same time; use \"always\"") }
            spec.window = KeepWindow(from: from, to: to)
        default:
            throw BridgeError.invalid("\"when\" is \"always\" or {\"from\": \"HH:MM\", \"to\": \"HH:MM\"}")
        }
        if let y = try f.number("yield_seconds") {
            guard (0...86_400).contains(y) else { throw BridgeError.invalid("\"yield_seconds\" must be 0 to 86400") }
            spec.yieldSeconds = y
        }
        spec.silent = try f.bool("silent") ?? false
        return spec
    }
}
