import CastProtocol
import NIOCore

/// How a replayed message (Tests/Fixtures/real-devices) is sent by the device.
public enum ReplayMode: String, Sendable, CaseIterable {
    /// Sent now, unprompted: broadcast (`*`) from its endpoint; on the connection namespace
    /// (a CLOSE) addressed to every sender connected to that endpoint, as devices do.
    case unprompted
    /// From now on the answer to every GET_STATUS on its namespace (requestId: the request's).
    case status
    /// The answer to the next request of type `to` on its namespace, instead of the device's own
    /// handling (requestId: the request's). Several queue up in order.
    case answer
}

/// The replay part of a device's state (`DeviceLoopState.replay`): what real messages it
/// speaks instead of its own. Cleared by `behave`.
struct ReplayState: Sendable {
    /// GET_STATUS answers by namespace: the message text exactly as given.
    var statusAnswers: [String: String] = [:]
    /// One-shot answers by namespace + NUL + request type, oldest first.
    var answers: [String: [String]] = [:]
    /// Transports a replayed RECEIVER_STATUS listed: CONNECTs to them are accepted and requests
    /// to them reach the replayed answers (the app a real device said it runs).
    var transports: [String] = []

    var isEmpty: Bool { statusAnswers.isEmpty && answers.isEmpty && transports.isEmpty }
}

public struct ReplayError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

extension SimulatedDevice {
    var replay: ReplayState {
        get { loop.value.replay }
        set { loop.value.replay = newValue }
    }

    /// Speaks `text` (a real device's message, kept byte for byte apart from the requestId of an
    /// answer) on `namespace` as `mode` says. `source`: the endpoint it comes from (default
    /// `receiver-0` for the receiver and multizone namespaces, else the transport of the app the
    /// last replayed RECEIVER_STATUS listed, else the running app's).
    public func replay(_ text: String, namespace: String, mode: ReplayMode, requestType: String? = nil,
                       source: String? = nil) async throws {
        guard text.utf8.count <= CastFraming.maxBodySize - CastFraming.endpointReserve else {
            throw ReplayError(description: "message too large for one frame")
        }
        guard let json = try? CastJSON.decode(JSONValue.self, from: text), json.objectValue != nil else {
            throw ReplayError(description: "message is not a JSON object")
        }
        try await eventLoop.submit { () throws in
            if namespace == CastNamespace.receiver {
                self.adoptTransports(of: json)
            }
            switch mode {
            case .status:
                self.replay.statusAnswers[namespace] = text
            case .answer:
                guard let requestType, !requestType.isEmpty else {
                    throw ReplayError(description: "an answer needs \"to\": the request type it answers")
                }
                self.replay.answers[namespace + "\u{0}" + requestType, default: []].append(text)
            case .unprompted:
                guard let endpoint = source ?? self.replaySource(for: namespace) else {
                    throw ReplayError(description: "no app runs to send it from")
                }
                self.sendReplayed(text, from: endpoint, namespace: namespace)
            }
        }.get()
    }

    /// The endpoint a replayed message on `namespace` comes from by default.
    func replaySource(for namespace: String) -> String? {
        if namespace == CastNamespace.receiver || namespace == CastNamespace.multizone { return CastEndpoint.receiver }
        return replay.transports.first ?? app?.transportId
    }

    /// The transports a RECEIVER_STATUS lists (in `status.applications`, or in a body-only status).
    func adoptTransports(of json: JSONValue) {
        let status = json["status"] ?? json
        let listed = status["applications"]?.arrayValue?.compactMap { $0["transportId"]?.stringValue } ?? []
        replay.transports = listed.filter { !$0.isEmpty && $0.utf8.count <= CastEndpoint.maxIDBytes }
    }

    func sendReplayed(_ text: String, from endpoint: String, namespace: String) {
        for connection in connections.values.sorted(by: { $0.number < $1.number }) {
            let senders = connection.sources(connectedTo: endpoint)
            guard !senders.isEmpty else { continue }
            if namespace == CastNamespace.connection {
                // Addressed, like the CLOSE a device sends when it ends a virtual connection;
                // the virtual connection is gone on the device's side too.
                for sender in senders {
                    send(CastMessage(source: endpoint, destination: sender, namespace: namespace, json: text), on: connection)
                    if ConnectionMessage.parse(.string(text)).map({ if case .close = $0 { true } else { false } }) == true {
                        connection.virtualConnections[sender]?.remove(endpoint)
                    }
                }
            } else {
                send(CastMessage(source: endpoint, destination: CastEndpoint.broadcast, namespace: namespace, json: text),
                     on: connection)
            }
        }
    }

    /// True when `endpoint` is a transport a replayed status listed.
    func isReplayTransport(_ endpoint: String) -> Bool { replay.transports.contains(endpoint) }

    /// Answers `message` from the replay, if it has an answer for it: the next one-shot answer
    /// to its type, else the stored GET_STATUS answer. True when it answered.
    func answerFromReplay(_ message: CastMessage, on connection: SenderConnection) -> Bool {
        guard !replay.isEmpty, let header = CastPayloadHeader.parse(message.payload), let type = header.type else {
            return false
        }
        let key = message.namespace + "\u{0}" + type
        var text: String?
        if var queued = replay.answers[key], !queued.isEmpty {
            text = queued.removeFirst()
            replay.answers[key] = queued.isEmpty ? nil : queued
        } else if type == "GET_STATUS" {
            text = replay.statusAnswers[message.namespace]
        }
        guard let text else { return false }
        let answer = Self.withRequestId(header.requestId ?? 0, in: text)
        reply(answer, from: message.destinationID, namespace: message.namespace, to: message.sourceID, on: connection)
        return true
    }

    /// `text` with its top-level `requestId` set to `id` (added after the opening brace when the
    /// message has none); everything else byte for byte, key order included.
    static func withRequestId(_ id: Int, in text: String) -> String {
        let bytes = Array(text.utf8)
        var depth = 0
        var index = 0
        var inString = false
        var stringStart = 0
        var lastTopLevelKey: ArraySlice<UInt8>?
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 1 { lastTopLevelKey = bytes[(stringStart + 1)..<index] }
                }
                index += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                stringStart = index
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
            case UInt8(ascii: ":") where depth == 1 && lastTopLevelKey.map({ Array($0) == Array("requestId".utf8) }) == true:
                // The value: skip blanks, then replace the token up to the next , or }.
                var start = index + 1
                while start < bytes.count, bytes[start] == 0x20 || bytes[start] == 0x09 || bytes[start] == 0x0A || bytes[start] == 0x0D {
                    start += 1
                }
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: ","), bytes[end] != UInt8(ascii: "}") { end += 1 }
                while end > start, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[end - 1]) { end -= 1 }
                return String(decoding: bytes[..<start] + Array(String(id).utf8) + bytes[end...], as: UTF8.self)
            case UInt8(ascii: ","):
                if depth == 1 { lastTopLevelKey = nil }
            default:
                break
            }
            index += 1
        }
        guard let brace = bytes.firstIndex(of: UInt8(ascii: "{")) else { return text }
        let rest = bytes[(brace + 1)...]
        let empty = rest.allSatisfy { [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "}")].contains($0) }
        let inserted = "\"requestId\":\(id)" + (empty ? "" : ",")
        return String(decoding: bytes[...brace] + Array(inserted.utf8) + rest, as: UTF8.self)
    }
}
