import CastClient
import CastProtocol
import CastSimulator
import Testing

@Suite(.timeLimit(.minutes(1)))
struct ClientAPITests {
    @Test func connectsOverTLS() async throws {
        try await withHarness { h in
            try await h.connect()
            let status = try await h.client.receiverStatus(after: h.client.requests.getReceiverStatus())
            #expect(status.runningApp?.appId == CastAppID.backdrop)
            #expect(status.activeApp == nil)
            // The device saw the platform CONNECT before anything else.
            let first = try #require(h.device.received().first)
            #expect(first.namespace == CastNamespace.connection)
            #expect(first.type == "CONNECT")
        }
    }

    @Test func requestsBeforeConnectingFailWithNotConnected() async throws {
        try await withHarness { h in
            await #expect(throws: CastError.self) { try await h.client.requests.getReceiverStatus().get() }
            do {
                _ = try await h.client.requests.getReceiverStatus().get()
            } catch let error as CastError {
                #expect(error.code == .notConnected)
            }
        }
    }

    @Test func launchLoadAndControlMedia() async throws {
        try await withHarness { h in
            try await h.connect()
            let app = try await h.client.requests.launch(appId: CastAppID.defaultMediaReceiver).get()
            #expect(app.appId == CastAppID.defaultMediaReceiver)
            #expect(await h.log.wait { $0.startedApp == CastAppID.defaultMediaReceiver })

            let media = MediaInformation(contentId: "http://127.0.0.1/a.mp3", contentType: "audio/mpeg",
                                         metadata: MediaMetadata(metadataType: 3, title: "A", artist: "B"), duration: 200)
            let loaded = try await h.client.requests.media(.load(LoadRequest(media: media, currentTime: 10, playbackRate: 1.0))).get()
            #expect(loaded?.playerState == "PLAYING")
            #expect(loaded?.media?.metadata?.title == "A")

            var status = try await h.client.media { .pause(mediaSessionId: $0) }
            #expect(status?.playerState == "PAUSED")
            status = try await h.client.media { .play(mediaSessionId: $0) }
            #expect(status?.playerState == "PLAYING")
            // Seeks while paused: the position does not move with the wall clock between them (a
            // busy machine made a relative seek land seconds off).
            status = try await h.client.media { .pause(mediaSessionId: $0) }
            #expect(status?.playerState == "PAUSED")
            status = try await h.client.media { .seek(mediaSessionId: $0, currentTime: 100, relativeTime: nil, resumeState: nil) }
            #expect(abs((status?.currentTime ?? 0) - 100) < 2)
            status = try await h.client.media { .seek(mediaSessionId: $0, currentTime: nil, relativeTime: -50, resumeState: nil) }
            #expect(abs((status?.currentTime ?? 0) - 50) < 2)
            status = try await h.client.media { .seek(mediaSessionId: $0, currentTime: 60, relativeTime: nil, resumeState: "PLAYBACK_PAUSE") }
            #expect(status?.playerState == "PAUSED")
            status = try await h.client.media { .setPlaybackRate(mediaSessionId: $0, rate: 1.5) }
            #expect(status?.playbackRate == 1.5)

            let volume = try await h.client.receiverStatus(after: h.client.requests.setVolume(level: 0.25))
            #expect(abs((volume.volume?.level ?? 0) - 0.25) < 0.001)
            let muted = try await h.client.receiverStatus(after: h.client.requests.setMuted(true))
            #expect(muted.volume?.muted == true)

            status = try await h.client.media { .stop(mediaSessionId: $0) }
            #expect(status?.playerState == "IDLE")
            let stopped = try await h.client.stopRunningApp()
            #expect(stopped.activeApp == nil)

            // What the device received, in protocol terms.
            let mediaTypes = h.device.received(namespace: CastNamespace.media).compactMap(\.type)
            for type in ["LOAD", "PAUSE", "PLAY", "SEEK", "SET_PLAYBACK_RATE", "STOP"] {
                #expect(mediaTypes.contains(type), "device did not receive \(type)")
            }
            let rate = h.device.received(namespace: CastNamespace.media, type: "SET_PLAYBACK_RATE").last?.json
            #expect(rate?["playbackRate"]?.doubleValue == 1.5)
            let receiverTypes = h.device.received(namespace: CastNamespace.receiver).compactMap(\.type)
            #expect(receiverTypes.contains("LAUNCH"))
            #expect(receiverTypes.contains("SET_VOLUME"))
            #expect(receiverTypes.contains("STOP"))
        }
    }

