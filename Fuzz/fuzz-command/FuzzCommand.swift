import Bridge
import CastProtocol
import Foundation
import FuzzSupport

/// Input: an MQTT topic, a NUL byte, the payload (the topic is decoded as UTF-8 the way the MQTT
/// side decodes it), optionally preceded by a MEDIA_STATUS payload of the TV and a NUL byte. Examples: `cast2mqtt/living_room_tv/command/seek\0{"position": 30}`,
/// `cast2mqtt/bridge/request/transfer\0{"from":"kitchen_speaker","to":"living_room_tv"}`.
///
/// The message goes through `BridgeCore.handle(.mqttMessage)`, the daemon's path: topic grammar,
/// command parser, bridge requests, and the command's execution against two online devices (a TV
/// playing media in the Default Media Receiver, an idle speaker). Every operation it asks for is
/// answered with a plausible result and the TV's status, for up to four rounds, then a clock tick
/// a minute later times out whatever still waits.
func fuzzCommand(_ input: UnsafeRawBufferPointer) {
    var core = onlineCore
    var message = input
    // Optional device state first: an input that starts with `{` is a MEDIA_STATUS payload from the
    // TV (parsed like the client parses it), a NUL, then the topic and payload as above.
    if input.first == UInt8(ascii: "{"), let nul = input.firstIndex(of: 0) {
        let status = String(decoding: input[..<nul], as: UTF8.self)
        if case .status(_, let list)? = try? MediaResponse.parse(.string(status)) {
            // Through the session machine, as the client merges it.
            var session = tvSession
            for case .publish(let snapshot) in session.mediaStatus(list.first, now: t0) {
                _ = core.handle(.device(tvID, snapshot), now: t0)
            }
        }
        message = UnsafeRawBufferPointer(rebasing: input[(nul + 1)...])
    }
    let (topicBytes, payload) = splitAtFirstNUL(message)
    checkJSONParser(payload)
    let topic = String(decoding: topicBytes, as: UTF8.self)
    var out = core.handle(.mqttMessage(topic: topic, payload: payload, responseTopic: nil, correlationData: nil), now: t0)
    for _ in 0..<4 where !out.operations.isEmpty {
        var next = BridgeOutput()
        for op in out.operations {
            next.operations += core.handle(.operationCompleted(op.deviceID, op.token, .success(answer(op.kind))), now: t0).operations
        }
        // The device's state after it acted, as the client reports it.
        next.operations += core.handle(.device(tvID, snapshot(tvStatus, media: playing)), now: t0).operations
        out = next
    }
    _ = core.handle(.tick, now: t0.addingTimeInterval(60))
}

private let t0 = Date(timeIntervalSince1970: 1_800_000_000)
private let tvID = "0123456789abcdef0123456789abcdef"
private let speakerID = "fedcba9876543210fedcba9876543210"

private let dmr = ReceiverApplication(appId: "CC1AD845", displayName: "Default Media Receiver",
                                      namespaces: [CastNamespace.media, "urn:x-cast:com.example.app"],
                                      sessionId: "session-1", statusText: "Casting", transportId: "transport-1")
private let tvStatus = ReceiverStatus(applications: [dmr], volume: ReceiverVolume(controlType: "attenuation", level: 0.4,
                                                                                  muted: false, stepInterval: 0.05))
private let playing = MediaStatus(
    mediaSessionId: 1,
    media: MediaInformation(contentId: "http://192.0.2.5/song.mp3", streamType: "BUFFERED", contentType: "audio/mpeg",
                            metadata: MediaMetadata(metadataType: 3, title: "Song", artist: "Artist"), duration: 212.5),
    playerState: "PLAYING", currentTime: 31.2, playbackRate: 1, supportedMediaCommands: 274447)

/// An online device's snapshot (the first connection).
private func snapshot(_ status: ReceiverStatus, media: MediaStatus?) -> DeviceSnapshot {
    DeviceSnapshot(generation: 1, link: .online, receiver: status, media: media, positionAt: media == nil ? nil : t0)
}

/// The TV's session machine: online, the Default Media Receiver joined and playing.
private let tvSession: CastSessionMachine = {
    var session = CastSessionMachine()
    _ = session.connectionAnswered()
    _ = session.receiverStatus(tvStatus, now: t0)
    _ = session.mediaStatus(playing, now: t0)
    return session
}()

/// What a device would plausibly answer to each kind of operation (statuses arrive as events).
private func answer(_ kind: CastOperationKind) -> OperationResult {
    switch kind {
    case .send(_, _, _, let awaitReply): return awaitReply ? .appMessage(.string(#"{"type":"PONG"}"#)) : .done
    case .storeSession: return .sessionState(.object(["loadRequestData": .object([:])]))
    default: return .done
    }
}

/// A core with the TV (playing) and the speaker (idle) online: built once, copied per input.
private let onlineCore: BridgeCore = {
    var core = BridgeCore(configuration: BridgeConfiguration(), startedAt: t0)
    let devices = [
        (DeviceDescriptor(id: tvID, friendlyName: "Living Room TV", model: "Chromecast Ultra", manufacturer: "Google Inc.",
                          castType: .video, host: "192.0.2.10", port: 8009, capabilities: ["video_out", "audio_out"],
                          source: .mdns), tvStatus),
        (DeviceDescriptor(id: speakerID, friendlyName: "Kitchen Speaker", model: "Google Home", manufacturer: "Google Inc.",
                          castType: .audio, host: "192.0.2.11", port: 8009, capabilities: ["audio_out"], source: .static),
         ReceiverStatus(applications: [], volume: ReceiverVolume(controlType: "attenuation", level: 0.2, muted: false))),
    ]
    _ = core.handle(.mqttConnected, now: t0)
    for (descriptor, status) in devices {
        _ = core.handle(.deviceDiscovered(descriptor), now: t0)
        _ = core.handle(.device(descriptor.id, snapshot(status, media: status.activeApp == nil ? nil : playing)), now: t0)
    }
    // Past the startup hold: commands run at once.
    _ = core.handle(.tick, now: t0.addingTimeInterval(30))
    return core
}()
