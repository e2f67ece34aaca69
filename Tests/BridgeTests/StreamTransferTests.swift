import CastProtocol
import Foundation
import Testing
@testable import Bridge

@Suite struct StreamTransferTests {
    func twoDevices(window: Double = 15) -> Harness {
        var h = Harness { $0.cast.transferWindow = window }
        h.online(tvDescriptor())
        let speakerApp = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, displayName: "Default Media Receiver",
                                             namespaces: [CastNamespace.media], sessionId: "s-2", transportId: "t-2")
        h.online(speakerDescriptor(), status: receiver(app: speakerApp), media: [])
        return h
    }

    @Test func observedTransferWithinWindow() throws {
        var h = twoDevices()
        h.now = t0.addingTimeInterval(1)
        let interrupted = h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "INTERRUPTED")]))
        #expect(interrupted.texts("cast2mqtt/living_room_tv/state") == ["idle"])
        h.now = t0.addingTimeInterval(6)
        let started = h.feed(.mediaStatus(speakerID, [playing(session: 9, time: 33)]))
        let event = try #require(started.json("cast2mqtt/bridge/event"))
        #expect(event["type"] == .string("stream_transferred"))
        #expect(event["from"] == .string("living_room_tv"))
        #expect(event["to"] == .string("kitchen_speaker"))
        #expect(event["content_id"] == .string("http://192.0.2.5/song.mp3"))
        #expect(event["position"] == .number(33))
        #expect(started.events("cast2mqtt/living_room_tv/event") == ["stream_transferred"])
        #expect(started.events("cast2mqtt/kitchen_speaker/event") == ["media_loaded", "stream_transferred"])
        #expect(started.texts("cast2mqtt/kitchen_speaker/state") == ["playing"])
    }

    @Test func observedTransferAfterSessionEnd() throws {
        var h = twoDevices()
        let ended = h.feed(.receiverStatus(tvID, receiver(app: nil)))
        #expect(ended.texts("cast2mqtt/living_room_tv/state") == ["off"])
        h.now = t0.addingTimeInterval(3)
        let started = h.feed(.mediaStatus(speakerID, [playing(session: 4)]))
        #expect(started.json("cast2mqtt/bridge/event")?["type"] == .string("stream_transferred"))
    }

    @Test func noTransferOutsideWindowOrForOtherContent() {
        var h = twoDevices(window: 15)
        h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "INTERRUPTED")]))
        h.now = t0.addingTimeInterval(20)
        #expect(h.feed(.mediaStatus(speakerID, [playing(session: 9)])).on("cast2mqtt/bridge/event").isEmpty)
        var other = twoDevices()
        other.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "INTERRUPTED")]))
        #expect(other.feed(.mediaStatus(speakerID, [playing(session: 9, content: "http://other")])).on("cast2mqtt/bridge/event").isEmpty)
        var finished = twoDevices()
        finished.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "FINISHED")]))
        #expect(finished.feed(.mediaStatus(speakerID, [playing(session: 9)])).on("cast2mqtt/bridge/event").isEmpty)
    }

    @Test func commandedTransferFallback() throws {
        var h = twoDevices()
        let read = try #require(h.publish("cast2mqtt/living_room_tv/command/transfer", #"{"id": 3, "to": "Kitchen Speaker"}"#).operations.first)
        #expect(read.deviceID == tvID)
        #expect(read.kind == .getMediaStatus)
        h.now = t0.addingTimeInterval(2)
        let loadOut = h.complete(read, .mediaStatus([playing(time: 40)]))
        let load = try #require(loadOut.operations.first)
        #expect(load.deviceID == speakerID)
        guard case .load(let request, let appId) = load.kind else { Issue.record("expected load"); return }
        #expect(appId == "CC1AD845")
        #expect(request.media.contentId == "http://192.0.2.5/song.mp3")
        #expect(request.currentTime == 40)
        #expect(request.media.metadata?.title == "Song")
        h.now = t0.addingTimeInterval(3)
        let stopOut = h.complete(load, .mediaStatus([playing(session: 5, time: 41)]))
        let stop = try #require(stopOut.operations.first)
        #expect(stop.deviceID == tvID)
        #expect(stop.kind == .media(.stop(mediaSessionId: 1)))
        let done = h.complete(stop, .mediaStatus([MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "CANCELLED")]))
        let response = try #require(done.json("cast2mqtt/living_room_tv/response"))
        #expect(response["status"] == .string("ok"))
        #expect(response["id"] == .number(3))
        #expect(response["data"] == .object(["from": .string("living_room_tv"), "to": .string("kitchen_speaker"), "position": .number(40)]))
        #expect(done.events("cast2mqtt/bridge/event") == ["stream_transferred"])
    }

    @Test func commandedTransferFailureLeavesSource() throws {
        var h = twoDevices()
        let read = try #require(h.publish("cast2mqtt/living_room_tv/command/transfer", "kitchen_speaker").operations.first)
        let load = try #require(h.complete(read, .mediaStatus([playing()])).operations.first)
        let failed = h.feed(.operationCompleted(load.token, .failure(BridgeError(.loadFailed, "the receiver could not load the media"))))
        #expect(failed.operations.isEmpty, "the source is not stopped")
        #expect(failed.json("cast2mqtt/living_room_tv/response")?["error"]?["code"] == .string("load_failed"))
    }

    @Test func commandedTransferWithSessionTransfer() throws {
        var h = twoDevices()
        h.feed(.mediaStatus(speakerID, [MediaStatus(mediaSessionId: 7, playerState: "IDLE", supportedMediaCommands: 274447)]))
        let read = try #require(h.publish("cast2mqtt/living_room_tv/command/transfer", #"{"to": "kitchen_speaker", "keep_source": true}"#).operations.first)
        let store = try #require(h.complete(read, .mediaStatus([playing()])).operations.first)
        #expect(store.kind == .storeSession(mediaSessionId: 1))
        let state: JSONValue = .object(["loadRequestData": .object(["media": .object(["contentId": .string("x")])])])
        let resume = try #require(h.complete(store, .sessionState(state)).operations.first)
        #expect(resume.kind == .resumeSession(sessionState: state, appId: "CC1AD845"))
        let done = h.complete(resume, .mediaStatus([playing(session: 8)]))
        #expect(done.operations.isEmpty, "keep_source: the source keeps playing")
        #expect(done.json("cast2mqtt/living_room_tv/response")?["status"] == .string("ok"))
    }

    @Test func transferErrors() {
        var h = twoDevices()
        #expect(h.publish("cast2mqtt/living_room_tv/command/transfer", "nowhere").json("cast2mqtt/living_room_tv/response")?["error"]?["code"]
                == .string("unknown_device"))
        #expect(h.publish("cast2mqtt/living_room_tv/command/transfer", "living_room_tv").json("cast2mqtt/living_room_tv/response")?["error"]?["code"]
                == .string("invalid_payload"))
        #expect(h.publish("cast2mqtt/kitchen_speaker/command/transfer", "living_room_tv").json("cast2mqtt/kitchen_speaker/response")?["error"]?["code"]
                == .string("no_media_session"))
        h.feed(.castDisconnected(speakerID, reason: "x"))
        #expect(h.publish("cast2mqtt/living_room_tv/command/transfer", "kitchen_speaker").json("cast2mqtt/living_room_tv/response")?["error"]?["code"]
                == .string("device_offline"))
        let bridge = h.publish("cast2mqtt/bridge/request/transfer", #"{"from": "living_room_tv", "to": "kitchen_speaker"}"#)
        #expect(bridge.json("cast2mqtt/bridge/response/transfer")?["error"]?["code"] == .string("device_offline"))
    }

    @Test func bridgeTransferRequest() throws {
        var h = twoDevices()
        let out = h.publish("cast2mqtt/bridge/request/transfer", #"{"from": "living_room_tv", "to": "kitchen_speaker"}"#)
        #expect(out.operations.first?.kind == .getMediaStatus)
    }
}