    @Test func queueLoadNextPrevious() async throws {
        try await withHarness { h in
            try await h.connect()
            _ = try await h.client.requests.launch(appId: CastAppID.defaultMediaReceiver).get()
            let items = (1...3).map { i in
                QueueItem(media: MediaInformation(contentId: "http://127.0.0.1/\(i).mp3", contentType: "audio/mpeg", duration: 100))
            }
            var status = try await h.client.requests.media(.queueLoad(QueueLoadRequest(items: items, startIndex: 0))).get()
            let first = status?.currentItemId
            status = try await h.client.media { .queueNext(mediaSessionId: $0) }
            #expect(status?.currentItemId != first)
            status = try await h.client.media { .queuePrev(mediaSessionId: $0) }
            #expect(status?.currentItemId == first)
        }
    }

    @Test func deviceErrorsAreTyped() async throws {
        try await withHarness { h in
            try await h.connect()
            do {
                _ = try await h.client.requests.launch(appId: "00000000").get()
                Issue.record("launch of an unknown app succeeded")
            } catch let error as CastError {
                #expect(error.code == .launchError)
            }
            // No app: media commands fail locally, nothing is sent.
            do {
                _ = try await h.client.media { .play(mediaSessionId: $0) }
                Issue.record("play without an app succeeded")
            } catch let error as CastError {
                #expect(error.code == .noApp)
            }
            _ = try await h.client.requests.launch(appId: CastAppID.defaultMediaReceiver).get()
            // The device's own refusals (the client sends a request as given: whether there is a
            // media session to control is the bridge's planner's question, BridgeTests).
            do {
                _ = try await h.client.requests.media(.pause(mediaSessionId: 1)).get()
                Issue.record("pause without media succeeded")
            } catch let error as CastError {
                #expect(error.code == .invalidPlayerState)
            }
            let failing = MediaInformation(contentId: "http://127.0.0.1/fail.mp3", contentType: "audio/mpeg")
            do {
                _ = try await h.client.requests.media(.load(LoadRequest(media: failing))).get()
                Issue.record("load of a failing URL succeeded")
            } catch let error as CastError {
                #expect(error.code == .loadFailed)
            }
            try await h.playSomething()
            do {
                _ = try await h.client.requests.media(.play(mediaSessionId: 999)).get()
                Issue.record("play with a wrong media session succeeded")
            } catch let error as CastError {
                #expect(error.code == .invalidRequest)
                #expect(error.reason == "INVALID_MEDIA_SESSION_ID")
            }
            do {
                _ = try await h.client.requests.stopApp(sessionId: "not-a-session").get()
                Issue.record("stop of a wrong session succeeded")
            } catch let error as CastError {
                #expect(error.code == .invalidRequest)
                #expect(error.reason == "INVALID_SESSION_ID")
            }
        }
    }

