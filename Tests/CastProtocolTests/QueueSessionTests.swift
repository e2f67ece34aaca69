import Foundation
import Testing

@testable import CastProtocol

/// The session machine's queue: item metadata fetched with QUEUE_GET_ITEMS in bounded batches,
/// one request at a time, QUEUE_CHANGE and QUEUE_ITEM_IDS merged into the media status. Values
/// only, as in SessionMachineTests.
@Suite struct QueueSessionTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let dmr = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, displayName: "Default Media Receiver",
                                  namespaces: [CastNamespace.media], sessionId: "s1", transportId: "t1")

    func item(_ id: Int, described: Bool = true) -> QueueItem {
        QueueItem(itemId: id, media: described ? MediaInformation(contentId: "http://x/\(id).mp3",
                                                                  metadata: MediaMetadata(title: "Item \(id)")) : nil,
                  autoplay: described ? true : nil)
    }

    /// A queue status listing `ids` by id only (the current item is the first).
    func idsOnly(_ ids: [Int], session: Int = 1) -> MediaStatus {
        MediaStatus(mediaSessionId: session, media: MediaInformation(contentId: "http://x/\(ids.first ?? 0).mp3"),
                    playerState: "PLAYING", currentTime: 0, playbackRate: 1, supportedMediaCommands: 4095,
                    currentItemId: ids.first, items: ids.map { item($0, described: false) }, repeatMode: "REPEAT_OFF")
    }

    func joined() -> CastSessionMachine {
        var m = CastSessionMachine()
        _ = m.connectionAnswered()
        _ = m.receiverStatus(ReceiverStatus(applications: [dmr]), now: t0)
        return m
    }

    func asks(_ actions: [CastSessionMachine.Action]) -> [CastSessionMachine.Action] {
        actions.filter {
            switch $0 {
            case .askQueueItems, .askQueueItemIds: return true
            default: return false
            }
        }
    }

    func published(_ actions: [CastSessionMachine.Action]) -> [DeviceSnapshot] {
        actions.compactMap { if case .publish(let s) = $0 { return s } else { return nil } }
    }

    @Test func itemsListedByIdAreFetchedInBatchesOneRequestAtATime() throws {
        var m = joined()
        let ids = Array(1...45)
        let first = m.mediaStatus(idsOnly(ids), now: t0)
        #expect(asks(first) == [.askQueueItems(transport: "t1", mediaSessionId: 1, itemIds: Array(1...20))])
        // The status is published at once, its items by id only.
        let doc = try #require(published(first).first?.media?.items)
        #expect(doc.map(\.itemId) == ids.map(Optional.some))
        #expect(doc.allSatisfy { $0.media == nil })
        // Another status while the request runs asks nothing more.
        #expect(asks(m.mediaStatus(idsOnly(ids), now: t0.addingTimeInterval(0.1))).isEmpty)
        // The answer fills the items in, the request's end lets the next batch go; the batches
        // are published once, when the last one is in.
        #expect(published(m.queueItems((1...20).map { item($0) })).isEmpty)
        #expect(m.media?.items?.prefix(20).allSatisfy { $0.media?.metadata?.title != nil } == true)
        #expect(m.queueRequestDone(.items(Array(1...20))) == [.askQueueItems(transport: "t1", mediaSessionId: 1, itemIds: Array(21...40))])
        #expect(published(m.queueItems((21...40).map { item($0) })).isEmpty)
        #expect(m.queueRequestDone(.items(Array(21...40))) == [.askQueueItems(transport: "t1", mediaSessionId: 1, itemIds: Array(41...45))])
        let last = published(m.queueItems((41...45).map { item($0) }))
        #expect(last.count == 1)
        #expect(last.first?.media?.items?.map { $0.media?.contentId } == ids.map { "http://x/\($0).mp3" })
        #expect(m.queueRequestDone(.items(Array(41...45))).isEmpty, "everything is known")
    }

    @Test func anItemTheDeviceDoesNotDescribeIsNotAskedAgain() {
        var m = joined()
        _ = m.mediaStatus(idsOnly([1, 2, 3]), now: t0)
        #expect(published(m.queueItems([item(1), item(3)])).isEmpty, "item 2 may still come")
        // Item 2 never came; the request ended: what came is published, nothing is asked again
        // (no loop on a broken device).
        let done = m.queueRequestDone(.items([1, 2, 3]))
        #expect(asks(done).isEmpty)
        #expect(published(done).first?.media?.items?.compactMap { $0.media?.contentId } == ["http://x/1.mp3", "http://x/3.mp3"])
        #expect(asks(m.mediaStatus(idsOnly([1, 2, 3]), now: t0.addingTimeInterval(1))).isEmpty)
        // Until the device says it changed.
        #expect(asks(m.queueChange(QueueChange(changeType: "ITEMS_CHANGE", itemIds: [2])))
                == [.askQueueItems(transport: "t1", mediaSessionId: 1, itemIds: [2])])
    }

    @Test func aFailedRequestLetsTheNextOneGo() {
        var m = joined()
        _ = m.mediaStatus(idsOnly(Array(1...25)), now: t0)
        // Timed out: the batch is given up, the rest is asked.
        #expect(m.queueRequestDone(.items(Array(1...20))) == [.askQueueItems(transport: "t1", mediaSessionId: 1, itemIds: Array(21...25))])
        // A stale completion of something not in flight changes nothing.
        #expect(m.queueRequestDone(.items([99])).isEmpty)
    }

    @Test func queueChangesAreMergedIntoTheOrder() throws {
        var m = joined()
        _ = m.mediaStatus(MediaStatus(mediaSessionId: 1, playerState: "PLAYING", currentItemId: 1,
                                      items: [item(1), item(2), item(3)]), now: t0)
        #expect(asks(m.queueChange(QueueChange(changeType: "INSERT", itemIds: [4], insertBefore: 2)))
                == [.askQueueItems(transport: "t1", mediaSessionId: 1, itemIds: [4])])
        #expect(m.media?.items?.map(\.itemId) == [1, 4, 2, 3])
        _ = m.queueItems([item(4)])
        _ = m.queueRequestDone(.items([4]))
        let removed = try #require(published(m.queueChange(QueueChange(changeType: "REMOVE", itemIds: [2]))).first)
        #expect(removed.media?.items?.map(\.itemId) == [1, 4, 3])
        // A reorder arrives as UPDATE with the whole order.
        _ = m.queueChange(QueueChange(changeType: "UPDATE", itemIds: [3, 1, 4], reorderItemIds: [3]))
        #expect(m.media?.items?.map(\.itemId) == [3, 1, 4])
        #expect(m.media?.items?.allSatisfy { $0.media != nil } == true, "nothing to fetch again")
        // An UPDATE without ids leaves the order unknown: it is asked.
        #expect(asks(m.queueChange(QueueChange(changeType: "UPDATE"))) == [.askQueueItemIds(transport: "t1", mediaSessionId: 1)])
        _ = m.queueItemIds([4, 3])
        #expect(m.queueRequestDone(.itemIds).isEmpty)
        #expect(m.media?.items?.map(\.itemId) == [4, 3])
    }

    @Test func theQueueBelongsToOneMediaSession() {
        var m = joined()
        _ = m.mediaStatus(MediaStatus(mediaSessionId: 1, playerState: "PLAYING", items: [item(1), item(2)]), now: t0)
        // A new media session starts from what it says.
        _ = m.mediaStatus(idsOnly([1, 2], session: 2), now: t0.addingTimeInterval(1))
        #expect(m.media?.items?.allSatisfy { $0.media == nil } == true, "session 1's metadata is not session 2's")
        // Without media, queue messages change nothing.
        _ = m.mediaStatus(nil, now: t0.addingTimeInterval(2))
        #expect(m.queueItemIds([1]).isEmpty)
        #expect(m.queueChange(QueueChange(changeType: "INSERT", itemIds: [9])).isEmpty)
    }

    @Test func aHugeQueueIsBounded() {
        var m = joined()
        let ids = Array(1...5000)
        _ = m.mediaStatus(idsOnly(ids), now: t0)
        #expect(m.media?.items?.count == QueueMetadata.maxItems)
        // Duplicates from a broken device keep their first place.
        _ = m.queueItemIds([1, 2, 1, 3, 2])
        #expect(m.media?.items?.map(\.itemId) == [1, 2, 3])
    }

    @Test func itemMetadataIsBounded() {
        var m = joined()
        _ = m.mediaStatus(idsOnly([1, 2, 3]), now: t0)
        let big = String(repeating: "x", count: QueueMetadata.maxItemBytes)
        // App data that makes an item too large goes; a title that does is not kept at all.
        var heavy = item(1)
        heavy.media?.customData = .object(["blob": .string(big)])
        var huge = item(2)
        huge.media?.metadata?.title = big
        _ = m.queueItems([heavy, huge, item(3)])
        _ = m.queueRequestDone(.items([1, 2, 3]))
        let items = m.media?.items ?? []
        #expect(items.map(\.itemId) == [1, 2, 3])
        #expect(items[0].media?.contentId == "http://x/1.mp3" && items[0].media?.customData == nil)
        #expect(items[1].media == nil, "listed by id only")
        #expect(items[2].media?.metadata?.title == "Item 3")
        #expect(m.queueRequestDone(.items([2])).isEmpty, "not asked again")
        // A queue's metadata has a budget: past it, items stay listed by id.
        var n = joined()
        let ids = Array(1...QueueMetadata.maxItems)
        _ = n.mediaStatus(idsOnly(ids), now: t0)
        let title = String(repeating: "t", count: 2000)
        for batch in stride(from: 0, to: ids.count, by: QueueMetadata.batchSize) {
            let chunk = Array(ids[batch..<min(batch + QueueMetadata.batchSize, ids.count)])
            _ = n.queueItems(chunk.map { id in
                var i = item(id)
                i.media?.metadata?.title = title
                return i
            })
            _ = n.queueRequestDone(.items(chunk))
        }
        let described = n.media?.items?.filter { $0.media != nil }.count ?? 0
        #expect(described > 50 && described < ids.count, "\(described) items described within the budget")
    }

    @Test func queueMessagesParse() throws {
        let items = try MediaResponse.parse(.string(#"{"type":"QUEUE_ITEMS","requestId":4,"items":[{"itemId":2,"media":{"contentId":"http://x/2.mp3"}},{"itemId":"x"},{"media":{}},{"itemId":3,"autoplay":"yes"}]}"#))
        guard case .queueItems(4, let list) = items else { Issue.record("\(items)"); return }
        #expect(list.map(\.itemId) == [2], "items without an id or with wrong types are left out")
        let ids = try MediaResponse.parse(.string(#"{"type":"QUEUE_ITEM_IDS","requestId":5,"itemIds":[1,2,3]}"#))
        #expect(ids == .queueItemIds(requestId: 5, [1, 2, 3]))
        let change = try MediaResponse.parse(.string(#"{"type":"QUEUE_CHANGE","requestId":0,"changeType":"INSERT","itemIds":[7],"insertBefore":"x","sequenceNumber":3}"#))
        #expect(change == .queueChange(requestId: 0, QueueChange(changeType: "INSERT", itemIds: [7], sequenceNumber: 3)))
        // What the simulator sends reads back the same.
        #expect(try MediaResponse.parse(.string(MediaResponse.queueItemIds(requestId: 5, [1, 2, 3]).json())) == ids)
        #expect(try MediaResponse.parse(.string(change.json())) == change)
    }

    @Test func requestsCarryTheirFields() throws {
        func json(_ r: MediaRequest) throws -> JSONValue { try CastJSON.decode(JSONValue.self, from: r.json(requestId: 9)) }
        let insert = try json(.queueInsert(QueueInsertRequest(mediaSessionId: 1, items: [QueueItem(media: MediaInformation(contentId: "u"))],
                                                              insertBefore: 3)))
        #expect(insert["type"] == .string("QUEUE_INSERT"))
        #expect(insert["insertBefore"]?.intValue == 3)
        #expect(insert["items"]?.arrayValue?.first?["itemId"] == nil)
        let edit = try json(.editTracksInfo(EditTracksRequest(mediaSessionId: 1, activeTrackIds: [])))
        #expect(edit["activeTrackIds"] == .array([]), "an empty list turns every track off: it must be sent")
        let update = try json(.queueUpdate(QueueUpdateRequest(mediaSessionId: 1, repeatMode: "REPEAT_ALL")))
        #expect(update["repeatMode"] == .string("REPEAT_ALL"))
        #expect(update["jump"] == nil)
        let get = try json(.queueGetItems(mediaSessionId: 2, itemIds: [4, 5]))
        #expect(get["itemIds"] == .array([.number(4), .number(5)]))
        #expect(try json(.queueReorder(mediaSessionId: 1, itemIds: [2], insertBefore: nil))["type"] == .string("QUEUE_REORDER"))
    }

    @Test func tracksAreReadFromTheMedia() {
        let media = MediaInformation(contentId: "m", tracks: .array([
            .object(["trackId": .number(1), "type": .string("text"), "subtype": .string("subtitles"), "language": .string("en-US")]),
            .object(["trackId": .string("2"), "type": .string("AUDIO")]),
            .object(["trackId": .number(3), "type": .string("AUDIO"), "language": .string("de")]),
        ]))
        let tracks = media.trackList
        #expect(tracks.map(\.trackId) == [1, 3])
        #expect(tracks[0].type == "TEXT" && tracks[0].subtype == "SUBTITLES")
        #expect(tracks[0].matches(language: "en"))
        #expect(tracks[0].matches(language: "EN-us"))
        #expect(!tracks[0].matches(language: "e"))
        #expect(!tracks[1].matches(language: "de-CH"))
    }
}
