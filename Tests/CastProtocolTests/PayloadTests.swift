import Testing

@testable import CastProtocol

@Suite struct ReceiverPayloadTests {
    // Shaped like a capture from a Chromecast running the Default Media Receiver.
    let receiverStatus = """
    {"requestId":3,"status":{"applications":[{"appId":"CC1AD845","appType":"WEB","displayName":"Default Media Receiver",
    "iconUrl":"","isIdleScreen":false,"launchedFromCloud":false,"namespaces":[{"name":"urn:x-cast:com.google.cast.debugoverlay"},
    {"name":"urn:x-cast:com.google.cast.cac"},{"name":"urn:x-cast:com.google.cast.media"}],
    "sessionId":"7E2A1B9C-1234-4D6B-9F00-5A3C2B1D0E9F","statusText":"Default Media Receiver",
    "transportId":"7E2A1B9C-1234-4D6B-9F00-5A3C2B1D0E9F","universalAppId":"CC1AD845","futureField":{"x":1}}],
    "isActiveInput":true,"isStandBy":false,"userEq":{},"volume":{"controlType":"attenuation","level":0.4000000059604645,
    "muted":false,"stepInterval":0.05000000074505806}},"type":"RECEIVER_STATUS"}
    """

    @Test func decodesRealWorldReceiverStatus() throws {
        guard case .status(let id, let status) = try ReceiverResponse.parse(.string(receiverStatus)) else {
            Issue.record("not a status")
            return
        }
        #expect(id == 3)
        let app = try #require(status.activeApp)
        #expect(app.appId == "CC1AD845")
        #expect(app.transportId == "7E2A1B9C-1234-4D6B-9F00-5A3C2B1D0E9F")
        #expect(app.namespaces.contains(CastNamespace.media))
        #expect(status.isActiveInput == true)
        #expect(status.volume?.controlType == "attenuation")
        #expect(abs((status.volume?.level ?? 0) - 0.4) < 0.0001)
    }

    @Test func missingActiveInputIsUnknownNotFalse() throws {
        let text = #"{"type":"RECEIVER_STATUS","requestId":0,"status":{"volume":{"level":1,"muted":false}}}"#
        guard case .status(let id, let status) = try ReceiverResponse.parse(.string(text)) else {
            Issue.record("not a status")
            return
        }
        #expect(id == 0)
        #expect(status.isActiveInput == nil)
        #expect(status.isStandBy == nil)
        #expect(status.applications.isEmpty)
        #expect(status.activeApp == nil)
    }

    @Test func backdropCountsAsNoApp() throws {
        let text = #"{"type":"RECEIVER_STATUS","requestId":0,"status":{"applications":[{"appId":"E8C28D3C","isIdleScreen":true,"namespaces":[],"sessionId":"s","transportId":"t"}]}}"#
        guard case .status(_, let status) = try ReceiverResponse.parse(.string(text)) else {
            Issue.record("not a status")
            return
        }
        #expect(status.runningApp?.appId == CastAppID.backdrop)
        #expect(status.activeApp == nil)
    }

    @Test func decodesErrors() throws {
        #expect(try ReceiverResponse.parse(.string(#"{"type":"LAUNCH_ERROR","requestId":5,"reason":"NOT_FOUND"}"#))
                == .launchError(requestId: 5, reason: "NOT_FOUND", extendedError: nil))
        #expect(try ReceiverResponse.parse(.string(#"{"type":"INVALID_REQUEST","requestId":6,"reason":"INVALID_COMMAND"}"#))
                == .invalidRequest(requestId: 6, reason: "INVALID_COMMAND"))
        #expect(try ReceiverResponse.parse(.string(#"{"type":"LAUNCH_STATUS","launchRequestId":7,"status":"USER_ALLOWED"}"#))
                == .launchStatus(requestId: 7, status: "USER_ALLOWED"))
        #expect(try ReceiverResponse.parse(.string(#"{"type":"SOMETHING_NEW","requestId":1}"#)) == .unknown(type: "SOMETHING_NEW"))
        #expect(throws: (any Error).self) { try ReceiverResponse.parse(.string("not json")) }
    }

    @Test func encodesRequests() {
        #expect(ReceiverRequest.launch(appId: "CC1AD845").json(requestId: 2) == #"{"appId":"CC1AD845","requestId":2,"type":"LAUNCH"}"#)
        #expect(ReceiverRequest.setVolume(level: 1.7).json(requestId: 3) == #"{"requestId":3,"type":"SET_VOLUME","volume":{"level":1}}"#)
        #expect(ReceiverRequest.setMuted(true).json(requestId: 4) == #"{"requestId":4,"type":"SET_VOLUME","volume":{"muted":true}}"#)
        #expect(ReceiverRequest.stop(sessionId: "abc").json(requestId: 5) == #"{"requestId":5,"sessionId":"abc","type":"STOP"}"#)
        #expect(ReceiverRequest.getAppAvailability(appIds: ["A", "B"]).json(requestId: 6)
                == #"{"appId":["A","B"],"requestId":6,"type":"GET_APP_AVAILABILITY"}"#)
    }

    @Test func connectionMessagesRoundTrip() {
        let connect = ConnectionMessage.connect(userAgent: "cast2mqtt", connType: 0, senderInfo: nil, protocolVersions: nil)
        #expect(ConnectionMessage.parse(.string(connect.json())) == connect)
        #expect(ConnectionMessage.parse(.string(#"{"type":"CLOSE"}"#)) == .close(reasonCode: nil))
        #expect(HeartbeatMessage.parse(.string(#"{"type":"PING"}"#)) == .ping)
        #expect(HeartbeatMessage.parse(.binary([1])) == nil)
        // Not the canonical bytes: the JSON parser decides.
        #expect(HeartbeatMessage.parse(.string(#"{ "type" : "PONG" }"#)) == .pong)
        #expect(HeartbeatMessage.parse(.string(#"{"type":"PINGS"}"#)) == nil)
    }
}

