import CastProtocol
import Foundation

/// Exactly one response per command, on `<base>/<dev>/response` (or `bridge/response/<name>`),
/// or on the MQTT 5 Response Topic with the same Correlation Data:
/// `{"command", "id"?, "status": "ok", "data": {...}}` or `{"command", "id"?, "status": "error", "error": {"code", "message"}}`.
enum CommandResponses {
    static func document(_ ctx: CommandContext, _ result: Result<JSONValue, BridgeError>) -> JSONValue {
        var body: [String: JSONValue] = ["command": .string(ctx.name)]
        if let id = ctx.id { body["id"] = id }
        switch result {
        case .success(let data):
            body["status"] = .string("ok")
            body["data"] = data
        case .failure(let error):
            body["status"] = .string("error")
            var fields: [String: JSONValue] = ["code": .string(error.code.rawValue), "message": .string(error.message)]
            if let retry = error.retryAfter { fields["retry_after"] = .number(retry) }
            body["error"] = .object(fields)
        }
        return .object(body)
    }

    /// The `data` of a successful device command, from the state after the answer was applied.
    static func successData(_ command: DeviceCommand, device: DeviceRecord?, result: OperationResult?, now: Date) -> JSONValue {
        guard let device else { return .object([:]) }
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
}
