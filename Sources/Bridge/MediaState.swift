import CastProtocol
import Foundation

/// Applies RECEIVER_STATUS / MEDIA_STATUS to the device state, emits the events they imply and
/// republishes what changed. Joining a running app's session (CONNECT, media GET_STATUS) is the
/// client's: it does it on every connection, and its statuses arrive here as events.
extension BridgeCore {
    mutating func applyReceiverStatus(_ id: DeviceID, _ status: ReceiverStatus, now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        let oldApp = device.activeApp
        let newApp = status.activeApp
        if device.receiver != status { devices[id]?.receiverUpdatedAt = now }
        devices[id]?.receiver = status
        markAnswered(id, now: now, &out)
        let sessionChanged = oldApp?.sessionId != newApp?.sessionId || oldApp?.appId != newApp?.appId
        if sessionChanged {
            if device.media != nil {
                recordSessionEndCandidate(id, now: now)
                devices[id]?.media = nil
                devices[id]?.mediaUpdatedAt = now
                devices[id]?.positionUpdatedAt = nil
            }
            receiverEvents(id, old: oldApp, new: newApp, now: now, &out)
            out.sessionsChanged = true
        }
        publishDeviceState(id, now: now, &out)
    }

    mutating func applyMediaStatus(_ id: DeviceID, _ statuses: [MediaStatus], now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        let old = device.media
        let oldPosition = device.estimatedPosition(now: now)
        let new: MediaStatus? = statuses.first.map { $0.merged(over: old) }
        if new != old { devices[id]?.mediaUpdatedAt = now }
        if let new, old == nil || old?.currentTime != new.currentTime || old?.playerState != new.playerState
            || old?.playbackRate != new.playbackRate || old?.mediaSessionId != new.mediaSessionId {
            devices[id]?.positionUpdatedAt = now
            devices[id]?.lastPositionPublish = nil
        }
        if new == nil { devices[id]?.positionUpdatedAt = nil }
        devices[id]?.media = new
        mediaEvents(id, old: old, new: new, oldPosition: oldPosition, now: now, &out)
        announceObserved(id, media: new, now: now, &out)
        publishDeviceState(id, now: now, &out)
    }

    /// The device CLOSEd an app transport: that app's session is over. The receiver status that
    /// follows (the client asks for it) tells what runs now.
    mutating func appSessionEnded(_ id: DeviceID, transportId: String, now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id], device.activeApp?.transportId == transportId else { return }
        if device.media != nil {
            recordSessionEndCandidate(id, now: now)
            devices[id]?.media = nil
            devices[id]?.mediaUpdatedAt = now
            devices[id]?.positionUpdatedAt = nil
        }
        publishDeviceState(id, now: now, &out)
    }
}
