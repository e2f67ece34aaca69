import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Issue #18 in the core: `tracks` and `queue` parsed, planned against the media (ids, languages,
/// the receiver's bits, the queue's owner) and answered; the media document's tracks and queue;
/// `load` with tracks and the app it replaced; `bridge/request/log_level`.
@Suite struct TracksAndQueueTests {
    let responseTopic = "cast2mqtt/living_room_tv/response"
    let all = 16383 | 262_144  // every bit up to playback_rate, and stream_transfer

    func command(_ name: String) -> String { "cast2mqtt/living_room_tv/command/\(name)" }

    func single(_ out: BridgeOutput) -> CastOperation? {
        #expect(out.operations.count == 1, "\(out.publications)")
        return out.operations.first
    }

    func error(_ out: BridgeOutput) -> String? { out.json(responseTopic)?["error"]?["code"]?.stringValue }

    static let tracks: JSONValue = .array([
        .object(["trackId": .number(1), "type": .string("TEXT"), "subtype": .string("SUBTITLES"), "language": .string("en-US"),
                 "name": .string("English"), "trackContentId": .string("http://x/en.vtt")]),
        .object(["trackId": .number(2), "type": .string("TEXT"), "subtype": .string("SUBTITLES"), "language": .string("fr"),
                 "trackContentId": .string("http://x/fr.vtt")]),
        .object(["trackId": .number(3), "type": .string("AUDIO"), "language": .string("en")]),
        .object(["trackId": .number(4), "type": .string("AUDIO"), "language": .string("de")]),
        .object(["trackId": .number(5), "type": .string("VIDEO")]),
    ])

    func movie(active: [Int] = [3, 5], commands: Int? = nil) -> MediaStatus {
        var status = playing(commands: commands ?? all)
        status.media?.tracks = Self.tracks
        status.activeTrackIds = active
        return status
    }

    func queue(_ ids: [Int], current: Int, commands: Int? = nil) -> MediaStatus {
        var status = playing(commands: commands ?? all)
        status.currentItemId = current
        status.items = ids.map { QueueItem(itemId: $0, media: MediaInformation(contentId: "http://x/\($0).mp3",
                                                                               metadata: MediaMetadata(title: "Item \($0)"))) }
        status.repeatMode = "REPEAT_OFF"
        return status
    }

    // MARK: - tracks

