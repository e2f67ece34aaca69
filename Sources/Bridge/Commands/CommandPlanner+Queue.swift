import CastProtocol

/// `tracks` and `queue` against the device's media when their turn comes: a media session, the
/// receiver's `supportedMediaCommands` bits, track ids and languages the media has, item ids the
/// queue has, and — for edits of the items — a queue the bridge may edit.
extension CommandPlanner {
    /// The media session a media command needs (app, session) or why there is none.
    static func mediaSession(_ device: DeviceRecord) -> Result<(MediaStatus, Int), BridgeError> {
        guard device.activeApp != nil else {
            return .failure(BridgeError(.noApp, "no app is running on \(device.topic); use load to play something"))
        }
        guard let media = device.media, let session = media.mediaSessionId else {
            return .failure(BridgeError(.noMediaSession, "\(device.topic) has no media session; use load to play something"))
        }
        return .success((media, session))
    }

    /// `not_supported` when the receiver reports its commands and none of `bits` is among them.
    static func require(_ bits: MediaCommands, _ what: String, _ media: MediaStatus, _ device: DeviceRecord) -> BridgeError? {
        guard media.supportedMediaCommands != nil, media.commands.intersection(bits).isEmpty else { return nil }
        return BridgeError(.notSupported, "the receiver on \(device.topic) does not support \(what)")
    }

    static func tracksPlan(_ command: TracksCommand, device: DeviceRecord) -> Result<MediaRequest, BridgeError> {
        let media: MediaStatus, session: Int
        switch mediaSession(device) {
        case .failure(let e): return .failure(e)
        case .success(let (m, s)): (media, session) = (m, s)
        }
        if let e = require(.editTracks, "editing tracks", media, device) { return .failure(e) }
        let tracks = media.effectiveMedia?.trackList ?? []
        var request = EditTracksRequest(mediaSessionId: session, textTrackStyle: command.textStyle)
        guard command.selectsTracks else { return .success(.editTracksInfo(request)) }
        guard !tracks.isEmpty else {
            return .failure(.invalid("the media on \(device.topic) has no tracks"))
        }
        func listing(_ type: String?) -> String {
            tracks.filter { type == nil || $0.type == type }
                .map { "\($0.trackId) (\($0.type.lowercased())\($0.language.map { " \($0)" } ?? ""))" }.joined(separator: ", ")
        }
        var active = media.activeTrackIds ?? []
        if let ids = command.active {
            if let unknown = ids.first(where: { id in !tracks.contains { $0.trackId == id } }) {
                return .failure(.invalid("the media has no track \(unknown); its tracks are \(listing(nil))"))
            }
            active = ids
        }
        let textIds = Set(tracks.filter { $0.type == "TEXT" }.map(\.trackId))
        switch command.subtitles {
        case nil: break
        case .off?: active.removeAll { textIds.contains($0) }
        case .language(let language)?:
            guard let track = tracks.first(where: { $0.type == "TEXT" && $0.matches(language: language) }) else {
                let have = listing("TEXT")
                return .failure(.invalid("the media has no subtitles in \(language)" + (have.isEmpty ? "" : "; text tracks: \(have)")))
            }
            active = active.filter { !textIds.contains($0) } + [track.trackId]
        }
        if let language = command.audio {
            guard let track = tracks.first(where: { $0.type == "AUDIO" && $0.matches(language: language) }) else {
                let have = listing("AUDIO")
                return .failure(.invalid("the media has no audio track in \(language)" + (have.isEmpty ? "" : "; audio tracks: \(have)")))
            }
            let audioIds = Set(tracks.filter { $0.type == "AUDIO" }.map(\.trackId))
            active = active.filter { !audioIds.contains($0) } + [track.trackId]
        }
        request.activeTrackIds = active
        return .success(.editTracksInfo(request))
    }

