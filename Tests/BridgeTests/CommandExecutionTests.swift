import CastProtocol
import Foundation
import Testing
@testable import Bridge

@Suite struct CommandExecutionTests {
    let responseTopic = "cast2mqtt/living_room_tv/response"

    func single(_ out: BridgeOutput) -> CastOperation? {
        #expect(out.operations.count == 1)
        return out.operations.first
    }

    func errorCode(_ out: BridgeOutput, topic: String = "cast2mqtt/living_room_tv/response") -> String? {
        out.json(topic)?["error"]?["code"]?.stringValue
    }

    @Test func mediaCommandsMapToOperations() throws {
        var h = Harness()
        h.online()
        let cases: [(String, String, MediaRequest)] = [
            ("play", "", .play(mediaSessionId: 1)),
            ("pause", "", .pause(mediaSessionId: 1)),
            ("toggle", "", .pause(mediaSessionId: 1)),
            ("stop", "{}", .stop(mediaSessionId: 1)),
            ("seek", "42", .seek(mediaSessionId: 1, currentTime: 42, relativeTime: nil, resumeState: nil)),
            ("seek", "+10", .seek(mediaSessionId: 1, currentTime: nil, relativeTime: 10, resumeState: nil)),
            ("rate", "1.5", .setPlaybackRate(mediaSessionId: 1, rate: 1.5)),
        ]
        for (name, payload, expected) in cases {
            let out = h.publishSettled("cast2mqtt/living_room_tv/command/\(name)", payload)
            #expect(single(out)?.kind == .media(expected), "\(name)")
            #expect(out.on(responseTopic).isEmpty, "no response before the device answers")
        }
    }

    @Test func toggleFromPaused() {
        var h = Harness()
        h.online(media: [playing(state: "PAUSED")])
        #expect(single(h.publish("cast2mqtt/living_room_tv/command/toggle", ""))?.kind == .media(.play(mediaSessionId: 1)))
    }

