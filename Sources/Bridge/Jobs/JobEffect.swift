import CastProtocol
import Foundation

/// What a job (transfer, announcement) wants done, in order; the router carries it out.
enum JobEffect: Sendable {
    /// Run (or queue behind the device's running operation) a step of the job.
    case operation(DeviceID, CastOperationKind, Purpose)
    /// The command's one response.
    case respond(CommandContext, Result<JSONValue, BridgeError>)
    /// `stream_transferred` on the bridge and both devices.
    case transferred(from: DeviceID, to: DeviceID, contentId: String?, position: Double?)
    /// A non-retained event on the device's `event` topic (`type` and its keys; `at` and
    /// `device` are added).
    case event(DeviceID, [String: JSONValue])
    case log(String)
}

/// "Replay the current media": what an announcement restores and a transfer moves by loading —
/// the content with its metadata, the whole queue when the device described every item, the
/// position, the play state, the rate, the active tracks and the app's custom data. One
/// definition for both jobs.
enum MediaReplay {
    /// The operation that plays `media` again from `position` in `appId`, or nil when there is
    /// nothing to replay (no media information). Whether it is worth replaying (`isActive`) is
    /// the caller's question.
    static func operation(_ media: MediaStatus?, position: Double?, appId: String) -> CastOperationKind? {
        guard let media else { return nil }
        if let items = media.items, items.count > 1, items.allSatisfy({ $0.media != nil }) {
            let start = items.firstIndex { $0.itemId == media.currentItemId } ?? 0
            let stripped = items.map { item -> QueueItem in
                var copy = item
                copy.itemId = nil
                return copy
            }
            return .queueLoad(QueueLoadRequest(items: stripped, startIndex: start, repeatMode: media.repeatMode ?? "REPEAT_OFF",
                                               currentTime: position), appId: appId)
        }
        guard let info = media.effectiveMedia else { return nil }
        return .load(LoadRequest(media: info, autoplay: media.playerState != "PAUSED", currentTime: position,
                                 playbackRate: media.playbackRate, activeTrackIds: media.activeTrackIds,
                                 customData: media.customData), appId: appId)
    }
}