@Suite struct MediaPayloadTests {
    let fullStatus = """
    {"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playbackRate":1.5,"playerState":"PLAYING",
    "currentTime":31.2,"supportedMediaCommands":274447,"volume":{"level":1,"muted":false},"activeTrackIds":[],
    "media":{"contentId":"https://example.invalid/a.mp3","streamType":"BUFFERED","contentType":"audio/mpeg",
    "metadata":{"metadataType":3,"title":"Song","artist":"Band","albumName":"Album","albumArtist":"Band",
    "trackNumber":4,"images":[{"url":"https://example.invalid/cover.jpg","width":480,"height":360}]},"duration":212.5},
    "currentItemId":1,"items":[{"itemId":1,"media":{"contentId":"https://example.invalid/a.mp3"},"autoplay":true}],
    "repeatMode":"REPEAT_OFF","breakStatus":{"breakId":"b1","breakClipId":"c1","currentBreakTime":2,"currentBreakClipTime":2,"whenSkippable":5},
    "videoInfo":{"width":1920,"height":1080,"hdrType":"sdr"}}]}
    """

    @Test func decodesEveryField() throws {
        guard case .status(let id, let statuses) = try MediaResponse.parse(.string(fullStatus)) else {
            Issue.record("not a status")
            return
        }
        #expect(id == 0)
        let s = try #require(statuses.first)
        #expect(s.mediaSessionId == 1)
        #expect(s.playerState == "PLAYING")
        #expect(s.playbackRate == 1.5)
        #expect(s.currentTime == 31.2)
        #expect(s.commands.contains(.streamTransfer))
        #expect(s.commands.contains(.playbackRate))
        #expect(s.media?.metadata?.title == "Song")
        #expect(s.media?.metadata?.albumName == "Album")
        #expect(s.media?.metadata?.trackNumber == 4)
        #expect(s.media?.metadata?.images?.first?.width == 480)
        #expect(s.media?.duration == 212.5)
        #expect(s.items?.first?.itemId == 1)
        #expect(s.breakStatus?.whenSkippable == 5)
        #expect(s.videoInfo?.height == 1080)
    }

    @Test func emptyStatusArrayMeansNoSession() throws {
        #expect(try MediaResponse.parse(.string(#"{"type":"MEDIA_STATUS","requestId":9,"status":[]}"#)) == .status(requestId: 9, []))
    }