    @Test func subtitlesAndAudioByLanguage() {
        var h = Harness()
        h.online(media: [movie()])
        func edit(_ payload: String) -> EditTracksRequest? {
            guard case .media(.editTracksInfo(let r))? = single(h.publishSettled(command("tracks"), payload))?.kind else { return nil }
            return r
        }
        // "en" matches en-US; audio and video stay on.
        #expect(edit("en")?.activeTrackIds == [3, 5, 1])
        #expect(edit(#"{"subtitles": "off"}"#)?.activeTrackIds == [3, 5])
        #expect(edit("off")?.activeTrackIds == [3, 5])
        // The audio track is replaced, the others stay.
        #expect(edit(#"{"audio": "de"}"#)?.activeTrackIds == [5, 4])
        #expect(edit(#"{"active": [2, 4]}"#)?.activeTrackIds == [2, 4])
        #expect(edit(#"{"active": []}"#)?.activeTrackIds == [])
        let styled = edit(##"{"text_style": {"font_scale": 1.5, "foreground_color": "#ffff00", "edge_type": "drop_shadow"}}"##)
        #expect(styled?.activeTrackIds == nil, "a style alone leaves the tracks as they are")
        #expect(styled?.textTrackStyle == .object(["fontScale": .number(1.5), "foregroundColor": .string("#FFFF00FF"),
                                                    "edgeType": .string("DROP_SHADOW")]))
    }

    @Test func unknownTracksAndLanguagesAreInvalid() {
        var h = Harness()
        h.online(media: [movie()])
        for payload in ["de", #"{"audio": "ja"}"#, #"{"active": [9]}"#, #"{"subtitles": "en-GB"}"#] {
            let out = h.publishSettled(command("tracks"), payload)
            #expect(out.operations.isEmpty, "\(payload)")
            #expect(error(out) == "invalid_payload", "\(payload)")
        }
        #expect(h.publishSettled(command("tracks"), "de").json(responseTopic)?["error"]?["message"]?.stringValue?.contains("1 (text en-US)") == true)
        // Without the edit_tracks bit.
        var plain = Harness()
        plain.online(media: [movie(commands: 1 | 2)])
        #expect(error(plain.publishSettled(command("tracks"), "en")) == "not_supported")
        // Without tracks.
        var none = Harness()
        none.online(media: [playing(commands: all)])
        #expect(error(none.publishSettled(command("tracks"), "en")) == "invalid_payload")
        // Without media.
        var idle = Harness()
        idle.online(media: [])
        #expect(error(idle.publishSettled(command("tracks"), "en")) == "no_media_session")
    }

    @Test func tracksParseStrictly() {
        let parser = CommandParser()
        func fails(_ payload: String) -> Bool {
            if case .failure(let f) = parser.parse(name: "tracks", payload: Array(payload.utf8)) { return f.error.code == .invalidPayload }
            return false
        }
        for bad in ["", "e", "english language", #"{}"#, #"{"active": [1], "audio": "de"}"#, #"{"active": [1.5]}"#,
                    #"{"active": "1"}"#, #"{"subtitles": "en\"}"}"#, #"{"text_style": {"font_scale": 50}}"#,
                    #"{"text_style": {"foreground_color": "yellow"}}"#, #"{"text_style": {"edge_type": "glow"}}"#,
                    #"{"text_style": {}}"#, #"{"audio": 3}"#, #"{"colour": "red"}"#] {
            #expect(fails(bad), "\(bad)")
        }
        #expect(CommandParser.isLanguageTag("zh-Hant-TW"))
        #expect(!CommandParser.isLanguageTag("e"))
        #expect(!CommandParser.isLanguageTag("en--US"))
    }

    @Test func loadTakesTracks() throws {
        let parser = CommandParser()
        let payload = #"{"url": "http://x/movie.mp4", "tracks": [{"id": 1, "type": "text", "language": "en", "content_id": "http://x/en.vtt", "name": "English"}, {"id": 2, "type": "audio", "language": "de"}], "active_tracks": [1], "text_style": {"font_scale": 1.2}}"#
        guard case .success(let parsed) = parser.parse(name: "load", payload: Array(payload.utf8)),
              case .load(let load) = parsed.command, let request = load.load else { Issue.record("not a load"); return }
        #expect(request.activeTrackIds == [1])
        #expect(request.media.trackList == [MediaTrack(trackId: 1, type: "TEXT", subtype: "SUBTITLES", language: "en", name: "English",
                                                       trackContentId: "http://x/en.vtt", trackContentType: "text/vtt"),
                                            MediaTrack(trackId: 2, type: "AUDIO", language: "de")])
        #expect(request.media.textTrackStyle == .object(["fontScale": .number(1.2)]))
        for bad in [#"{"url": "http://x", "active_tracks": [3]}"#, #"{"url": "http://x", "tracks": [{"id": 1, "type": "text"}]}"#,
                    #"{"url": "http://x", "tracks": [{"id": 1, "type": "audio"}, {"id": 1, "type": "audio"}]}"#,
                    #"{"url": "http://x", "tracks": [{"id": 1, "type": "audio", "subtype": "captions"}]}"#,
                    #"{"queue": [{"url": "http://x"}], "tracks": []}"#] {
            guard case .failure(let f) = parser.parse(name: "load", payload: Array(bad.utf8)) else { Issue.record("accepted \(bad)"); continue }
            #expect(f.error.code == .invalidPayload)
        }
    }

    @Test func theMediaDocumentListsTracks() throws {
        var h = Harness()
        let out = h.online(media: [movie(active: [1, 3])])
        let doc = try #require(out.json("cast2mqtt/living_room_tv/media"))
        #expect(doc["active_tracks"] == .array([.number(1), .number(3)]))
        #expect(doc["tracks"]?.arrayValue?.count == 5)
        #expect(doc["tracks"]?.arrayValue?.first == .object([
            "id": .number(1), "type": .string("text"), "subtype": .string("subtitles"), "language": .string("en-US"),
            "name": .string("English"), "content_id": .string("http://x/en.vtt")]))
        #expect(doc["tracks"]?.arrayValue?.last?["subtype"] == .null)
    }

    // MARK: - queue

    @Test func queueEditsBecomeQueueRequests() {
        var h = Harness()
        h.online(media: [queue([1, 2, 3], current: 1)])
        func kind(_ payload: String) -> CastOperationKind? { single(h.publishSettled(command("queue"), payload))?.kind }
        let item = QueueItem(media: MediaInformation(contentId: "http://x/new.mp3", contentType: "audio/mpeg",
                                                     metadata: MediaMetadata(metadataType: 0, title: "New")),
                             autoplay: true)
        #expect(kind(#"{"insert": [{"url": "http://x/new.mp3", "title": "New"}]}"#)
                == .media(.queueInsert(QueueInsertRequest(mediaSessionId: 1, items: [item]))))
        #expect(kind(#"{"insert": [{"url": "http://x/new.mp3", "title": "New"}], "before": "next"}"#)
                == .media(.queueInsert(QueueInsertRequest(mediaSessionId: 1, items: [item], insertBefore: 2))))
        #expect(kind(#"{"insert": [{"url": "http://x/new.mp3", "title": "New"}], "before": 3}"#)
                == .media(.queueInsert(QueueInsertRequest(mediaSessionId: 1, items: [item], insertBefore: 3))))
        var later = item
        later.autoplay = false
        later.preloadTime = 5
        later.startTime = 10
        #expect(kind(#"{"insert": [{"url": "http://x/new.mp3", "title": "New", "autoplay": false, "preload_time": 5, "start_time": 10}]}"#)
                == .media(.queueInsert(QueueInsertRequest(mediaSessionId: 1, items: [later]))))
        #expect(kind(#"{"remove": [2, 3]}"#) == .media(.queueRemove(mediaSessionId: 1, itemIds: [2, 3])))
        #expect(kind(#"{"reorder": [3], "before": 1}"#) == .media(.queueReorder(mediaSessionId: 1, itemIds: [3], insertBefore: 1)))
        #expect(kind(#"{"jump": 3}"#) == .media(.queueUpdate(QueueUpdateRequest(mediaSessionId: 1, currentItemId: 3))))
        #expect(kind(#"{"jump_by": -1}"#) == .media(.queueUpdate(QueueUpdateRequest(mediaSessionId: 1, jump: -1))))
        #expect(kind(#"{"repeat": "all"}"#) == .media(.queueUpdate(QueueUpdateRequest(mediaSessionId: 1, repeatMode: "REPEAT_ALL"))))
        #expect(kind(#"{"repeat": "one"}"#) == .media(.queueUpdate(QueueUpdateRequest(mediaSessionId: 1, repeatMode: "REPEAT_SINGLE"))))
        #expect(kind(#"{"shuffle": true}"#) == .media(.queueUpdate(QueueUpdateRequest(mediaSessionId: 1, shuffle: true))))
    }

    @Test func insertNextOnTheLastItemGoesToTheEnd() {
        var h = Harness()
        h.online(media: [queue([1, 2], current: 2)])
        guard case .media(.queueInsert(let r))? = single(h.publishSettled(command("queue"), #"{"insert": [{"url": "http://x/n.mp3"}], "before": "next"}"#))?.kind
        else { Issue.record("not an insert"); return }
        #expect(r.insertBefore == nil)
        // A single LOAD is a queue of its one item, and takes an insert although a real receiver
        // lists no QUEUE_NEXT / QUEUE_PREV for it (Home Assistant's `enqueue: add`).
        var one = Harness()
        var single = playing(commands: 1 | 2 | 4 | 8 | 4096)
        single.currentItemId = 1
        one.online(media: [single])
        guard case .media(.queueInsert(let appended))? = self.single(one.publishSettled(command("queue"),
            #"{"insert": [{"url": "http://x/n.mp3"}], "before": "next"}"#))?.kind
        else { Issue.record("no insert onto the single item"); return }
        #expect(appended.insertBefore == nil && appended.items.count == 1)
    }

    @Test func queueErrors() {
        var h = Harness()
        h.online(media: [queue([1, 2, 3], current: 1)])
        for payload in [#"{"remove": [9]}"#, #"{"jump": 7}"#, #"{"reorder": [2], "before": 8}"#,
                        #"{"insert": [{"url": "http://x/n.mp3"}], "before": 42}"#] {
            let out = h.publishSettled(command("queue"), payload)
            #expect(out.operations.isEmpty)
            #expect(error(out) == "invalid_payload", "\(payload)")
        }
        #expect(h.publishSettled(command("queue"), #"{"remove": [9]}"#).json(responseTopic)?["error"]?["message"]?.stringValue?
            .contains("1, 2, 3") == true, "the message lists the items there are")
        // Bits: no queue commands at all; no shuffle; no repeat one. Next and previous follow
        // their bits; edits do not (real receivers list QUEUE_NEXT / QUEUE_PREV only while there
        // is a next or previous item): they go out, and a receiver without a queue says so.
        var bare = Harness()
        bare.online(media: [queue([1, 2], current: 1, commands: 1 | 2)])
        for payload in [#"{"shuffle": true}"#, #"{"repeat": "all"}"#, #"{"jump_by": 1}"#] {
            #expect(error(bare.publishSettled(command("queue"), payload)) == "not_supported", "\(payload)")
        }
        for payload in [#"{"insert": [{"url": "http://x/n.mp3"}]}"#, #"{"remove": [2]}"#, #"{"jump": 2}"#] {
            #expect(single(bare.publishSettled(command("queue"), payload)) != nil, "\(payload)")
        }
        // No media session; an app without media.
        var idle = Harness()
        idle.online(media: [])
        #expect(error(idle.publishSettled(command("queue"), #"{"jump_by": 1}"#)) == "no_media_session")
        var off = Harness()
        off.online(status: receiver(app: nil))
        #expect(error(off.publishSettled(command("queue"), #"{"jump_by": 1}"#)) == "no_app")
        // A session that says nothing of a queue.
        var noQueue = Harness()
        noQueue.online(media: [playing(commands: all)])
        #expect(error(noQueue.publishSettled(command("queue"), #"{"remove": [1]}"#)) == "no_media_session")
    }

    @Test func queueParsesStrictly() {
        let parser = CommandParser()
        for bad in ["next", "", #"{}"#, #"{"insert": []}"#, #"{"insert": [{"title": "no url"}]}"#, #"{"remove": [1], "jump": 2}"#,
                    #"{"remove": [1], "before": 2}"#, #"{"reorder": [1, 1]}"#, #"{"reorder": [1], "before": 1}"#,
                    #"{"jump": -1}"#, #"{"jump_by": 0}"#, #"{"jump_by": 1.5}"#, #"{"repeat": "twice"}"#, #"{"shuffle": false}"#,
                    #"{"insert": [{"url": "http://x", "autoplay": "yes"}]}"#, #"{"insert": [{"url": "http://x", "preload_time": -1}]}"#,
                    #"{"insert": [{"url": "http://x"}], "before": "later"}"#, #"{"remove": "1"}"#, #"{"move": [1]}"#] {
            guard case .failure(let f) = parser.parse(name: "queue", payload: Array(bad.utf8)) else { Issue.record("accepted \(bad)"); continue }
            #expect(f.error.code == .invalidPayload, "\(bad)")
        }
    }

    @Test func theBridgeEditsOnlyAQueueItMayOwn() {
        // Another sender's media app (Spotify-like) plays a queue: edits of its items are refused,
        // jumping, repeat and shuffle go through.
        let music = ReceiverApplication(appId: "5E3A1C01", displayName: "Sim Music", namespaces: [CastNamespace.media],
                                        sessionId: "music-1", transportId: "music-t")
        var h = Harness()
        h.online(status: receiver(app: music), media: [queue([1, 2], current: 1)])
        let out = h.publishSettled(command("queue"), #"{"insert": [{"url": "http://x/n.mp3"}]}"#)
        #expect(out.operations.isEmpty)
        #expect(error(out) == "invalid_player_state")
        #expect(out.json(responseTopic)?["error"]?["message"]?.stringValue?.contains("Sim Music") == true)
        #expect(error(h.publishSettled(command("queue"), #"{"remove": [2]}"#)) == "invalid_player_state")
        #expect(single(h.publishSettled(command("queue"), #"{"jump": 2}"#)) != nil)
        #expect(single(h.publishSettled(command("queue"), #"{"repeat": "all"}"#)) != nil)
        // Loaded by the bridge's own load: its queue is the bridge's.
        let load = single(h.publish(command("load"), #"{"url": "http://x/a.mp3", "app_id": "5E3A1C01"}"#))
        if let load {
            #expect(h.complete(load, .mediaStatus([queue([1, 2], current: 1)])).sessionsChanged, "ownership is saved")
        }
        #expect(single(h.publishSettled(command("queue"), #"{"insert": [{"url": "http://x/n.mp3"}]}"#)) != nil)

        // Across a restart (the state file, JSON as on disk): still the bridge's while the same
        // session runs; another session of the app is not.
        let saved = try? JSONDecoder().decode(SessionSnapshot.self, from: JSONEncoder().encode(h.core.sessionSnapshot()))
        #expect(saved?.devices[tvID]?.loadedByBridge == true)
        for (session, owned) in [("music-1", true), ("music-2", false)] {
            var restarted = Harness()
            if let saved { restarted.core.restore(saved) }
            var app = music
            app.sessionId = session
            restarted.online(status: receiver(app: app), media: [queue([1, 2], current: 1)])
            let out = restarted.publishSettled(command("queue"), #"{"insert": [{"url": "http://x/n.mp3"}]}"#)
            #expect(out.operations.count == (owned ? 1 : 0), "\(session): \(error(out) ?? "sent")")
            if !owned { #expect(error(out) == "invalid_player_state") }
        }
        // A file of an older version (no such key) reads as not loaded by the bridge.
        let old = #"{"devices":{"\#(tvID)":{"appId":"5E3A1C01","sessionId":"music-1"}}}"#
        let oldEntry = (try? JSONDecoder().decode(SessionSnapshot.self, from: Data(old.utf8)))?.devices[tvID]
        #expect(oldEntry != nil && oldEntry?.loadedByBridge == nil)
    }

    @Test func loadSaysWhichAppItReplaced() throws {
        let music = ReceiverApplication(appId: "5E3A1C01", displayName: "Sim Music", namespaces: [CastNamespace.media],
                                        sessionId: "music-1", transportId: "music-t")
        var h = Harness()
        h.online(status: receiver(app: music), media: [queue([1, 2], current: 1)])
        let op = try #require(single(h.publish(command("load"), "http://x/song.mp3")))
        var dmr = dmrApp
        dmr.sessionId = "session-2"
        dmr.transportId = "transport-2"
        h.feed(CastEvent.receiverStatus(tvID, receiver(app: dmr)))
        let out = h.complete(op, .mediaStatus([playing()]))
        let data = try #require(out.json(responseTopic)?["data"])
        #expect(data["replaced"] == .object(["app_id": .string("5E3A1C01"), "app_name": .string("Sim Music"), "session_id": .string("music-1")]))
        // The same app again replaces nothing.
        let again = try #require(single(h.publish(command("load"), "http://x/other.mp3")))
        #expect(h.complete(again, .mediaStatus([playing(session: 2)])).json(responseTopic)?["data"]?["replaced"] == .null)
    }

    @Test func theQueueDocumentCarriesItemMetadata() throws {
        var h = Harness()
        var status = queue([1, 2], current: 1)
        status.items?[0].media?.duration = 200
        status.items?[0].media?.metadata?.artist = "Artist"
        status.items?[0].media?.metadata?.images = [CastImage(url: "http://x/1.jpg")]
        status.items?.append(QueueItem(itemId: 3, media: nil, autoplay: nil))
        let out = h.online(media: [status])
        let items = try #require(out.json("cast2mqtt/living_room_tv/media")?["queue"]?["items"]?.arrayValue)
        #expect(items.first == .object(["item_id": .number(1), "content_id": .string("http://x/1.mp3"), "title": .string("Item 1"),
                                        "artist": .string("Artist"), "duration": .number(200), "autoplay": .bool(true),
                                        "images": .array([.object(["url": .string("http://x/1.jpg"), "width": .null, "height": .null])])]))
        // Listed by id only until the device describes it.
        #expect(items.last?["item_id"] == .number(3))
        #expect(items.last?["content_id"] == .null)
    }

    @Test func aJumpEndsAnAnnouncementLikeNext() {
        #expect(DeviceCommand.queue(.jump(itemId: 2)).changesWhatPlays)
        #expect(DeviceCommand.queue(.jumpBy(1)).changesWhatPlays)
        #expect(!DeviceCommand.queue(.insert([], at: .end)).changesWhatPlays)
        #expect(!DeviceCommand.tracks(TracksCommand(subtitles: .off)).changesWhatPlays)
    }
}
