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
    static var commandNames: [String] { CommandName.allCases.map(\.rawValue) }

    /// Keys of the JSON form that every command takes (its envelope).
    static let envelopeKeys: Set<String> = ["id", "expires"]

    public init(maxPayload: Int, allowedNamespaces: [String]) {
        self.maxPayload = maxPayload
        self.allowedNamespaces = allowedNamespaces
    }

    /// With the configuration's limits (`BridgeConfiguration()`: the defaults).
    public init(configuration c: BridgeConfiguration = BridgeConfiguration()) {
        self.init(maxPayload: c.mqtt.maxPayload, allowedNamespaces: c.cast.allowedNamespaces)
    }

    /// The payload as the contract reads it.
    enum Body {
        case short(String)  // trimmed; "" for an empty payload
        case json([String: JSONValue])
    }

    /// How deep a command's JSON may nest (objects and arrays), `custom_data` included.
    static let maxJSONDepth = 32

    /// `mqtt.max_payload`: the one check of a command payload's size.
    func checkPayloadSize(_ payload: [UInt8]) throws(BridgeError) {
        guard payload.count <= maxPayload else {
            throw BridgeError(.payloadTooLarge, "the payload has \(payload.count) bytes; mqtt.max_payload allows \(maxPayload)")
        }
    }

    func body(_ payload: [UInt8]) -> Result<Body, ParseFailure> {
        do {
            try checkPayloadSize(payload)
        } catch {
            return .failure(ParseFailure(error: error, id: nil))
        }
        // The JSON form, `{` … `}` between ASCII white space: parsed from the bytes themselves
        // (no String, no copy). The parser checks the UTF-8 of every string, so a document it
        // accepts is valid UTF-8; only one it refuses is looked at again, for the right message.
        if let first = payload.firstIndex(where: { !Self.isASCIISpace($0) }), payload[first] == UInt8(ascii: "{"),
           let last = payload.lastIndex(where: { !Self.isASCIISpace($0) }), payload[last] == UInt8(ascii: "}") {
            let json = first == 0 && last == payload.count - 1 ? payload : Array(payload[first...last])
            return jsonBody(json, validUTF8: { String(validating: payload, as: UTF8.self) != nil })
        }
        guard let text = String(validating: payload, as: UTF8.self) else {
            return .failure(ParseFailure(error: .invalid("the payload is not valid UTF-8"), id: nil))
        }
        let trimmed = Self.trimmed(text)
        guard trimmed.hasPrefix("{") else { return .success(.short(trimmed)) }
        return jsonBody(Array(trimmed.utf8), validUTF8: { true })
    }

    private func jsonBody(_ json: [UInt8], validUTF8: () -> Bool) -> Result<Body, ParseFailure> {
        // Refused before it is decoded (a deep payload costs a decoder time, on the loop the
        // devices share). The device also echoes what we send inside its own status, a few levels
        // deeper: past its decoder's limit the answer could not be read and the command would end
        // in `timeout`.
        if JSONOutput.nestsDeeper(json, than: Self.maxJSONDepth) {
            guard validUTF8() else {
                return .failure(ParseFailure(error: .invalid("the payload is not valid UTF-8"), id: nil))
            }
            return .failure(ParseFailure(error: .invalid(
                "the JSON nests more than \(Self.maxJSONDepth) levels deep; flatten custom_data or data"), id: nil))
        }
        guard let value = JSONOutput.parse(json), case .object(let dict) = value else {
            guard validUTF8() else {
                return .failure(ParseFailure(error: .invalid("the payload is not valid UTF-8"), id: nil))
            }
            return .failure(ParseFailure(error: .invalid("the payload starts with { but is not a valid JSON object"), id: nil))
        }
        return .success(.json(dict))
    }

    static func isASCIISpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }

    /// `text.trimmingCharacters(in: .whitespacesAndNewlines)`, with ASCII white space taken off
    /// the bytes (Foundation's `CharacterSet` look-ups were ~3 % of a cold command turn);
    /// Foundation decides when an end is not ASCII (U+0085, U+00A0, U+2028 and the like).
    static func trimmed(_ text: String) -> String {
        let bytes = text.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isASCIISpace(bytes[start]) { start = bytes.index(after: start) }
        while end > start, isASCIISpace(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        if start < end, bytes[start] >= 0x80 || bytes[bytes.index(before: end)] >= 0x80 {
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if start == bytes.startIndex, end == bytes.endIndex { return text }
        return String(text[start..<end])
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
        guard let command = CommandName.byName[name] else {
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
            try checkPayloadSize(payload)
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
            case .logLevel?: return .success((.logLevel(try parseLogLevel(body)), id))
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