@Suite struct AnnounceTests {
    @Test func announceThenRestore() throws {
        var h = Harness()
        h.online(status: receiver(level: 0.3))
        let first = try #require(h.publish("cast2mqtt/living_room_tv/command/announce", #"{"url": "http://x/ding.mp3", "volume": 0.8}"#).operations.first)
        #expect(first.kind == .setVolume(level: 0.8))
        let loadOut = h.complete(first, .receiverStatus(receiver(level: 0.8)))
        let load = try #require(loadOut.operations.first)
        guard case .load(let clip, _) = load.kind else { Issue.record("expected load"); return }
        #expect(clip.media.contentId == "http://x/ding.mp3")
        let confirmed = h.complete(load, .mediaStatus([playing(session: 2, content: "http://x/ding.mp3", time: 0)]))
        #expect(confirmed.json("cast2mqtt/living_room_tv/response")?["status"] == .string("ok"))
        h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 2, playerState: "IDLE", idleReason: "FINISHED")]))
        h.now = h.now.addingTimeInterval(AnnounceJobs.settleSeconds + 0.5)
        let restoreVolume = try #require(h.feed(.tick).operations.first)
        #expect(restoreVolume.kind == .setVolume(level: 0.3))
        let restoreMedia = try #require(h.complete(restoreVolume, .receiverStatus(receiver(level: 0.3))).operations.first)
        guard case .load(let previous, _) = restoreMedia.kind else { Issue.record("expected restore load"); return }
        #expect(previous.media.contentId == "http://192.0.2.5/song.mp3")
        #expect(previous.currentTime == 31.2)
        #expect(previous.autoplay)
        #expect(h.complete(restoreMedia, .mediaStatus([playing(session: 3)])).operations.isEmpty)
    }
}
