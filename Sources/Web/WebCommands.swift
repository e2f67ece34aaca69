import Foundation

/// Commands from a page: each becomes an MQTT message on the command topic, with the JSON form
/// of the command and an `id` of `web-<n>`, pushed into the daemon's input queue, so the same
/// parser, queue, bounds and responses apply as to any MQTT client. The one response comes back
/// through `tee`; its `id` routes it to the page that asked.
extension WebHub {
    /// Commands a page may have waiting for an answer at once, and all pages together.
    static let pendingPerPage = 64
    static let pendingTotal = 4096

    /// What a page asked for: a device command (`device` set) or a bridge request.
    struct CommandRequest: Sendable, Equatable {
        var ref: String
        var device: String?
        var name: String
        /// The JSON form's body (a JSON object), without `id`.
        var body: [UInt8]
    }

    enum CommandRejection: Error, Equatable {
        case invalid(String)
        case tooMany(String)
    }

    /// Topic names and command names as they may appear in a topic: no wildcards, no `/`, no
    /// control characters, at most 128 bytes.
    static func validName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 128 && !name.hasPrefix("$")
            && name.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "/" && $0 != "+" && $0 != "#" && $0.value != 0x7F }
    }

    /// Parses a page's `{"type":"command","ref","device"|"bridge":true,"command","body"}`.
    static func parseCommand(_ object: [String: Any]) -> Result<CommandRequest, CommandRejection> {
        let ref = (object["ref"] as? String).map { String($0.prefix(64)) } ?? ""
        guard let name = object["command"] as? String, validName(name) else {
            return .failure(.invalid("a command needs a name without /, +, # or spaces"))
        }
        let device = object["device"] as? String
        if let device, !validName(device) || device == "bridge" {
            return .failure(.invalid("not a device topic name: \(device.prefix(64))"))
        }
        guard device != nil || object["bridge"] as? Bool == true else {
            return .failure(.invalid("a command names a device, or is a bridge request"))
        }
        var body = (object["body"] as? [String: Any]) ?? [:]
        if object["body"] != nil, !(object["body"] is [String: Any]) {
            return .failure(.invalid("the body of a command is a JSON object"))
        }
        body["id"] = nil
        guard let data = try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]) else {
            return .failure(.invalid("the body cannot be written as JSON"))
        }
        return .success(CommandRequest(ref: ref, device: device, name: name, body: Array(data)))
    }

    /// Sends a page's command into the bridge; the response reaches the page later.
    func send(_ request: CommandRequest, from client: Int) -> Result<String, CommandRejection> {
        let id: String? = state.withLock { s in
            guard (s.clients[client]?.pending ?? Self.pendingPerPage) < Self.pendingPerPage,
                  s.pending.count < Self.pendingTotal else { return nil }
            let id = "web-\(s.nextCommand)"
            s.nextCommand += 1
            s.pending[id] = Pending(client: client, ref: request.ref)
            s.clients[client]?.pending += 1
            return id
        }
        guard let id else {
            return .failure(.tooMany("too many commands from this page are waiting for an answer; try again"))
        }
        let topic = request.device.map { "\(baseTopic)/\($0)/command/\(request.name)" }
            ?? "\(baseTopic)/bridge/request/\(request.name)"
        submit(topic, Self.withID(request.body, id))
        return .success(id)
    }

    /// `{...}` with `"id":"<id>"` added as the first member.
    static func withID(_ body: [UInt8], _ id: String) -> [UInt8] {
        var out = Array(#"{"id":"#.utf8)
        JSONText.appendString(id, to: &out)
        let inner = body.drop { $0 != UInt8(ascii: "{") }.dropFirst()
        if inner.first(where: { $0 != 0x20 }) != UInt8(ascii: "}") { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: inner.isEmpty ? [UInt8(ascii: "}")] : Array(inner))
        return out
    }

    /// A page's command was refused before it reached the bridge: answered like the bridge would.
    static func rejection(ref: String, name: String, _ rejection: CommandRejection) -> [UInt8] {
        let (code, message): (String, String)
        switch rejection {
        case .invalid(let m): (code, message) = ("invalid_payload", m)
        case .tooMany(let m): (code, message) = ("busy", m)
        }
        var json = JSONText()
        json.raw(#"{"ref":"#)
        json.string(ref)
        json.raw(#","response":{"command":"#)
        json.string(name)
        json.raw(#","error":{"code":"#)
        json.string(code)
        json.raw(#","message":"#)
        json.string(message)
        json.raw(#"},"status":"error"}}"#)
        return json.bytes
    }

    /// Routes a response whose `id` is one of the pages' commands to that page (under the lock).
    func routeResponse(_ payload: [UInt8], _ s: inout State) {
        guard let id = Self.webID(in: payload), let pending = s.pending.removeValue(forKey: id) else { return }
        guard s.clients[pending.client] != nil else { return }
        s.clients[pending.client]?.pending -= 1
        var json = JSONText(capacity: payload.count + 64)
        json.raw(#"{"ref":"#)
        json.string(pending.ref)
        json.raw(#","id":"#)
        json.string(id)
        json.raw(#","response":"#)
        json.payload(payload)
        json.raw("}")
        s.clients[pending.client]?.direct.append(json.bytes)
    }

    /// The top-level `"id":"web-…"` of a response, found without parsing the document. The
    /// bridge writes keys sorted, so the top-level `id` follows `command`, `data` and `error` (where
    /// a device's own reply could carry an `id` of any value): the last match is the right one.
    static func webID(in payload: [UInt8]) -> String? {
        let needle = Array(#""id":"web-"#.utf8)
        guard payload.count > needle.count else { return nil }
        var i = payload.count - needle.count
        while i >= 0 {
            if payload[i] == needle[0], payload[i..<(i + needle.count)].elementsEqual(needle) {
                let start = i + needle.count - 4
                guard let end = payload[start...].firstIndex(of: UInt8(ascii: "\"")), end - start <= 32 else { return nil }
                return String(decoding: payload[start..<end], as: UTF8.self)
            }
            i -= 1
        }
        return nil
    }
}
