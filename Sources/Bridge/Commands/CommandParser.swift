import CastProtocol
import Foundation

/// A command that could not be parsed: the error, and the `id` to echo when one was readable.
public struct ParseFailure: Error, Sendable, Hashable {
    public var error: BridgeError
    public var id: JSONValue?
}

/// Turns MQTT payloads into typed commands. Every input is hostile until parsed here: sizes are
/// bounded, text must be UTF-8, JSON must be an object with known keys of the right types, and
/// every value is range-checked. Nothing here touches device state.
public struct CommandParser: Sendable {
    public var maxPayload: Int
    public var allowedNamespaces: [String]

    /// The device commands (`command/<name>`): the one list of their names.
    enum CommandName: String, CaseIterable {
        case load, play, pause, toggle, stop, seek, rate, volume, mute, next, previous, launch, quit, send, transfer,
             refresh, announce
        case skipAd = "skip_ad"
    }

    /// The bridge requests (`bridge/request/<name>`): the one list of their names.
    enum RequestName: String, CaseIterable {
        case devices, refresh, transfer, remove
        case healthCheck = "health_check"
    }

    static var commandNames: [String] { CommandName.allCases.map(\.rawValue) }

    /// Keys of the JSON form that every command takes (its envelope).
    static let envelopeKeys: Set<String> = ["id", "expires"]

    public init(maxPayload: Int = 65_536, allowedNamespaces: [String] = ["urn:x-cast:*"]) {
        self.maxPayload = maxPayload
        self.allowedNamespaces = allowedNamespaces
    }

    public init(configuration c: BridgeConfiguration) {
        self.init(maxPayload: c.mqtt.maxPayload, allowedNamespaces: c.cast.allowedNamespaces)
    }

    /// The payload as the contract reads it.
    enum Body {
        case short(String)  // trimmed; "" for an empty payload
        case json([String: JSONValue])
    }

    /// How deep a command's JSON may nest (objects and arrays), `custom_data` included.
    static let maxJSONDepth = 32