    @Test func customNamespaceTextBinaryAndReply() async throws {
        try await withHarness { h in
            try await h.connect()
            _ = try await h.client.requests.launch(appId: SimulatedAppID.echo).get()
            let reply = try await h.client.requests.sendAppMessage(namespace: SimulatedAppID.echoNamespace,
                                                          payload: .string(#"{"hello":"world"}"#), awaitReply: .seconds(2)).get()
            #expect(reply == .string(#"{"hello":"world"}"#))
            let binary = try await h.client.requests.sendAppMessage(namespace: SimulatedAppID.echoNamespace,
                                                           payload: .binary([0, 1, 2, 255]), awaitReply: .seconds(2)).get()
            #expect(binary == .binary([0, 1, 2, 255]))
            // Fire and forget, and an unsolicited push from the app arrives as an event.
            _ = try await h.client.requests.sendAppMessage(namespace: SimulatedAppID.echoNamespace, payload: .string("x")).get()
            _ = await h.device.pushAppMessage(payload: .string(#"{"pushed":true}"#))
            #expect(await h.log.wait {
                if case .appMessage(let ns, .string(let text)) = $0 { return ns == SimulatedAppID.echoNamespace && text.contains("pushed") }
                return false
            })
            // A reply that never comes times out.
            do {
                _ = try await h.client.requests.sendAppMessage(namespace: "urn:x-cast:com.example.silent", payload: .string("{}"),
                                                     awaitReply: .milliseconds(300)).get()
                Issue.record("a reply arrived on a namespace nobody answers")
            } catch let error as CastError {
                #expect(error.code == .timeout)
            }
        }
    }

    @Test func oversizedPayloadIsRefusedBeforeSending() async throws {
        try await withHarness { h in
            try await h.connect()
            _ = try await h.client.requests.launch(appId: SimulatedAppID.echo).get()
            let before = h.device.received(namespace: SimulatedAppID.echoNamespace).count
            do {
                _ = try await h.client.requests.sendAppMessage(namespace: SimulatedAppID.echoNamespace,
                                                      payload: .string(String(repeating: "x", count: 70_000))).get()
                Issue.record("a 70 kB message was sent")
            } catch let error as CastError {
                #expect(error.code == .payloadTooLarge)
            }
            #expect(h.device.received(namespace: SimulatedAppID.echoNamespace).count == before)
            #expect(await h.client.isConnected)
        }
    }

    @Test func storeAndResumeSession() async throws {
        try await withHarness { h in
            try await h.connect()
            try await h.playSomething()
            _ = try await h.client.media { .seek(mediaSessionId: $0, currentTime: 42, relativeTime: nil, resumeState: nil) }
            let state = try await h.client.requests.storeSession(mediaSessionId: await h.client.snapshot.device.media?.mediaSessionId ?? 0).get()
            #expect(state["loadRequestData"] != nil)
            _ = try await h.client.media { .stop(mediaSessionId: $0) }
            let resumed = try await h.client.requests.media(.resumeSession(sessionState: state)).get()
            #expect(resumed?.playerState == "PLAYING" || resumed?.playerState == "PAUSED")
            #expect(abs((resumed?.currentTime ?? 0) - 42) < 3)
        }
    }

    @Test func remoteVolumeChangeArrivesOnce() async throws {
        try await withHarness { h in
            try await h.connect()
            await h.log.clear()
            @Sendable func status(at level: Double) -> @Sendable (ClientTransition) -> Bool {
                { if case .receiverStatus(let s) = $0 { abs((s.volume?.level ?? 0) - level) < 0.001 } else { false } }
            }
            await h.device.setVolumeRemotely(level: 0.7)
            #expect(await h.log.wait(status(at: 0.7)))
            // A later change on the same connection: a second status for 0.7 would come before it.
            await h.device.setVolumeRemotely(level: 0.3)
            #expect(await h.log.wait(status(at: 0.3)))
            #expect(await h.log.count(where: status(at: 0.7)) == 1)
            let statuses = await h.log.count { if case .receiverStatus = $0 { return true } else { return false } }
            #expect(statuses == 2)
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ClientAdBreakTests {
    @Test func skipAdDuringASkippableBreak() async throws {
        try await withHarness { h in
            try await h.connect()
            _ = try await h.client.requests.launch(appId: CastAppID.defaultMediaReceiver).get()
            let media = MediaInformation(
                contentId: "http://127.0.0.1/show.mp4", contentType: "video/mp4", duration: 600,
                breaks: .array([.object(["id": .string("b1"), "position": .number(0), "breakClipIds": .array([.string("c1")])])]),
                breakClips: .array([.object(["id": .string("c1"), "duration": .number(30), "whenSkippable": .number(0)])]))
            let loaded = try await h.client.requests.media(.load(LoadRequest(media: media))).get()
            #expect(loaded?.breakStatus?.breakId == "b1")
            let skipped = try await h.client.media { .skipAd(mediaSessionId: $0) }
            #expect(skipped?.breakStatus == nil)
            #expect(h.device.received(namespace: CastNamespace.media, type: "SKIP_AD").count == 1)
        }
    }
}
