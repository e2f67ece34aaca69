import CastProtocol
import Foundation

// The queue and track messages of a simulated device's media namespace: QUEUE_INSERT,
// QUEUE_REMOVE, QUEUE_REORDER, a QUEUE_UPDATE shuffle, QUEUE_GET_ITEM_IDS, QUEUE_GET_ITEMS and
// EDIT_TRACKS_INFO. An edit is answered with MEDIA_STATUS (listing the queue by item ids only) to
// the sender, the same status broadcast, and a QUEUE_CHANGE broadcast, as a receiver does.
extension SimulatedDevice {
    /// Most items one QUEUE_GET_ITEMS may ask.
    static let maxItemsPerRequest = 100

    /// The media message types this file answers.
    static let queueMessageTypes: Set<String> = ["QUEUE_INSERT", "QUEUE_REMOVE", "QUEUE_REORDER", "QUEUE_GET_ITEM_IDS",
                                                 "QUEUE_GET_ITEMS", "EDIT_TRACKS_INFO"]

    /// Where the answers of one media request go.
    struct MediaReplyContext: Sendable {
        var requestId: Int
        var endpoint: String
        var source: String
        var connection: SenderConnection
        var now: Double
    }

    /// Handles `type` on the current media session; false when it is not one of this file's.
    func handleQueueMessage(_ type: String, _ json: JSONValue, session: MediaSession, _ c: MediaReplyContext) -> Bool {
        var session = session
        let change: QueueChange
        do throws(MediaSession.EditError) {
            switch type {
            case "QUEUE_GET_ITEM_IDS":
                let ids = session.items.compactMap(\.itemId)
                reply(MediaResponse.queueItemIds(requestId: c.requestId, ids).json(), from: c.endpoint,
                      namespace: CastNamespace.media, to: c.source, on: c.connection)
                return true
            case "QUEUE_GET_ITEMS":
                guard let wanted = json["itemIds"]?.arrayValue?.compactMap(\.intValue), !wanted.isEmpty,
                      wanted.count <= Self.maxItemsPerRequest else { throw .invalidParams }
                // Unknown ids are left out of the answer.
                let items = wanted.compactMap { id in session.items.first { $0.itemId == id } }
                reply(MediaResponse.queueItems(requestId: c.requestId, items).json(), from: c.endpoint,
                      namespace: CastNamespace.media, to: c.source, on: c.connection)
                return true
            case "QUEUE_INSERT":
                let items = MediaSession.decode([QueueItem].self, from: json["items"]) ?? []
                let ids = try session.insert(items, before: json["insertBefore"]?.intValue,
                                             currentItemIndex: json["currentItemIndex"]?.intValue, at: c.now)
                change = QueueChange(changeType: "INSERT", itemIds: ids, insertBefore: json["insertBefore"]?.intValue)
            case "QUEUE_REMOVE":
                let ids = json["itemIds"]?.arrayValue?.compactMap(\.intValue) ?? []
                if try session.remove(ids, at: c.now) == .empty {
                    media = nil
                    let ended = session.idleStatus(reason: "FINISHED", at: c.now)
                    answer(MediaResponse.status(requestId: c.requestId, [ended]).json(), c,
                           broadcasts: [MediaResponse.status(requestId: 0, [ended]).json()])
                    return true
                }
                change = QueueChange(changeType: "REMOVE", itemIds: ids)
            case "QUEUE_REORDER":
                let ids = json["itemIds"]?.arrayValue?.compactMap(\.intValue) ?? []
                try session.reorder(ids, before: json["insertBefore"]?.intValue, at: c.now)
                change = QueueChange(changeType: "UPDATE", itemIds: session.items.compactMap(\.itemId), reorderItemIds: ids)
            case "EDIT_TRACKS_INFO":
                try session.editTracks(activeTrackIds: json["activeTrackIds"]?.arrayValue?.compactMap(\.intValue),
                                       language: json["language"]?.stringValue,
                                       enableTextTracks: json["enableTextTracks"]?.boolValue,
                                       textTrackStyle: json["textTrackStyle"])
                media = session
                let status = MediaResponse.status(requestId: c.requestId, [session.status(at: c.now)]).json()
                answer(status, c, broadcasts: [MediaResponse.status(requestId: 0, [session.status(at: c.now)]).json()])
                return true
            default:
                return false
            }
        } catch {
            guard case .invalid(let reason) = error else { return true }
            let body = MediaResponse.error(MediaError(type: "INVALID_REQUEST", requestId: c.requestId, reason: reason)).json()
            reply(body, from: c.endpoint, namespace: CastNamespace.media, to: c.source, on: c.connection)
            return true
        }
        media = session
        answerQueueEdit(session, change, c)
        return true
    }

    /// A QUEUE_UPDATE with `shuffle: true` (and no jump): the queue in a new order.
    func shuffleQueue(_ session: MediaSession, _ c: MediaReplyContext) {
        var session = session
        session.shuffle()
        media = session
        answerQueueEdit(session, QueueChange(changeType: "UPDATE", itemIds: session.items.compactMap(\.itemId)), c)
    }

    /// MEDIA_STATUS to the sender, then the status and the QUEUE_CHANGE broadcast.
    func answerQueueEdit(_ session: MediaSession, _ change: QueueChange, _ c: MediaReplyContext) {
        queueChangeCounter += 1
        var change = change
        change.sequenceNumber = queueChangeCounter
        let status = session.status(at: c.now)
        answer(MediaResponse.status(requestId: c.requestId, [status]).json(), c,
               broadcasts: [MediaResponse.status(requestId: 0, [status]).json(),
                            MediaResponse.queueChange(requestId: 0, change).json()])
    }

    /// The reply, then the broadcasts, in this order, after the reply latency.
    private func answer(_ json: String, _ c: MediaReplyContext, broadcasts: [String]) {
        later(replyDelay) {
            self.send(CastMessage(source: c.endpoint, destination: c.source, namespace: CastNamespace.media, json: json),
                      on: c.connection)
            for body in broadcasts { self.broadcast(from: c.endpoint, namespace: CastNamespace.media, json: body) }
        }
    }
}
