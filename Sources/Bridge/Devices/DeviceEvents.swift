import CastProtocol
import Foundation

/// Non-retained events on `<dev>/event` and `bridge/event`: `{"type", "at", ...}`.
extension BridgeCore {
    mutating func publishDeviceEvent(_ id: DeviceID, _ fields: [String: JSONValue], now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        var body = fields
        body["at"] = .time(now)
        body["device"] = .string(device.topic)
        out.publish(Publication(topic: topics.event(device.topic), payload: JSONOutput.bytes(.object(body)), retain: false))
    }

    mutating func publishBridgeEvent(_ fields: [String: JSONValue], now: Date, _ out: inout BridgeOutput) {
        var body = fields
        body["at"] = .time(now)
        out.publish(Publication(topic: topics.bridgeEvent, payload: JSONOutput.bytes(.object(body)), retain: false))
    }

    /// session_ended / session_started, from a change of the running app's session.
    mutating func sessionEvents(_ change: DeviceChange, now: Date, _ out: inout BridgeOutput) {
        let id = change.id
        if let old = change.oldApp {
            publishDeviceEvent(id, ["type": .string("session_ended"), "app_id": .string(old.appId),
                                    "app_name": .str(old.displayName), "session_id": .str(old.sessionId)], now: now, &out)
        }
        if let new = change.newApp {
            if change.oldApp == nil, sessions.consumeRestored(id, new) { return }
            publishDeviceEvent(id, ["type": .string("session_started"), "app_id": .string(new.appId),
                                    "app_name": .str(new.displayName), "session_id": .str(new.sessionId),
                                    "launched_from_cloud": .flag(new.launchedFromCloud)], now: now, &out)
        }
    }

    /// media_loaded, media_finished, error — and what a transfer observer needs to know.
    mutating func mediaEvents(_ change: DeviceChange, now: Date, _ out: inout BridgeOutput) {
        let id = change.id
        guard let new = change.newMedia else { return }
        let old = change.oldMedia
        let contentId = new.effectiveMedia?.contentId ?? ""
        let oldContent = old?.effectiveMedia?.contentId ?? ""
        if new.isActive, old?.mediaSessionId != new.mediaSessionId || oldContent != contentId {
            publishDeviceEvent(id, ["type": .string("media_loaded"), "content_id": .string(contentId),
                                    "title": .str(new.effectiveMedia?.metadata?.title),
                                    "media_session_id": .int(new.mediaSessionId)], now: now, &out)
            if let seen = transfers.mediaStarted(on: id, contentId: contentId, position: registry[id]?.position(at: now), now: now),
               registry[seen.from] != nil {
                publishTransferred(from: seen.from, to: id, contentId: contentId, position: seen.position, now: now, &out)
            }
        }
        let becameIdle = new.playerState == "IDLE" && (old?.playerState != "IDLE" || old?.idleReason != new.idleReason)
        guard becameIdle else { return }
        switch new.idleReason {
        case "FINISHED":
            publishDeviceEvent(id, ["type": .string("media_finished"), "content_id": .str(contentId.isEmpty ? nil : contentId),
                                    "media_session_id": .int(new.mediaSessionId)], now: now, &out)
        case "ERROR":
            publishDeviceEvent(id, ["type": .string("error"), "message": .string("playback stopped with an error"),
                                    "content_id": .str(contentId.isEmpty ? nil : contentId)], now: now, &out)
        case "INTERRUPTED":
            if let old, !oldContent.isEmpty {
                transfers.recordCandidate(id, contentId: oldContent, position: change.oldPosition ?? new.currentTime ?? old.currentTime,
                                          now: now)
            }
        default: break
        }
    }

    /// `stream_transferred` on the bridge and on both devices.
    mutating func publishTransferred(from: DeviceID, to: DeviceID, contentId: String?, position: Double?, now: Date,
                                     _ out: inout BridgeOutput) {
        let fields: [String: JSONValue] = ["type": .string("stream_transferred"), "from": .string(registry.topicName(from)),
                                           "to": .string(registry.topicName(to)), "content_id": .str(contentId),
                                           "position": .num(position)]
        publishBridgeEvent(fields, now: now, &out)
        publishDeviceEvent(from, fields, now: now, &out)
        publishDeviceEvent(to, fields, now: now, &out)
    }
}
