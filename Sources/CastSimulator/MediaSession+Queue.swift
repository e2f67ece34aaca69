import CastProtocol

/// The queue operations and track editing of a simulated media session, as the Default Media
/// Receiver does them: QUEUE_INSERT, QUEUE_REMOVE, QUEUE_REORDER, a QUEUE_UPDATE shuffle and
/// EDIT_TRACKS_INFO. Each refuses what a receiver refuses (an unknown item or track id, an item
/// that already has an id) with `invalidParams`, and keeps the current item playing unless asked.
extension MediaSession {
    /// A queue of a session is at most this long (a receiver has a limit too).
    static let maxQueueItems = 1000

    enum EditError: Error, Equatable {
        /// INVALID_REQUEST with this reason.
        case invalid(String)
        static let invalidParams = EditError.invalid("INVALID_PARAMS")
    }

    /// What a removal left.
    enum RemoveOutcome: Equatable {
        /// The current item is still there (or another one plays now).
        case playing
        /// Nothing is left in the queue.
        case empty
    }

    /// QUEUE_INSERT: new items (without ids) before `before` or at the end; with
    /// `currentItemIndex` (an index into `newItems`) that item plays at once. Returns the new ids.
    mutating func insert(_ newItems: [QueueItem], before: Int?, currentItemIndex: Int?, at now: Double) throws(EditError) -> [Int] {
        guard !newItems.isEmpty, items.count + newItems.count <= Self.maxQueueItems,
              newItems.allSatisfy({ $0.itemId == nil && $0.media != nil }) else { throw .invalidParams }
        if let currentItemIndex, !newItems.indices.contains(currentItemIndex) { throw .invalidParams }
        var at = items.count
        if let before {
            guard let index = items.firstIndex(where: { $0.itemId == before }) else { throw .invalidParams }
            at = index
        }
        let currentId = currentItem?.itemId
        var added = newItems
        for index in added.indices {
            added[index].itemId = nextItemId
            nextItemId += 1
        }
        items.insert(contentsOf: added, at: at)
        isQueue = true
        follow(currentId)
        if let currentItemIndex {
            let item = added[currentItemIndex]
            if let index = items.firstIndex(where: { $0.itemId == item.itemId }) {
                start(index: index, position: item.startTime ?? 0, playing: item.autoplay ?? true, at: now)
            }
        }
        return added.compactMap(\.itemId)
    }

    /// QUEUE_REMOVE: every id must be in the queue. When the current item goes, the next one that
    /// stays plays from its start.
    mutating func remove(_ ids: [Int], at now: Double) throws(EditError) -> RemoveOutcome {
        let gone = Set(ids)
        guard !gone.isEmpty, gone.allSatisfy({ id in items.contains { $0.itemId == id } }) else { throw .invalidParams }
        let current = currentItem?.itemId
        let following = items[currentIndex...].first { !gone.contains($0.itemId ?? -1) }?.itemId
        items.removeAll { gone.contains($0.itemId ?? -1) }
        isQueue = true
        guard !items.isEmpty else { return .empty }
        if let current, !gone.contains(current) {
            follow(current)
        } else {
            let index = following.flatMap { id in items.firstIndex { $0.itemId == id } } ?? 0
            start(index: index, position: items[index].startTime ?? 0, playing: playerState == "PLAYING", at: now)
        }
        return .playing
    }

    /// QUEUE_REORDER: `ids` move, in their order, before `before` (at the end without it).
    mutating func reorder(_ ids: [Int], before: Int?, at now: Double) throws(EditError) {
        let moving = Set(ids)
        guard !ids.isEmpty, moving.count == ids.count,
              ids.allSatisfy({ id in items.contains { $0.itemId == id } }) else { throw .invalidParams }
        if let before, moving.contains(before) || !items.contains(where: { $0.itemId == before }) { throw .invalidParams }
        let current = currentItem?.itemId
        let moved = ids.compactMap { id in items.first { $0.itemId == id } }
        items.removeAll { moving.contains($0.itemId ?? -1) }
        let at = before.flatMap { id in items.firstIndex { $0.itemId == id } } ?? items.count
        items.insert(contentsOf: moved, at: at)
        isQueue = true
        follow(current)
    }

    /// A QUEUE_UPDATE shuffle: the items in a new order (the current one keeps playing).
    mutating func shuffle() {
        let current = currentItem?.itemId
        items.shuffle()
        isQueue = true
        follow(current)
    }

    /// EDIT_TRACKS_INFO: active track ids (each must be a track of the media), a text language
    /// (the first text track in it becomes the active text track), text tracks on or off, and a
    /// text track style.
    mutating func editTracks(activeTrackIds ids: [Int]?, language: String?, enableTextTracks: Bool?,
                             textTrackStyle: JSONValue?) throws(EditError) {
        let tracks = media?.trackList ?? []
        guard ids != nil || language != nil || enableTextTracks != nil || textTrackStyle != nil else { throw .invalidParams }
        var active = activeTrackIds ?? []
        if let ids {
            guard ids.allSatisfy({ id in tracks.contains { $0.trackId == id } }) else { throw .invalidParams }
            active = ids
        }
        let textIds = Set(tracks.filter { $0.type == "TEXT" }.map(\.trackId))
        if let language {
            guard let track = tracks.first(where: { $0.type == "TEXT" && $0.matches(language: language) }) else {
                throw .invalid("LANGUAGE_NOT_SUPPORTED")
            }
            active = active.filter { !textIds.contains($0) } + [track.trackId]
        }
        if enableTextTracks == false { active.removeAll { textIds.contains($0) } }
        activeTrackIds = active
        if let textTrackStyle {
            guard textTrackStyle.objectValue != nil else { throw .invalidParams }
            items[currentIndex].media?.textTrackStyle = textTrackStyle
        }
    }

    /// Keeps `currentIndex` on the item with `id` after the items moved.
    private mutating func follow(_ id: Int?) {
        guard let id, let index = items.firstIndex(where: { $0.itemId == id }) else { return }
        currentIndex = index
    }
}