    @Test func partialStatusMergesOverPrevious() throws {
        guard case .status(_, let first) = try MediaResponse.parse(.string(fullStatus)),
              case .status(_, let second) = try MediaResponse.parse(.string(
                #"{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"PAUSED","currentTime":40}]}"#))
        else {
            Issue.record("not statuses")
            return
        }
        let merged = second[0].merged(over: first[0])
        #expect(merged.playerState == "PAUSED")
        #expect(merged.currentTime == 40)
        #expect(merged.media?.metadata?.title == "Song")
        #expect(merged.playbackRate == 1.5)
        #expect(merged.breakStatus == nil)  // a new player state does not keep an old break
        // A different media session replaces everything.
        var other = second[0]
        other.mediaSessionId = 2
        #expect(other.merged(over: first[0]).media == nil)
    }

    @Test func idleReasonFollowsPlayerState() {
        let idle = MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "FINISHED")
        let playing = MediaStatus(mediaSessionId: 1, playerState: "PLAYING")
        #expect(playing.merged(over: idle).idleReason == nil)
        #expect(MediaStatus(mediaSessionId: 1, currentTime: 3).merged(over: idle).idleReason == "FINISHED")
    }

    @Test func deprecatedMetadataAliases() throws {
        let m = try CastJSON.decode(MediaMetadata.self, from: #"{"metadataType":2,"episodeNumber":3,"seasonNumber":"2","songName":"x","artistName":"y"}"#)
        #expect(m.episode == 3)
        #expect(m.season == 2)
        #expect(m.title == "x")
        #expect(m.artist == "y")
    }

    @Test func wrongTypesAreIgnoredNotFatal() throws {
        let s = try CastJSON.decode(MediaStatus.self, from: #"{"mediaSessionId":"x","playerState":5,"currentTime":"a","playbackRate":1}"#)
        #expect(s.mediaSessionId == nil)
        #expect(s.playerState == nil)
        #expect(s.playbackRate == 1)
    }

    @Test func decodesErrorsAndSessionState() throws {
        let failed = try MediaResponse.parse(.string(#"{"type":"LOAD_FAILED","requestId":4,"itemId":1,"detailedErrorCode":104}"#))
        #expect(failed == .error(MediaError(type: "LOAD_FAILED", requestId: 4, detailedErrorCode: 104, itemId: 1)))
        let state = try MediaResponse.parse(.string(#"{"type":"SESSION_STATE","requestId":8,"sessionState":{"loadRequestData":{"currentTime":3}}}"#))
        guard case .sessionState(8, let value) = state else {
            Issue.record("not session state")
            return
        }
        #expect(value["loadRequestData"]?["currentTime"]?.doubleValue == 3)
    }

    @Test func encodesMediaRequests() throws {
        let load = LoadRequest(media: MediaInformation(contentId: "http://h/a.mp3", contentType: "audio/mpeg",
                                                        metadata: MediaMetadata(metadataType: 3, title: "T")),
                               currentTime: 5, playbackRate: 1.25)
        let json = MediaRequest.load(load).json(requestId: 11)
        let value = try CastJSON.decode(JSONValue.self, from: json)
        #expect(value["type"]?.stringValue == "LOAD")
        #expect(value["requestId"]?.intValue == 11)
        #expect(value["media"]?["contentId"]?.stringValue == "http://h/a.mp3")
        #expect(value["media"]?["metadata"]?["title"]?.stringValue == "T")
        #expect(value["currentTime"]?.doubleValue == 5)
        #expect(value["playbackRate"]?.doubleValue == 1.25)
        #expect(value["autoplay"]?.boolValue == true)
        #expect(MediaRequest.seek(mediaSessionId: 1, currentTime: nil, relativeTime: -10, resumeState: "PLAYBACK_PAUSE").json(requestId: 2)
                == #"{"mediaSessionId":1,"relativeTime":-10,"requestId":2,"resumeState":"PLAYBACK_PAUSE","type":"SEEK"}"#)
        #expect(MediaRequest.setPlaybackRate(mediaSessionId: 3, rate: 1.5).json(requestId: 4)
                == #"{"mediaSessionId":3,"playbackRate":1.5,"requestId":4,"type":"SET_PLAYBACK_RATE"}"#)
    }

    @Test func multizoneStatus() throws {
        let text = #"{"type":"MULTIZONE_STATUS","requestId":2,"status":{"devices":[{"deviceId":"abc","name":"Kitchen","capabilities":2052,"volume":{"level":0.5,"muted":false}}],"isMultichannel":false}}"#
        guard case .status(2, let devices, false, _) = try MultizoneMessage.parse(.string(text)) else {
            Issue.record("not multizone status")
            return
        }
        #expect(devices.first?.name == "Kitchen")
        #expect(try MultizoneMessage.parse(.string(#"{"type":"DEVICE_REMOVED","deviceId":"abc"}"#)) == .deviceRemoved(deviceId: "abc"))
    }
}

/// The routing header of a reply is read by the one-pass scanner, with `JSONDecoder` deciding
/// what the scanner is unsure of; either way the reply keeps its id and a non-object is refused.
@Suite struct ResponseHeaderTests {
    @Test func headersTheScannerLeavesToJSONDecoderStillRoute() throws {
        // An escaped type and a float id are the scanner's `unsure` cases.
        #expect(try MediaResponse.parse(.string(#"{"type":"MEDIA_STAT\u0055S","requestId":4.0,"status":[]}"#))
                == .status(requestId: 4, []))
        #expect(try ReceiverResponse.parse(.string(#"{"type":"LAUNCH_ERROR","launchRequestId":9.0,"reason":"X"}"#))
                == .launchError(requestId: 9, reason: "X", extendedError: nil))
    }

    @Test func aPayloadThatIsNotAnObjectIsRefused() {
        for text in ["[1]", "\"MEDIA_STATUS\"", "{\"type\":", "", "null"] {
            #expect(throws: CastMessageError.self) { try MediaResponse.parse(.string(text)) }
            #expect(throws: CastMessageError.self) { try ReceiverResponse.parse(.string(text)) }
        }
    }
}