    /// - Parameter ownsQueue: the running app's queue is one the bridge may edit: the Default
    ///   Media Receiver's, or that of an app session the bridge's own `load` started.
    static func queuePlan(_ command: QueueCommand, device: DeviceRecord, ownsQueue: Bool) -> Result<MediaRequest, BridgeError> {
        let media: MediaStatus, session: Int
        switch mediaSession(device) {
        case .failure(let e): return .failure(e)
        case .success(let (m, s)): (media, session) = (m, s)
        }
        // The queue as the device reported it (a single LOAD is a queue of its one item).
        let ids = media.items?.compactMap(\.itemId) ?? media.currentItemId.map { [$0] } ?? []
        guard !ids.isEmpty else {
            return .failure(BridgeError(.noMediaSession, "\(device.topic) has no queue; load one with {\"queue\": [...]}"))
        }
        if command.editsItems, !ownsQueue, let app = device.activeApp {
            return .failure(BridgeError(.invalidPlayerState,
                "the queue on \(device.topic) belongs to \(app.displayName ?? app.appId), which the bridge did not start; "
                + "the bridge edits only the Default Media Receiver's queue or one its own load started "
                + "(jump, repeat and shuffle work; load replaces the app)"))
        }
        func unknown(_ id: Int) -> BridgeError {
            .invalid("the queue on \(device.topic) has no item \(id); its items are \(ids.prefix(50).map(String.init).joined(separator: ", "))")
        }
        // Editing the queue needs no QUEUE_NEXT / QUEUE_PREV bit: real receivers list those only
        // while a next or previous item exists, and a single LOAD is a queue of one that takes
        // QUEUE_INSERT (Home Assistant's cast integration sends it whatever the bits say). A
        // receiver that has no queue answers the request with its own error.
        switch command {
        case .insert(let items, let position):
            var before: Int?
            switch position {
            case .end: before = nil
            case .before(let id):
                guard ids.contains(id) else { return .failure(unknown(id)) }
                before = id
            case .next:
                // Right after the current item: before the one that follows it (nil when it is last).
                if let current = media.currentItemId, let index = ids.firstIndex(of: current), index + 1 < ids.count {
                    before = ids[index + 1]
                }
            }
            return .success(.queueInsert(QueueInsertRequest(mediaSessionId: session, items: items, insertBefore: before)))
        case .remove(let remove):
            if let id = remove.first(where: { !ids.contains($0) }) { return .failure(unknown(id)) }
            return .success(.queueRemove(mediaSessionId: session, itemIds: remove))
        case .reorder(let move, let before):
            if let id = (move + (before.map { [$0] } ?? [])).first(where: { !ids.contains($0) }) { return .failure(unknown(id)) }
            return .success(.queueReorder(mediaSessionId: session, itemIds: move, insertBefore: before))
        case .jump(let id):
            guard ids.contains(id) else { return .failure(unknown(id)) }
            return .success(.queueUpdate(QueueUpdateRequest(mediaSessionId: session, currentItemId: id)))
        case .jumpBy(let n):
            if let e = require(n > 0 ? .queueNext : .queuePrev, n > 0 ? "skipping forward" : "going back", media, device) {
                return .failure(e)
            }
            return .success(.queueUpdate(QueueUpdateRequest(mediaSessionId: session, jump: n)))
        case .repeatMode(let mode):
            let bits: MediaCommands
            switch mode {
            case "REPEAT_SINGLE": bits = .queueRepeatOne
            case "REPEAT_ALL_AND_SHUFFLE": bits = [.queueShuffle]
            case "REPEAT_ALL": bits = .queueRepeatAll
            default: bits = [.queueRepeatAll, .queueRepeatOne]
            }
            if let e = require(bits, "this repeat mode", media, device) { return .failure(e) }
            if mode == "REPEAT_ALL_AND_SHUFFLE", let e = require(.queueRepeatAll, "this repeat mode", media, device) {
                return .failure(e)
            }
            return .success(.queueUpdate(QueueUpdateRequest(mediaSessionId: session, repeatMode: mode)))
        case .shuffle:
            if let e = require(.queueShuffle, "shuffling", media, device) { return .failure(e) }
            return .success(.queueUpdate(QueueUpdateRequest(mediaSessionId: session, shuffle: true)))
        }
    }
}