    func body(_ payload: [UInt8]) -> Result<Body, ParseFailure> {
        if payload.count > maxPayload {
            return .failure(ParseFailure(error: BridgeError(.payloadTooLarge,
                "the payload has \(payload.count) bytes; mqtt.max_payload allows \(maxPayload)"), id: nil))
        }
        guard let text = String(validating: payload, as: UTF8.self) else {
            return .failure(ParseFailure(error: .invalid("the payload is not valid UTF-8"), id: nil))
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("{") else { return .success(.short(trimmed)) }
        guard let value = JSONOutput.parse(Array(trimmed.utf8)), case .object(let dict) = value else {
            return .failure(ParseFailure(error: .invalid("the payload starts with { but is not a valid JSON object"), id: nil))
        }
        // The device echoes what we send inside its own status, a few levels deeper; past its
        // decoder's limit the answer could not be read and the command would end in `timeout`.
        if value.depth > Self.maxJSONDepth {
            return .failure(ParseFailure(error: .invalid(
                "the JSON nests more than \(Self.maxJSONDepth) levels deep; flatten custom_data or data"), id: nil))
        }
        return .success(.json(dict))
    }

    /// The envelope of the JSON form: `id` (echoed in the response) and `expires`.
    struct Envelope: Sendable, Hashable {
        var id: JSONValue?
        var expires: Expiry?
    }

    /// The payload's body and, for the JSON form, its envelope: one rule for device commands and
    /// bridge requests alike.
    func bodyAndEnvelope(_ payload: [UInt8]) -> Result<(Body, Envelope), ParseFailure> {
        let body: Body
        switch self.body(payload) {
        case .failure(let f): return .failure(f)
        case .success(let b): body = b
        }
        guard case .json(let dict) = body else { return .success((body, Envelope())) }
        var envelope = Envelope()
        switch dict["id"] {
        case nil: break
        case .string(let s)? where s.utf8.count <= 256: envelope.id = dict["id"]
        case .number(let n)? where n.isFinite: envelope.id = dict["id"]
        default:
            return .failure(ParseFailure(error: .invalid("\"id\" must be a string (up to 256 bytes) or a number"), id: nil))
        }
        if let raw = dict["expires"], !raw.isNull {
            guard let expiry = Expiry.parse(raw) else {
                return .failure(ParseFailure(error: .invalid(
                    "\"expires\" must be an RFC 3339 time (2026-11-22T10:15:30Z) or seconds from now (0 or more)"), id: envelope.id))
            }
            envelope.expires = expiry
        }
        return .success((body, envelope))
    }

    /// `<base>/<dev>/command/<name>`.
    public func parse(name: String, payload: [UInt8]) -> Result<ParsedCommand, ParseFailure> {
        let body: Body
        let envelope: Envelope
        switch bodyAndEnvelope(payload) {
        case .failure(let f): return .failure(f)
        case .success(let (b, e)): (body, envelope) = (b, e)
        }
        guard let command = CommandName(rawValue: name) else {
            return .failure(ParseFailure(error: BridgeError(.unknownCommand,
                "there is no command \"\(name.prefix(64))\"; commands are: \(Self.commandNames.joined(separator: ", "))"), id: envelope.id))
        }
        do {
            return .success(ParsedCommand(name: name, id: envelope.id, command: try parseCommand(command, body: body),
                                          expires: envelope.expires))
        } catch let e as BridgeError {
            return .failure(ParseFailure(error: e, id: envelope.id))
        } catch {
            return .failure(ParseFailure(error: BridgeError(.internal, "\(error)"), id: envelope.id))
        }
    }

    /// `<base>/<dev>/command/send/<namespace>`: the whole payload is the message body.
    /// Valid UTF-8 is sent as a STRING payload, anything else as BINARY.
    public func parseSend(namespace: String, payload: [UInt8]) -> Result<ParsedCommand, ParseFailure> {
        do {
            if payload.count > maxPayload {
                throw BridgeError(.payloadTooLarge, "the payload has \(payload.count) bytes; mqtt.max_payload allows \(maxPayload)")
            }
            try checkNamespace(namespace)
            if payload.isEmpty { throw BridgeError.invalid("the message body is empty; publish the message to send") }
            let castPayload: CastPayload = String(validating: payload, as: UTF8.self).map(CastPayload.string) ?? .binary(payload)
            try checkCastSize(castPayload, namespace: namespace)
            let send = SendCommand(namespace: namespace, payload: castPayload, appId: nil, awaitReply: false, timeout: nil)
            return .success(ParsedCommand(name: "send", id: nil, command: .send(send)))
        } catch let e as BridgeError {
            return .failure(ParseFailure(error: e, id: nil))
        } catch {
            return .failure(ParseFailure(error: BridgeError(.internal, "\(error)"), id: nil))
        }
    }

    /// `<base>/bridge/request/<name>`.
    public func parseBridgeRequest(name: String, payload: [UInt8]) -> Result<(BridgeRequest, JSONValue?), ParseFailure> {
        let body: Body
        let id: JSONValue?
        switch bodyAndEnvelope(payload) {
        case .failure(let f): return .failure(f)
        case .success(let (b, e)): (body, id) = (b, e.id)
        }
        do {
            let f = Fields(body: body, command: name)
            switch RequestName(rawValue: name) {
            case .devices?: try f.noValue(); return .success((.devices, id))
            case .refresh?: try f.noValue(); return .success((.refresh, id))
            case .healthCheck?: try f.noValue(); return .success((.healthCheck, id))
            case .transfer?:
                guard case .json = body else {
                    throw BridgeError.invalid("transfer needs a JSON object like {\"from\": \"kitchen\", \"to\": \"living_room_tv\"}")
                }
                try f.allow(["from", "to", "keep_source"])
                guard let from = try f.string("from"), !from.isEmpty, let to = try f.string("to"), !to.isEmpty else {
                    throw BridgeError.invalid("transfer needs \"from\" and \"to\" (topic name, friendly name or id)")
                }
                return .success((.transfer(from: from, to: to, keepSource: try f.bool("keep_source") ?? false), id))
            case .remove?:
                if case .short(let device) = body {
                    guard !device.isEmpty else { throw BridgeError.invalid("remove needs the device (topic name, friendly name or id)") }
                    return .success((.remove(device: device), id))
                }
                try f.allow(["device"])
                guard let device = try f.string("device"), !device.isEmpty else {
                    throw BridgeError.invalid("remove needs \"device\": the device to forget (topic name, friendly name or id)")
                }
                return .success((.remove(device: device), id))
            case nil:
                throw BridgeError(.unknownCommand, "there is no bridge request \"\(name.prefix(64))\"; requests are: "
                                  + RequestName.allCases.map(\.rawValue).joined(separator: ", "))
            }
        } catch let e as BridgeError {
            return .failure(ParseFailure(error: e, id: id))
        } catch {
            return .failure(ParseFailure(error: BridgeError(.internal, "\(error)"), id: id))
        }
    }

    // MARK: - Commands

    func parseCommand(_ name: CommandName, body: Body) throws -> DeviceCommand {
        let f = Fields(body: body, command: name.rawValue)
        switch name {
        case .play: try f.noValue(); return .play
        case .pause: try f.noValue(); return .pause
        case .toggle: try f.noValue(); return .toggle
        case .stop: try f.noValue(); return .stop
        case .next: try f.noValue(); return .next
        case .previous: try f.noValue(); return .previous
        case .quit: try f.noValue(); return .quit
        case .refresh: try f.noValue(); return .refresh
        case .skipAd: try f.noValue(); return .skipAd
        case .seek: return .seek(try parseSeek(f))
        case .rate: return .rate(try parseRate(f))
        case .volume: return .volume(try parseVolume(f))
        case .mute: return .mute(try parseMute(f))
        case .launch: return .launch(appId: try parseLaunch(f))
        case .load: return .load(try parseLoad(f))
        case .send: return .send(try parseSendJSON(f))
        case .transfer:
            switch f.body {
            case .short(let target):
                guard !target.isEmpty, target.utf8.count <= 256 else {
                    throw BridgeError.invalid("transfer needs the target device (topic name, friendly name or id)")
                }
                return .transfer(to: target, keepSource: false)
            case .json:
                try f.allow(["to", "keep_source"])
                guard let to = try f.string("to"), !to.isEmpty, to.utf8.count <= 256 else {
                    throw BridgeError.invalid("transfer needs \"to\": the target device (topic name, friendly name or id)")
                }
                return .transfer(to: to, keepSource: try f.bool("keep_source") ?? false)
            }
        case .announce: return .announce(try parseAnnounce(f))
        }
    }

    func parseSeek(_ f: Fields) throws -> SeekCommand {
        switch f.body {
        case .short(let text):
            guard let (sign, value) = Decimal.parse(text) else {
                throw BridgeError.invalid("seek takes seconds: 42 (absolute), +10 or -10 (relative)")
            }
            guard value <= 10_000_000 else { throw BridgeError.invalid("seek position is out of range") }
            if let sign { return SeekCommand(target: .relative(sign == "-" ? -value : value), resumeState: nil) }
            return SeekCommand(target: .absolute(value), resumeState: nil)
        case .json:
            try f.allow(["position", "relative", "resume"])
            let position = try f.number("position"), relative = try f.number("relative")
            var resume: String?
            switch try f.string("resume") {
            case nil: resume = nil
            case "play": resume = "PLAYBACK_START"
            case "pause": resume = "PLAYBACK_PAUSE"
            default: throw BridgeError.invalid("\"resume\" must be \"play\" or \"pause\"")
            }
            switch (position, relative) {
            case (let p?, nil):
                guard p >= 0, p <= 10_000_000 else { throw BridgeError.invalid("\"position\" must be 0 or more seconds") }
                return SeekCommand(target: .absolute(p), resumeState: resume)
            case (nil, let r?):
                guard abs(r) <= 10_000_000 else { throw BridgeError.invalid("\"relative\" is out of range") }
                return SeekCommand(target: .relative(r), resumeState: resume)
            default:
                throw BridgeError.invalid("seek needs exactly one of \"position\" (seconds) or \"relative\" (+/- seconds)")
            }
        }
    }

    func parseRate(_ f: Fields) throws -> Double {
        let rate: Double
        switch f.body {
        case .short(let text):
            guard let (sign, v) = Decimal.parse(text), sign != "-" else {
                throw BridgeError.invalid("rate takes a number from 0.5 to 2.0, e.g. 1.5")
            }
            rate = v
        case .json:
            try f.allow(["rate"])
            guard let v = try f.number("rate") else { throw BridgeError.invalid("rate needs {\"rate\": 1.5}") }
            rate = v
        }
        guard rate >= 0.5, rate <= 2.0 else { throw BridgeError.invalid("rate must be from 0.5 to 2.0, got \(rate)") }
        return rate
    }

    func parseVolume(_ f: Fields) throws -> VolumeChange {
        switch f.body {
        case .short(let text):
            guard let (sign, v) = Decimal.parse(text) else {
                throw BridgeError.invalid("volume takes a percentage: 40, or +5 / -5 to change it")
            }
            guard v <= 100 else { throw BridgeError.invalid("volume percent must be 0-100, got \(text)") }
            if let sign { return .relativePercent(sign == "-" ? -v : v) }
            return .level(v / 100)
        case .json:
            try f.allow(["level", "percent"])
            switch (try f.number("level"), try f.number("percent")) {
            case (let l?, nil):
                guard l >= 0, l <= 1 else { throw BridgeError.invalid("\"level\" must be 0.0-1.0, got \(l); use \"percent\" for 0-100") }
                return .level(l)
            case (nil, let p?):
                guard p >= 0, p <= 100 else { throw BridgeError.invalid("\"percent\" must be 0-100, got \(p)") }
                return .level(p / 100)
            default:
                throw BridgeError.invalid("volume needs exactly one of {\"level\": 0.4} or {\"percent\": 40}")
            }
        }
    }

    func parseMute(_ f: Fields) throws -> MuteChange {
        switch f.body {
        case .short(let text):
            switch text.lowercased() {
            case "true", "on", "1": return .set(true)
            case "false", "off", "0": return .set(false)
            case "toggle": return .toggle
            default: throw BridgeError.invalid("mute takes true/false, on/off, 1/0 or toggle")
            }
        case .json:
            try f.allow(["muted"])
            guard let m = try f.bool("muted") else { throw BridgeError.invalid("mute needs {\"muted\": true} or {\"muted\": false}") }
            return .set(m)
        }
    }

    func parseLaunch(_ f: Fields) throws -> String {
        let appId: String
        switch f.body {
        case .short(let text): appId = text
        case .json:
            try f.allow(["app_id"])
            appId = try f.string("app_id") ?? ""
        }
        try Self.checkAppId(appId)
        return appId
    }

    static func checkAppId(_ appId: String) throws {
        let ok = !appId.isEmpty && appId.utf8.count <= 64 && appId.unicodeScalars.allSatisfy {
            ($0 >= "A" && $0 <= "Z") || ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" || $0 == "-" || $0 == "."
        }
        if !ok { throw BridgeError.invalid("an app id is 1-64 letters, digits, '_', '-' or '.', e.g. CC1AD845") }
    }

    func parseAnnounce(_ f: Fields) throws -> AnnounceCommand {
        switch f.body {
        case .short(let text):
            try MediaBuilder.checkURL(text, key: "announce")
            return AnnounceCommand(url: text, volume: nil, contentType: nil, title: nil)
        case .json:
            try f.allow(["url", "volume", "content_type", "title"])
            guard let url = try f.string("url") else { throw BridgeError.invalid("announce needs \"url\"") }
            try MediaBuilder.checkURL(url, key: "url")
            let volume = try f.number("volume")
            if let volume, !(0...1).contains(volume) { throw BridgeError.invalid("\"volume\" must be 0.0-1.0") }
            return AnnounceCommand(url: url, volume: volume, contentType: try f.string("content_type"), title: try f.string("title"))
        }
    }

    func parseSendJSON(_ f: Fields) throws -> SendCommand {
        guard case .json(let dict) = f.body else {
            throw BridgeError.invalid("publish the message to command/send/<namespace>, or send {\"namespace\", \"data\"} here")
        }
        try f.allow(["namespace", "data", "app_id", "reply", "timeout"])
        guard let namespace = try f.string("namespace") else { throw BridgeError.invalid("send needs \"namespace\"") }
        try checkNamespace(namespace)
        guard let data = dict["data"] else { throw BridgeError.invalid("send needs \"data\" (a JSON value or a string)") }
        let text = data.stringValue ?? JSONOutput.text(data)
        let appId = try f.string("app_id")
        if let appId { try Self.checkAppId(appId) }
        let timeout = try f.number("timeout")
        if let timeout, !(timeout > 0 && timeout <= 300) { throw BridgeError.invalid("\"timeout\" must be 0-300 seconds") }
        try checkCastSize(.string(text), namespace: namespace)
        return SendCommand(namespace: namespace, payload: .string(text), appId: appId,
                           awaitReply: try f.bool("reply") ?? false, timeout: timeout)
    }

    func parseLoad(_ f: Fields) throws -> LoadCommand {
        let command: LoadCommand
        switch f.body {
        case .short(let url):
            try MediaBuilder.checkURL(url, key: "load")
            let media = MediaInformation(contentId: url, streamType: "BUFFERED", contentType: MediaBuilder.guessContentType(url))
            command = LoadCommand(appId: CastAppID.defaultMediaReceiver, load: LoadRequest(media: media), queue: nil)
        case .json:
            command = try MediaBuilder.load(f)
        }
        if let load = command.load {
            try checkCastSize(.string(MediaRequest.load(load).json(requestId: 1)), namespace: CastNamespace.media)
        }
        if let queue = command.queue {
            try checkCastSize(.string(MediaRequest.queueLoad(queue).json(requestId: 1)), namespace: CastNamespace.media)
        }
        return command
    }

    // MARK: - Namespaces and sizes

    /// Namespace rules of §5/§6: `urn:x-cast:` prefix, no reserved transport or platform
    /// namespace, and a match in `cast.allowed_namespaces`.
    public func checkNamespace(_ ns: String) throws {
        guard ns.hasPrefix(CastNamespace.prefix), ns.utf8.count > CastNamespace.prefix.utf8.count else {
            throw BridgeError.invalid("a namespace starts with urn:x-cast: (e.g. urn:x-cast:com.example.app)")
        }
        guard ns.utf8.count <= 256, !ns.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0 == "+" || $0 == "#" }) else {
            throw BridgeError.invalid("the namespace contains spaces, control characters, + or #, or is longer than 256 bytes")
        }
        if CastNamespace.isReserved(ns) {
            throw BridgeError(.namespaceNotAllowed, "\(ns) is reserved for the Cast transport")
        }
        for reserved in ["receiver", "media", "remoting", "webrtc"] {
            let base = CastNamespace.platformPrefix + reserved
            if ns == base || ns.hasPrefix(base + ".") {
                throw BridgeError(.namespaceNotAllowed, "\(ns) is a platform namespace; use the bridge's commands for it")
            }
        }
        guard allowedNamespaces.contains(where: { globMatches($0, ns) }) else {
            throw BridgeError(.namespaceNotAllowed, "\(ns) is not in cast.allowed_namespaces")
        }
    }

    /// Refuses a command whose Cast message could not be sent (over 64 KiB) before anything is
    /// sent for it (CastFraming's rule; the client checks the built message exactly).
    func checkCastSize(_ payload: CastPayload, namespace: String) throws {
        guard CastFraming.fits(payload: payload, namespace: namespace) else {
            throw BridgeError(.payloadTooLarge, "the Cast message would have \(payload.bytes.count) bytes of payload; a Cast message is at most 64 KiB")
        }
    }
}