    @Test func queueCommandsNeedSupport() {
        var h = Harness()
        h.online(media: [playing(commands: MediaCommands.allBasicMedia.rawValue)])
        let out = h.publishSettled("cast2mqtt/living_room_tv/command/next", #"{"id": 4}"#)
        #expect(out.operations.isEmpty)
        #expect(errorCode(out) == "not_supported")
        #expect(out.json(responseTopic)?["id"] == .number(4))
        #expect(errorCode(h.publishSettled("cast2mqtt/living_room_tv/command/previous", "")) == "not_supported")
        #expect(errorCode(h.publishSettled("cast2mqtt/living_room_tv/command/skip_ad", "")) == "not_supported")
        var all = Harness()
        all.online(media: [playing(commands: MediaCommands.allBasicMedia.union([.queueNext, .queuePrev]).rawValue)])
        #expect(single(all.publishSettled("cast2mqtt/living_room_tv/command/next", ""))?.kind == .media(.queueNext(mediaSessionId: 1)))
        #expect(single(all.publishSettled("cast2mqtt/living_room_tv/command/previous", ""))?.kind == .media(.queuePrev(mediaSessionId: 1)))
    }

    /// One failed load is one report (spec §6): the `load_failed` response and event, and no
    /// `error` event for the device's IDLE / ERROR status of that same load (a real Default Media
    /// Receiver sends one right after LOAD_FAILED, without the content); whichever comes first.
    @Test func aFailedLoadIsReportedOnce() throws {
        var h = Harness()
        h.online(media: [playing(session: 4)])
        let load = try #require(single(h.publish("cast2mqtt/living_room_tv/command/load", #"{"id": "L", "url": "http://x/a.wav"}"#)))
        let failed = h.feed(.operationCompleted(load.token, .failure(BridgeError(.loadFailed, "the receiver could not load the media"))))
        #expect(failed.json(responseTopic)?["error"]?["code"] == .string("load_failed"))
        #expect(failed.events("cast2mqtt/living_room_tv/event") == ["load_failed"])
        let echo = MediaStatus(mediaSessionId: 5, playerState: "IDLE", idleReason: "ERROR", currentTime: 0, playbackRate: 1,
                               supportedMediaCommands: 12303)
        let idle = h.feed(CastEvent.mediaStatus(tvID, [echo]))
        #expect(idle.events("cast2mqtt/living_room_tv/event").isEmpty, "the failure was reported already")
        #expect(idle.json("cast2mqtt/living_room_tv/media")?["idle_reason"] == .string("error"))

        // The status first, then the answer: still one report.
        var h2 = Harness()
        h2.online(media: [playing(session: 4)])
        let load2 = try #require(single(h2.publish("cast2mqtt/living_room_tv/command/load", #"{"url": "http://x/a.wav"}"#)))
        #expect(h2.feed(CastEvent.mediaStatus(tvID, [echo])).events("cast2mqtt/living_room_tv/event").isEmpty)
        let answer = h2.feed(.operationCompleted(load2.token, .failure(BridgeError(.loadFailed, "LOAD_FAILED"))))
        #expect(answer.events("cast2mqtt/living_room_tv/event") == ["load_failed"])

        // Playback that fails on its own later (no load of the bridge's) is an `error` event.
        var h3 = Harness()
        h3.online(media: [playing(session: 4)])
        var broken = playing(session: 4, state: "IDLE")
        broken.idleReason = "ERROR"
        #expect(h3.feed(CastEvent.mediaStatus(tvID, [broken])).events("cast2mqtt/living_room_tv/event") == ["error"])
        // So is one long after a failed load (the failure explains only its own status).
        let load3 = try #require(single(h3.publish("cast2mqtt/living_room_tv/command/load", #"{"url": "http://x/b.wav"}"#)))
        _ = h3.feed(.operationCompleted(load3.token, .failure(BridgeError(.loadFailed, "LOAD_FAILED"))))
        h3.now = h3.now.addingTimeInterval(60)
        _ = h3.feed(CastEvent.mediaStatus(tvID, [playing(session: 6)]))
        #expect(h3.feed(CastEvent.mediaStatus(tvID, [broken])).events("cast2mqtt/living_room_tv/event") == ["error"])
    }

    @Test func pauseNotSupported() {
        var h = Harness()
        h.online(media: [playing(commands: 0)])
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/pause", "")) == "not_supported")
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/seek", "3")) == "not_supported")
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/rate", "1.5")) == "not_supported")
    }

    @Test func noAppAndNoMediaSession() {
        var h = Harness()
        h.online(status: receiver(app: nil), media: nil)
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/play", "")) == "no_app")
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/quit", "")) == "no_app")
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/send/urn:x-cast:com.example.app", "x")) == "no_app")
        var h2 = Harness()
        h2.online(media: [])
        #expect(errorCode(h2.publish("cast2mqtt/living_room_tv/command/pause", "")) == "no_media_session")
    }

    @Test func volumeAndMute() {
        var h = Harness()
        h.online(status: receiver(level: 0.4, muted: false))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/volume", "55"))?.kind == .setVolume(level: 0.55))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/volume", "+5"))?.kind == .setVolume(level: 0.45))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/volume", "-50"))?.kind == .setVolume(level: 0))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/volume", "+100"))?.kind == .setVolume(level: 1))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/volume", #"{"level": 0.3}"#))?.kind == .setVolume(level: 0.3))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/mute", "on"))?.kind == .setMuted(true))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/mute", "toggle"))?.kind == .setMuted(true))
        var fixed = Harness()
        fixed.online(status: ReceiverStatus(applications: [dmrApp], volume: ReceiverVolume(controlType: "fixed", level: 1, muted: false)))
        #expect(errorCode(fixed.publish("cast2mqtt/living_room_tv/command/volume", "10")) == "not_supported")
    }

    @Test func launchQuitLoadSend() {
        var h = Harness()
        h.online()
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/launch", "233637DE"))?.kind == .launch(appId: "233637DE"))
        #expect(single(h.publishSettled("cast2mqtt/living_room_tv/command/quit", ""))?.kind == .stopApp(sessionId: "session-1"))
        let load = single(h.publishSettled("cast2mqtt/living_room_tv/command/load", "http://192.0.2.5/a.mp3"))
        if case .load(let r, let app)? = load?.kind {
            #expect(app == "CC1AD845")
            #expect(r.media.contentId == "http://192.0.2.5/a.mp3")
        } else { Issue.record("expected load") }
        let queue = single(h.publishSettled("cast2mqtt/living_room_tv/command/load", #"{"queue": [{"url": "http://x/1.mp3"}]}"#))
        if case .queueLoad(let q, _)? = queue?.kind { #expect(q.items.count == 1) } else { Issue.record("expected queueLoad") }
        let send = single(h.publishSettled("cast2mqtt/living_room_tv/command/send/urn:x-cast:com.example.app", #"{"hello":1}"#))
        #expect(send?.kind == .send(namespace: "urn:x-cast:com.example.app", payload: .string(#"{"hello":1}"#), appId: nil, awaitReply: false))
        // The running app does not speak this namespace.
        #expect(errorCode(h.publishSettled("cast2mqtt/living_room_tv/command/send/urn:x-cast:com.other", "x")) == "not_supported")
        // With app_id the I/O side launches first, so no app check.
        let withApp = single(h.publishSettled("cast2mqtt/living_room_tv/command/send",
                                       #"{"namespace": "urn:x-cast:com.other", "data": {"a": 1}, "app_id": "ABCD1234", "reply": true, "timeout": 2}"#))
        #expect(withApp?.kind == .send(namespace: "urn:x-cast:com.other", payload: .string(#"{"a":1}"#), appId: "ABCD1234", awaitReply: true))
        #expect(withApp?.timeout == .seconds(2))
    }

    @Test func badInputSendsNothing() {
        var h = Harness()
        h.online()
        for (name, payload, code) in [("volume", "250", "invalid_payload"), ("rate", "9", "invalid_payload"), ("dance", "", "unknown_command"),
                                      ("load", "{oops", "invalid_payload"),
                                      ("send/urn:x-cast:com.google.cast.tp.connection", "{}", "namespace_not_allowed")] {
            let out = h.publish("cast2mqtt/living_room_tv/command/\(name)", payload)
            #expect(out.operations.isEmpty, "\(name)")
            #expect(errorCode(out) == code, "\(name)")
            #expect(out.publications.count == 1, "only the response")
        }
        let bytes = h.feed(.mqttMessage(topic: "cast2mqtt/living_room_tv/command/play", payload: [0xff, 0xfe], responseTopic: nil, correlationData: nil))
        #expect(bytes.operations.isEmpty)
        #expect(errorCode(bytes) == "invalid_payload")
    }

    @Test func unknownAndOfflineDevices() {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        h.now = t0.addingTimeInterval(StartupHold.maximumSeconds)  // past the startup hold (the TV is still connecting)
        let offline = h.publish("cast2mqtt/living_room_tv/command/play", #"{"id": 1}"#)
        #expect(offline.operations.isEmpty)
        #expect(errorCode(offline) == "device_offline")
        #expect(offline.json(responseTopic)?["id"] == .number(1))
        // Connected, its receiver status not yet applied: still offline. The bridge asks for
        // nothing itself (the client read the status and reports it next).
        let connect = h.feed(.castConnected(tvID))
        #expect(connect.operations.isEmpty)
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/volume", "10")) == "device_offline")
        let unknown = h.publish("cast2mqtt/attic/command/play", "")
        #expect(unknown.json("cast2mqtt/attic/response")?["error"]?["code"] == .string("unknown_device"))
    }

    @Test func commandsArrivingAtStartupWaitForTheirDevice() throws {
        var h = Harness()
        // Delivered by the persistent session before discovery found anything.
        let early = h.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": "q", "percent": 30}"#)
        #expect(early.publications.isEmpty)
        #expect(early.operations.isEmpty)
        let unknown = h.publish("cast2mqtt/attic/command/play", "")
        #expect(unknown.publications.isEmpty)
        // The device is found and comes online: the held command runs then.
        h.now = t0.addingTimeInterval(2)
        let online = h.online()
        let volume = try #require(online.operations.first { $0.kind == .setVolume(level: 0.3) })
        let done = h.complete(volume, .receiverStatus(receiver(level: 0.3)))
        #expect(done.json(responseTopic)?["id"] == .string("q"))
        #expect(done.json(responseTopic)?["status"] == .string("ok"))
        // The window closes: what is still held is answered as usual.
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 0.5)
        #expect(h.feed(.tick).json("cast2mqtt/attic/response")?["error"]?["code"] == .string("unknown_device"))
        // After it, a device that was online and went offline fails at once.
        h.feed(.castDisconnected(tvID, reason: "test"))
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/play", "")) == "device_offline")
    }

    @Test func completionGivesExactlyOneResponse() throws {
        var h = Harness()
        h.online()
        let out = h.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": 7, "percent": 60}"#)
        let op = try #require(out.operations.first)
        let done = h.complete(op, .receiverStatus(receiver(level: 0.6)))
        #expect(done.on(responseTopic).count == 1)
        let response = try #require(done.json(responseTopic))
        #expect(response["command"] == .string("volume"))
        #expect(response["id"] == .number(7))
        #expect(response["status"] == .string("ok"))
        #expect(response["data"]?["level"] == .number(0.6))
        #expect(done.on(responseTopic).first?.retain == false)
        // The receiver document was updated from the answering status.
        #expect(done.json("cast2mqtt/living_room_tv/receiver")?["volume"]?["level"] == .number(0.6))
        // A second completion of the same token is ignored.
        let again = h.complete(op, .receiverStatus(receiver(level: 0.6)))
        #expect(again.on(responseTopic).isEmpty)
    }

    @Test func mqtt5ResponseTopic() throws {
        var h = Harness()
        h.online()
        let out = h.publish("cast2mqtt/living_room_tv/command/pause", #"{"id": "x"}"#, responseTopic: "client/42/reply", correlation: [1, 2, 3])
        let op = try #require(out.operations.first)
        let done = h.complete(op, .mediaStatus([playing(state: "PAUSED")]))
        #expect(done.on(responseTopic).isEmpty)
        let reply = try #require(done.on("client/42/reply").first)
        #expect(reply.correlationData == [1, 2, 3])
        #expect(json(reply)?["id"] == .string("x"))
        #expect(json(reply)?["data"]?["state"] == .string("paused"))
        // Errors go there too.
        let bad = h.publish("cast2mqtt/living_room_tv/command/rate", "7", responseTopic: "client/42/reply", correlation: [9])
        #expect(bad.on("client/42/reply").first?.correlationData == [9])
    }

    @Test func deviceErrorsMapToCodes() throws {
        var h = Harness()
        h.online()
        let out = h.publish("cast2mqtt/living_room_tv/command/load", #"{"id": "a1", "url": "http://x/broken.mp4"}"#)
        let op = try #require(out.operations.first)
        let failed = h.feed(.operationCompleted(op.token, .failure(BridgeError(.loadFailed, "the receiver could not load the media (detailed error 104)"))))
        #expect(failed.json(responseTopic)?["error"]?["code"] == .string("load_failed"))
        #expect(failed.json(responseTopic)?["id"] == .string("a1"))
        #expect(failed.events("cast2mqtt/living_room_tv/event") == ["load_failed"])
    }

    @Test func launchThenLoadGetsADeadlinePerStep() throws {
        var h = Harness { $0.cast.requestTimeout = 10 }
        h.online(status: receiver(app: nil))
        let out = h.publish("cast2mqtt/living_room_tv/command/load", "http://192.0.2.5/a.mp3")
        #expect(out.operations.count == 1)
        // A slow launch (up to 10 s) and a slow load (up to 10 s) still get their answer.
        h.now = t0.addingTimeInterval(15)
        #expect(h.feed(.tick).on(responseTopic).isEmpty)
        h.now = t0.addingTimeInterval(21.5)
        #expect(h.feed(.tick).json(responseTopic)?["error"]?["code"] == .string("timeout"))
    }

    @Test func timeoutResponse() throws {
        var h = Harness { $0.cast.requestTimeout = 10 }
        h.online()
        let out = h.publish("cast2mqtt/living_room_tv/command/play", #"{"id": 5}"#)
        let op = try #require(out.operations.first)
        #expect(op.timeout == .seconds(10))
        h.now = t0.addingTimeInterval(10.5)
        // The I/O side times out each Cast request at 10 s; the bridge waits a second longer so
        // that the device-side answer (or the I/O side's own timeout) comes first.
        #expect(h.feed(.tick).on(responseTopic).isEmpty)
        h.now = t0.addingTimeInterval(11.5)
        let timedOut = h.feed(.tick)
        #expect(timedOut.json(responseTopic)?["error"]?["code"] == .string("timeout"))
        #expect(timedOut.json(responseTopic)?["id"] == .number(5))
        // The late answer produces no second response.
        #expect(h.complete(op, .mediaStatus([playing()])).on(responseTopic).isEmpty)
    }

    @Test func disconnectFailsPendingCommands() throws {
        var h = Harness()
        h.online()
        let op = try #require(h.publish("cast2mqtt/living_room_tv/command/play", "").operations.first)
        let out = h.feed(.castDisconnected(tvID, reason: "heartbeat timeout"))
        #expect(out.json(responseTopic)?["error"]?["code"] == .string("device_offline"))
        #expect(h.complete(op, .mediaStatus([])).on(responseTopic).isEmpty)
    }

    @Test func refreshReadsReceiverThenMedia() throws {
        var h = Harness()
        h.online()
        let first = try #require(h.publish("cast2mqtt/living_room_tv/command/refresh", #"{"id": 1}"#).operations.first)
        #expect(first.kind == .getReceiverStatus)
        let second = h.complete(first, .receiverStatus(receiver()))
        #expect(second.on(responseTopic).isEmpty)
        let mediaOp = try #require(second.operations.first)
        #expect(mediaOp.kind == .getMediaStatus)
        let done = h.complete(mediaOp, .mediaStatus([playing()]))
        #expect(done.json(responseTopic)?["data"]?["state"] == .string("playing"))
    }

    /// `bridge/request/refresh` sent again and again while a device is busy leaves one refresh
    /// waiting for it, not one per request: waiting work outside the command bound is bounded.
    @Test func bridgeRefreshesWaitAtMostOncePerDevice() throws {
        var h = Harness()
        h.online()
        let play = try #require(h.publish("cast2mqtt/living_room_tv/command/play", "").operations.first)
        for n in 1...5 {
            let out = h.publish("cast2mqtt/bridge/request/refresh", #"{"id": \#(n)}"#)
            #expect(out.operations.isEmpty, "the device is busy: the refresh waits")
            #expect(out.json("cast2mqtt/bridge/response/refresh")?["status"] == .string("ok"))
        }
        // The play is answered: the one waiting refresh runs (receiver, then media), then nothing.
        let receiverOp = try #require(h.complete(play, .mediaStatus([playing()])).operations.first)
        #expect(receiverOp.kind == .getReceiverStatus)
        let mediaOp = try #require(h.complete(receiverOp, .receiverStatus(receiver())).operations.first)
        #expect(mediaOp.kind == .getMediaStatus)
        #expect(h.complete(mediaOp, .mediaStatus([playing()])).operations.isEmpty, "a second refresh ran")
    }

    @Test func sendReplyData() throws {
        var h = Harness()
        h.online()
        let op = try #require(h.publish("cast2mqtt/living_room_tv/command/send",
                                        #"{"namespace": "urn:x-cast:com.example.app", "data": {"q": 1}, "reply": true}"#).operations.first)
        let done = h.complete(op, .appMessage(.string(#"{"answer": 42}"#)))
        #expect(done.json(responseTopic)?["data"]?["data"]?["answer"] == .number(42))
    }

    @Test func skipAdRules() {
        var h = Harness()
        var status = playing(commands: 274447 | MediaCommands.skipAd.rawValue)
        status.breakStatus = BreakStatus(breakId: "b", breakClipId: "c", currentBreakTime: 2, currentBreakClipTime: 2, whenSkippable: 5)
        h.online(media: [status])
        #expect(errorCode(h.publish("cast2mqtt/living_room_tv/command/skip_ad", "")) == "invalid_player_state")
        h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, breakStatus: BreakStatus(breakId: "b", breakClipId: "c",
                                                                                           currentBreakClipTime: 6, whenSkippable: 5))]))
        #expect(single(h.publish("cast2mqtt/living_room_tv/command/skip_ad", ""))?.kind == .media(.skipAd(mediaSessionId: 1)))
    }
}

/// Every response is also reported as an outcome (name, code, arrival time) for the metrics.
@Suite struct CommandOutcomeTests {
    @Test func everyResponseHasOneOutcome() throws {
        var h = Harness()
        h.online()
        h.now = t0.addingTimeInterval(5)
        let start = h.publish("cast2mqtt/living_room_tv/command/volume", "40")
        #expect(start.outcomes.isEmpty, "nothing is answered before the device confirms")
        let op = try #require(start.operations.first)
        h.now = t0.addingTimeInterval(6)
        let done = h.complete(op, .receiverStatus(receiver(level: 0.4)))
        #expect(done.outcomes == [CommandOutcome(command: "volume", code: "ok", receivedAt: t0.addingTimeInterval(5))])
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        let bad = h.publish("cast2mqtt/nope/command/play", "")
        #expect(bad.outcomes.map(\.code) == ["unknown_device"])
        let request = h.publish("cast2mqtt/bridge/request/devices", "")
        #expect(request.outcomes.map(\.command) == ["devices"])
        #expect(h.core.gauges == CoreGauges(devices: 1, online: 1, waiting: 0, inFlight: 0))
    }
}

/// The gauges' online count is kept as snapshots arrive (not recounted each tick); it must agree
/// with the devices' links through connects, drops, reconnects and removals.
@Suite struct OnlineGaugeTests {
    @Test func onlineCountFollowsLinksAndRemovals() {
        var h = Harness()
        #expect(h.core.gauges.online == 0)
        h.online()
        h.online(speakerDescriptor(), status: receiver(), media: nil)
        #expect(h.core.gauges == CoreGauges(devices: 2, online: 2, waiting: 0, inFlight: 0))
        h.feed(CastEvent.castConnected(tvID))  // the same link again: no double count
        #expect(h.core.gauges.online == 2)
        h.feed(CastEvent.castDisconnected(tvID, reason: "closed"))
        #expect(h.core.gauges.online == 1)
        h.feed(CastEvent.castDisconnected(tvID, reason: "closed"))
        #expect(h.core.gauges.online == 1)
        h.feed(CastEvent.castConnected(tvID))
        h.feed(CastEvent.receiverStatus(tvID, receiver()))
        #expect(h.core.gauges.online == 2)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        h.publish("cast2mqtt/bridge/request/remove", #"{"device": "living_room_tv"}"#)
        #expect(h.core.gauges == CoreGauges(devices: 1, online: 1, waiting: 0, inFlight: 0))
        h.feed(CastEvent.castDisconnected(speakerID, reason: "closed"))
        h.publish("cast2mqtt/bridge/request/remove", #"{"device": "kitchen_speaker"}"#)
        #expect(h.core.gauges == CoreGauges(devices: 0, online: 0, waiting: 0, inFlight: 0))
    }
}
