import CastProtocol
import Foundation

/// Exactly one response per command, on `<base>/<dev>/response` (or `bridge/response/<name>`),
/// or on the MQTT 5 Response Topic with the same Correlation Data:
/// `{"command", "id"?, "status": "ok", "data": {...}}` or `{"command", "id"?, "status": "error", "error": {"code", "message"}}`.
extension BridgeCore {
    static func responseDocument(_ ctx: CommandContext, _ result: Result<JSONValue, BridgeError>) -> JSONValue {
        var body: [String: JSONValue] = ["command": .string(ctx.name)]
        if let id = ctx.id { body["id"] = id }
        switch result {
        case .success(let data):
            body["status"] = .string("ok")
            body["data"] = data
        case .failure(let error):
            body["status"] = .string("error")
            body["error"] = .object(["code": .string(error.code.rawValue), "message": .string(error.message)])
        }
        return .object(body)
    }

    func respond(_ ctx: CommandContext, _ result: Result<JSONValue, BridgeError>, _ out: inout BridgeOutput) {
        let doc = Self.responseDocument(ctx, result)
        out.publish(Publication(topic: ctx.responseTopic, payload: JSONOutput.bytes(doc), retain: false,
                                correlationData: ctx.correlationData))
        let code: String
        switch result {
        case .success: code = "ok"
        case .failure(let e): code = e.code.rawValue
        }
        out.outcomes.append(CommandOutcome(command: ctx.name, code: code, receivedAt: ctx.receivedAt))
        // `busy` comes in bursts; it is logged once per burst where it is decided.
        if case .failure(let e) = result, e.code != .busy { out.logs.append("\(ctx.name) failed: \(e)") }
    }

    /// The `data` of a successful device command, from the state after the answer was applied.
    func successData(_ command: DeviceCommand, device id: DeviceID, result: OperationResult?, now: Date) -> JSONValue {
        guard let device = record(id) else { return .object([:]) }
        let volume = device.receiver?.volume
        switch command {
        case .volume, .mute:
            return .object(["level": .num(volume?.level), "muted": .flag(volume?.muted)])
        case .launch, .quit:
            let app = device.activeApp
            return .object(["app_id": .str(app?.appId), "session_id": .str(app?.sessionId), "state": .string(device.stateWord)])
        case .send(let send):
            var data: [String: JSONValue] = ["namespace": .string(send.namespace)]
            if case .appMessage(let payload)? = result {
                switch payload {
                case .string(let text): data["data"] = JSONOutput.parse(Array(text.utf8)) ?? .string(text)
                case .binary(let bytes):
                    data["data"] = .string(Data(bytes).base64EncodedString())
                    data["encoding"] = .string("base64")
                }
            }
            return .object(data)
        case .load:
            return .object(["state": .string(device.stateWord), "media_session_id": .int(device.media?.mediaSessionId),
                            "content_id": .str(device.media?.effectiveMedia?.contentId),
                            "position": .num(device.position(at: now))])
        case .tracks:
            return .object(["state": .string(device.stateWord), "position": .num(device.position(at: now)),
                            "active_tracks": .array((device.media?.activeTrackIds ?? []).map { .int($0) })])
        case .queue:
            return .object(["state": .string(device.stateWord), "position": .num(device.position(at: now)),
                            "current_item_id": .int(device.media?.currentItemId),
                            "item_ids": .array((device.media?.items ?? []).map { .int($0.itemId) })])
        default:
            return .object(["state": .string(device.stateWord), "position": .num(device.position(at: now))])
        }
    }

    /// A single-operation command finished.
    mutating func finishCommand(_ ctx: CommandContext, _ command: DeviceCommand, device: DeviceID,
                                _ result: Result<OperationResult, BridgeError>, now: Date, _ out: inout BridgeOutput) {
        var data: JSONValue?
        if case .success(let value) = result { data = successData(command, device: device, result: value, now: now) }
        if case .load = command {
            // Which app the load replaced (another app than the load's, e.g. Spotify), when it did.
            let replaced = loads.finished(device, device: registry[device], ok: data != nil)
            // The queue the load made the bridge's is saved with the sessions (state_dir).
            if data != nil { out.sessionsChanged = true }
            if case .object(var fields)? = data {
                fields["replaced"] = BridgeLoads.document(replaced)
                data = .object(fields)
            }
        }
        switch result {
        case .success:
            respond(ctx, .success(data ?? .object([:])), &out)
        case .failure(let error):
            if case .load(let load) = command {
                let contentId = load.load?.media.contentId ?? load.queue?.items.first?.media?.contentId
                publishDeviceEvent(device, ["type": .string("load_failed"), "content_id": .str(contentId),
                                            "error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)])],
                                   now: now, &out)
            }
            respond(ctx, .failure(error), &out)
        }
    }
}
