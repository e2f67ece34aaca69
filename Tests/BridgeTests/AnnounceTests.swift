import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Announcements that compose (issue #17): `wait`, a queue per device with one restore after
/// the last, any command that changes what plays ending them without a restore, another app
/// relaunched rather than reloaded; and `expires`.
@Suite struct ComposingAnnouncementTests {
    let topic = "cast2mqtt/living_room_tv/command/announce"
    let response = "cast2mqtt/living_room_tv/response"
    func clip(_ url: String, session: Int) -> MediaStatus { playing(session: session, content: url, time: 0) }
    func finished(_ session: Int) -> MediaStatus { MediaStatus(mediaSessionId: session, playerState: "IDLE", idleReason: "FINISHED") }

    func responses(_ out: BridgeOutput) -> [JSONValue] { out.on(response).compactMap(json) }

    /// After the last clip: the moment for a chained announcement passes, then the restore.
    func settle(_ h: inout Harness) -> BridgeOutput {
        h.now = h.now.addingTimeInterval(AnnounceJobs.settleSeconds + 0.5)
        return h.feed(.tick)
    }

    /// Past the startup hold, the TV online playing the song in the Default Media Receiver.
    func playingTV() -> Harness {
        var h = Harness()
        h.online()
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        return h
    }

    /// Completes the clip's LOAD with the clip playing in media session `session`.
    @discardableResult
    func playClip(_ h: inout Harness, _ out: BridgeOutput, url: String, session: Int) throws -> BridgeOutput {
        let load = try #require(out.operations.first { if case .load = $0.kind { true } else { false } })
        return h.complete(load, .mediaStatus([clip(url, session: session)]))
    }

    @Test func withWaitTheAnswerComesWhenTheClipHasFinished() throws {
        var h = playingTV()
        let start = h.publish(topic, #"{"id": "a", "url": "http://x/ding.mp3", "wait": true}"#)
        let playing = try playClip(&h, start, url: "http://x/ding.mp3", session: 2)
        #expect(responses(playing).isEmpty, "not while the clip plays")
        let done = h.feed(CastEvent.mediaStatus(tvID, [finished(2)]))
        let answer = try #require(responses(done).first)
        #expect(answer["id"] == .string("a"))
        #expect(answer["data"]?["finished"] == .bool(true))
        #expect(answer["data"]?["restore"] == .string("media"))
        #expect(done.operations.isEmpty, "a moment for a chained announcement first")
        // Then the restore: the song at its position.
        guard case .load(let song, _)? = settle(&h).operations.first?.kind else { Issue.record("no restore"); return }
        #expect(song.media.contentId == "http://192.0.2.5/song.mp3")
    }

    @Test func twoAnnouncementsPlayOneAfterTheOtherAndRestoreOnce() throws {
        var h = playingTV()
        let first = h.publish(topic, #"{"id": 1, "url": "http://x/chime.mp3"}"#)
        let second = h.publish(topic, #"{"id": 2, "url": "http://x/ding.mp3", "wait": true}"#)
        #expect(second.publications.isEmpty && second.operations.isEmpty, "the second waits for the first")
        let started = try playClip(&h, first, url: "http://x/chime.mp3", session: 2)
        #expect(responses(started).map { $0["id"] } == [.number(1)], "the first, without wait, answers when it plays")
        // A third without wait, while the first plays: accepted at once, in the queue.
        let third = h.publish(topic, #"{"id": 3, "url": "http://x/later.mp3"}"#)
        #expect(responses(third).first?["data"]?["queued"] == .number(2))
        // The first ends: the second clip loads, no restore in between.
        let next = h.feed(CastEvent.mediaStatus(tvID, [finished(2)]))
        guard case .load(let ding, _)? = next.operations.first?.kind else { Issue.record("no second clip"); return }
        #expect(ding.media.contentId == "http://x/ding.mp3")
        let playingSecond = try playClip(&h, next, url: "http://x/ding.mp3", session: 3)
        #expect(responses(playingSecond).isEmpty)
        let afterSecond = h.feed(CastEvent.mediaStatus(tvID, [finished(3)]))
        #expect(responses(afterSecond).map { $0["id"] } == [.number(2)], "the second, with wait, when it has played; the third was answered")
        _ = try playClip(&h, afterSecond, url: "http://x/later.mp3", session: 4)
        #expect(responses(h.feed(CastEvent.mediaStatus(tvID, [finished(4)]))).isEmpty)
        let restore = try #require(settle(&h).operations.first)
        guard case .load(let song, _) = restore.kind else { Issue.record("no restore"); return }
        #expect(song.media.contentId == "http://192.0.2.5/song.mp3", "the media from before the first announcement")
        #expect(h.complete(restore, .mediaStatus([playing(session: 5)])).operations.isEmpty, "restored once")
    }

    /// Issue #26: `announce` A then B without `wait`: B is answered once (`queued`), never again
    /// when it plays; every announcement of a chain gets exactly one response, whatever happens.
    @Test func aQueuedAnnouncementIsAnsweredOnce() throws {
        var h = playingTV()
        var all: [JSONValue] = []
        let first = h.publish(topic, #"{"id": "A", "url": "http://x/a.mp3"}"#)
        all += responses(first)
        let playingA = try playClip(&h, first, url: "http://x/a.mp3", session: 2)
        all += responses(playingA)
        let second = h.publish(topic, #"{"id": "B", "url": "http://x/b.mp3"}"#)
        all += responses(second)
        #expect(responses(second).first?["data"]?["queued"] == .number(1))
        let next = h.feed(CastEvent.mediaStatus(tvID, [finished(2)]))
        all += responses(next)
        let playingB = try playClip(&h, next, url: "http://x/b.mp3", session: 3)
        #expect(responses(playingB).isEmpty, "B was answered when it was queued")
        all += responses(playingB)
        all += responses(h.feed(CastEvent.mediaStatus(tvID, [finished(3)])))
        let restore = settle(&h)
        all += responses(restore)
        if let op = restore.operations.first { all += responses(h.complete(op, .mediaStatus([playing(session: 4)]))) }
        #expect(all.map { $0["id"] } == [.string("A"), .string("B")], "one answer each: \(all)")
    }

    /// A queued announcement (answered `queued`) that fails or is cancelled later is told as a
    /// `load_failed` event, not as a second response.
    @Test func aQueuedAnnouncementThatDoesNotPlayIsAnEventNotASecondAnswer() throws {
        var h = playingTV()
        let first = h.publish(topic, #"{"id": 1, "url": "http://x/a.mp3"}"#)
        _ = try playClip(&h, first, url: "http://x/a.mp3", session: 2)
        #expect(responses(h.publish(topic, #"{"id": 2, "url": "http://x/b.mp3"}"#)).first?["data"]?["queued"] == .number(1))
        #expect(responses(h.publish(topic, #"{"id": 3, "url": "http://x/c.mp3"}"#)).first?["data"]?["queued"] == .number(2))
        // B's LOAD fails: no response (it had one); an event says so.
        let next = h.feed(CastEvent.mediaStatus(tvID, [finished(2)]))
        let loadB = try #require(next.operations.first)
        let failed = h.feed(.operationCompleted(loadB.token, .failure(BridgeError(.loadFailed, "the receiver could not load the media"))))
        #expect(responses(failed).isEmpty)
        let event = try #require(failed.on("cast2mqtt/living_room_tv/event").compactMap(json).first)
        #expect(event["type"] == .string("load_failed"))
        #expect(event["command"] == .string("announce"))
        #expect(event["id"] == .number(2))
        #expect(event["content_id"] == .string("http://x/b.mp3"))
        #expect(event["error"]?["code"] == .string("load_failed"))
        // C plays next; a load interrupts it: C was answered, so no second response either.
        let loadC = try #require(failed.operations.first)
        _ = h.complete(loadC, .mediaStatus([clip("http://x/c.mp3", session: 3)]))
        let radio = h.publish("cast2mqtt/living_room_tv/command/load", #"{"id": "r", "url": "http://x/radio.mp3"}"#)
        #expect(responses(radio).isEmpty, "C and the others were answered already; the load waits for its LOAD")
    }

    /// Announcements still waiting when a load interrupts: one that was answered `queued` is
    /// told by an event, one with `wait` (not answered yet) by its response.
    @Test func cancelledWaitingAnnouncementsAreAnsweredOnce() throws {
        var h = playingTV()
        let first = h.publish(topic, #"{"id": 1, "url": "http://x/a.mp3", "wait": true}"#)
        _ = try playClip(&h, first, url: "http://x/a.mp3", session: 2)
        #expect(responses(h.publish(topic, #"{"id": 2, "url": "http://x/b.mp3"}"#)).count == 1)
        #expect(responses(h.publish(topic, #"{"id": 3, "url": "http://x/c.mp3", "wait": true}"#)).isEmpty)
        let radio = h.publish("cast2mqtt/living_room_tv/command/load", #"{"id": "r", "url": "http://x/radio.mp3"}"#)
        #expect(responses(radio).map { $0["id"] } == [.number(1), .number(3)])
        #expect(responses(radio).last?["error"]?["code"] == .string("load_cancelled"))
        let events = radio.on("cast2mqtt/living_room_tv/event").compactMap(json).filter { $0["type"] == .string("load_failed") }
        #expect(events.map { $0["id"] } == [.number(2)])
        #expect(events.first?["error"]?["code"] == .string("load_cancelled"))
    }

    @Test func aLoadEndsTheAnnouncementsWithoutARestore() throws {
        var h = playingTV()
        let first = h.publish(topic, #"{"id": 1, "url": "http://x/chime.mp3", "wait": true}"#)
        _ = h.publish(topic, #"{"id": 2, "url": "http://x/ding.mp3"}"#)
        let playing = try playClip(&h, first, url: "http://x/chime.mp3", session: 2)
        #expect(responses(playing).first { $0["id"] == .number(2) }?["data"]?["queued"] == .number(1))
        let radio = h.publish("cast2mqtt/living_room_tv/command/load", #"{"id": "r", "url": "http://x/radio.mp3"}"#)
        let answers = responses(radio)
        #expect(answers.first { $0["id"] == .number(1) }?["data"]?["interrupted_by"] == .string("load"))
        // The second was answered when it was queued: its cancellation is an event.
        #expect(answers.first { $0["id"] == .number(2) } == nil)
        let cancelled = radio.on("cast2mqtt/living_room_tv/event").compactMap(json).first { $0["id"] == .number(2) }
        #expect(cancelled?["error"]?["code"] == .string("load_cancelled"))
        let load = try #require(radio.operations.first)
        guard case .load(let request, _) = load.kind else { Issue.record("expected the user's load"); return }
        #expect(request.media.contentId == "http://x/radio.mp3")
        // The radio replaces the clip: nothing is restored over it.
        let after = h.complete(load, .mediaStatus([clip("http://x/radio.mp3", session: 3)]))
        #expect(after.operations.isEmpty)
        #expect(h.feed(CastEvent.mediaStatus(tvID, [finished(3)])).operations.isEmpty)
    }

    @Test func anotherSendersMediaIsLeftAlone() throws {
        var h = playingTV()
        let start = h.publish(topic, #"{"url": "http://x/chime.mp3"}"#)
        _ = try playClip(&h, start, url: "http://x/chime.mp3", session: 2)
        let other = h.feed(CastEvent.mediaStatus(tvID, [clip("http://x/podcast.mp3", session: 3)]))
        #expect(other.operations.isEmpty, "no restore over someone else's media")
    }

    @Test func anotherAppIsRelaunchedNotReloaded() throws {
        var h = Harness()
        let spotify = ReceiverApplication(appId: "CC32E753", displayName: "Spotify", namespaces: [CastNamespace.media],
                                          sessionId: "sp", transportId: "sp-t")
        h.online(status: receiver(app: spotify), media: [playing()])
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        let start = h.publish(topic, #"{"url": "http://x/chime.mp3"}"#)
        let load = try #require(start.operations.first)
        // The Default Media Receiver replaces Spotify for the clip.
        let dmrStatus = h.feed(CastEvent.receiverStatus(tvID, receiver()))
        #expect(dmrStatus.operations.isEmpty)
        let answer = h.complete(load, .mediaStatus([clip("http://x/chime.mp3", session: 2)]))
        #expect(responses(answer).first?["data"]?["restore"] == .string("relaunch_app"))
        h.feed(CastEvent.mediaStatus(tvID, [finished(2)]))
        #expect(settle(&h).operations.first?.kind == .launch(appId: "CC32E753"))
    }

    /// An automation that waits for one announcement and then sends the next: the second plays
    /// with no restore in between, and the restore follows the last.
    @Test func aChainedAnnouncementPlaysBeforeTheRestore() throws {
        var h = playingTV()
        let first = h.publish(topic, #"{"id": 1, "url": "http://x/doorbell.mp3", "wait": true}"#)
        _ = try playClip(&h, first, url: "http://x/doorbell.mp3", session: 2)
        #expect(responses(h.feed(CastEvent.mediaStatus(tvID, [finished(2)]))).map { $0["id"] } == [.number(1)])
        h.now = h.now.addingTimeInterval(0.3)
        let second = h.publish(topic, #"{"id": 2, "url": "http://x/someone-at-the-door.mp3", "wait": true}"#)
        guard case .load(let clip, _)? = second.operations.first?.kind else { Issue.record("the second clip did not start"); return }
        #expect(clip.media.contentId == "http://x/someone-at-the-door.mp3")
        _ = try playClip(&h, second, url: "http://x/someone-at-the-door.mp3", session: 3)
        h.feed(CastEvent.mediaStatus(tvID, [finished(3)]))
        guard case .load(let song, _)? = settle(&h).operations.first?.kind else { Issue.record("no restore"); return }
        #expect(song.media.contentId == "http://192.0.2.5/song.mp3")
    }

    @Test func announcementsWaitingAreBounded() throws {
        var h = playingTV()
        let first = h.publish(topic, #"{"id": 0, "url": "http://x/0.mp3"}"#)
        for i in 1...AnnounceJobs.maxWaiting + 1 {
            #expect(h.publish(topic, #"{"id": \#(i), "url": "http://x/\#(i).mp3"}"#).publications.isEmpty)
        }
        // The clip plays: the commands that waited behind its LOAD join the announcement's queue
        // (each accepted at once), all but the last, which finds it full.
        let playing = try playClip(&h, first, url: "http://x/0.mp3", session: 2)
        #expect(responses(playing).map { $0["id"] } == (0...AnnounceJobs.maxWaiting + 1).map { .number(Double($0)) })
        #expect(responses(playing).dropLast().allSatisfy { $0["status"] == .string("ok") })
        #expect(responses(playing).last?["error"]?["code"] == .string("busy"))
    }

    @Test func offlineAnswersEveryAnnouncement() throws {
        var h = playingTV()
        let first = h.publish(topic, #"{"id": 1, "url": "http://x/chime.mp3", "wait": true}"#)
        _ = h.publish(topic, #"{"id": 2, "url": "http://x/ding.mp3", "wait": true}"#)
        _ = h.publish(topic, #"{"id": 3, "url": "http://x/dong.mp3"}"#)
        _ = try playClip(&h, first, url: "http://x/chime.mp3", session: 2)
        let down = h.feed(CastEvent.castDisconnected(tvID, reason: "heartbeat timeout"))
        // The two not answered yet get their answer; the one answered `queued` an event.
        #expect(responses(down).map { $0["id"] } == [.number(1), .number(2)])
        #expect(responses(down).map { $0["error"]?["code"] } == [.string("device_offline"), .string("device_offline")])
        let events = down.on("cast2mqtt/living_room_tv/event").compactMap(json).filter { $0["type"] == .string("load_failed") }
        #expect(events.map { $0["id"] } == [.number(3)])
        #expect(events.first?["error"]?["code"] == .string("device_offline"))
    }

    @Test func expiredCommandsAreAnsweredTimeoutAndNeverSent() throws {
        var h = playingTV()
        // Already expired when it arrives.
        let late = h.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": 1, "percent": 20, "expires": "2020-01-01T00:00:00Z"}"#)
        #expect(late.operations.isEmpty)
        #expect(responses(late).first?["error"]?["code"] == .string("timeout"))
        // Waiting behind a running command when its deadline passes.
        let running = try #require(h.publish("cast2mqtt/living_room_tv/command/volume", "30").operations.first)
        let queued = h.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": 2, "percent": 40, "expires": 2}"#)
        #expect(queued.operations.isEmpty && queued.publications.isEmpty)
        h.now = h.now.addingTimeInterval(3)
        let tick = h.feed(.tick)
        #expect(responses(tick).first?["id"] == .number(2))
        #expect(responses(tick).first?["error"]?["code"] == .string("timeout"))
        #expect(h.complete(running, .receiverStatus(receiver(level: 0.3))).operations.isEmpty, "never sent")
        // In time, it runs.
        let inTime = h.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": 3, "percent": 50, "expires": 30}"#)
        #expect(inTime.operations.first?.kind == .setVolume(level: 0.5))
        #expect(CommandParser().parse(name: "volume", payload: Array(#"{"percent": 5, "expires": "soon"}"#.utf8)).failureCode == .invalidPayload)
    }
}

extension Result where Failure == ParseFailure {
    var failureCode: ErrorCode? { if case .failure(let f) = self { return f.error.code } else { return nil } }
}
