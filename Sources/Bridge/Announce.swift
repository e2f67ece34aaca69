import CastProtocol
import Foundation

/// `announce`: play a short clip at a temporary volume, then restore what was there before
/// (the previous app and media at its position and play state, the previous volume and mute).
///
/// Phases: `before` (set volume, load the clip; the response is sent when the clip's LOAD is
/// confirmed), `playing` (waiting for the clip to end: media IDLE, another media session, or a
/// deadline of the clip's duration + request_timeout, at most 10 minutes), `restoring` (one
/// operation after another; failures are logged and the next step still runs).
struct AnnounceJob: Sendable {
    enum Phase: Sendable { case before, playing, restoring }
    var ctx: CommandContext
    var device: DeviceID
    var phase: Phase = .before
    var steps: [CastOperationKind]
    var previousLevel: Double?
    var previousMuted: Bool?
    var changedVolume: Bool
    var previousApp: String?
    var previousMedia: LoadRequest?
    var clipSession: Int?
    var deadline: Date?
}

extension BridgeCore {
    static let maxAnnounceSeconds = 600.0

    mutating func startAnnounce(_ ctx: CommandContext, device id: DeviceID, _ a: AnnounceCommand, now: Date,
                                _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        if announcements[id] != nil {
            respond(ctx, .failure(BridgeError(.invalidPlayerState, "an announcement is already playing on \(device.topic)")), &out)
            return
        }
        let volume = device.receiver?.volume
        var previousMedia: LoadRequest?
        if let media = device.media, let info = media.effectiveMedia, !info.contentId.isEmpty,
           ["PLAYING", "PAUSED", "BUFFERING"].contains(media.playerState ?? "") {
            previousMedia = LoadRequest(media: info, autoplay: media.playerState != "PAUSED",
                                        currentTime: device.estimatedPosition(now: now), playbackRate: media.playbackRate,
                                        customData: media.customData)
        }
        var steps: [CastOperationKind] = []
        if let level = a.volume {
            if volume?.muted == true { steps.append(.setMuted(false)) }
            steps.append(.setVolume(level: level))
        }
        let clip = MediaInformation(contentId: a.url, streamType: "BUFFERED",
                                    contentType: a.contentType ?? MediaBuilder.guessContentType(a.url),
                                    metadata: a.title.map { MediaMetadata(metadataType: 0, title: $0) })
        steps.append(.load(LoadRequest(media: clip, autoplay: true), appId: CastAppID.defaultMediaReceiver))
        let job = AnnounceJob(ctx: ctx, device: id, steps: steps, previousLevel: volume?.level, previousMuted: volume?.muted,
                              changedVolume: a.volume != nil, previousApp: device.activeApp?.appId, previousMedia: previousMedia)
        runNextAnnounceStep(job, now: now, &out)
    }

    mutating func runNextAnnounceStep(_ job: AnnounceJob, now: Date, _ out: inout BridgeOutput) {
        var job = job
        guard !job.steps.isEmpty else {
            if job.phase == .restoring { announcements.removeValue(forKey: job.device) }
            return
        }
        let kind = job.steps.removeFirst()
        announcements[job.device] = job
        enqueue(job.device, kind, purpose: .announce(job), now: now, &out)
    }

    mutating func announceStep(_ job: AnnounceJob, device id: DeviceID, _ result: Result<OperationResult, BridgeError>,
                               now: Date, _ out: inout BridgeOutput) {
        var job = job
        switch job.phase {
        case .before:
            if case .failure(let e) = result {
                respond(job.ctx, .failure(e), &out)
                beginRestore(&job, now: now, &out)
                return
            }
            if !job.steps.isEmpty { runNextAnnounceStep(job, now: now, &out); return }
            // The clip's LOAD was confirmed.
            let media = devices[id]?.media
            job.clipSession = media?.mediaSessionId
            let duration = media?.effectiveMedia?.duration ?? Self.maxAnnounceSeconds
            job.deadline = now.addingTimeInterval(min(duration + configuration.cast.requestTimeout, Self.maxAnnounceSeconds))
            job.phase = .playing
            announcements[id] = job
            respond(job.ctx, .success(.object(["state": .string(devices[id]?.stateWord ?? "off"), "restoring": .bool(true)])), &out)
        case .playing:
            break
        case .restoring:
            if case .failure(let e) = result { out.logs.append("announce: restoring \(topicName(id)) step failed: \(e)") }
            runNextAnnounceStep(job, now: now, &out)
        }
    }

    /// Watches the device's media while a clip plays.
    mutating func announceObserved(_ id: DeviceID, media: MediaStatus?, now: Date, _ out: inout BridgeOutput) {
        guard var job = announcements[id], job.phase == .playing else { return }
        let ended = media == nil || media?.playerState == "IDLE" || (job.clipSession != nil && media?.mediaSessionId != job.clipSession)
        if ended { beginRestore(&job, now: now, &out) }
    }

    mutating func announceTick(now: Date, _ out: inout BridgeOutput) {
        for id in announcements.keys.sorted() {
            guard var job = announcements[id], job.phase == .playing, let deadline = job.deadline, deadline <= now else { continue }
            beginRestore(&job, now: now, &out)
        }
    }

    mutating func beginRestore(_ job: inout AnnounceJob, now: Date, _ out: inout BridgeOutput) {
        job.phase = .restoring
        var steps: [CastOperationKind] = []
        if job.changedVolume {
            if let level = job.previousLevel { steps.append(.setVolume(level: level)) }
            if let muted = job.previousMuted, muted { steps.append(.setMuted(true)) }
        }
        if let media = job.previousMedia {
            steps.append(.load(media, appId: job.previousApp ?? CastAppID.defaultMediaReceiver))
        } else if let app = job.previousApp, app != CastAppID.defaultMediaReceiver {
            steps.append(.launch(appId: app))
        } else if job.previousApp == nil, let session = devices[job.device]?.activeApp?.sessionId {
            steps.append(.stopApp(sessionId: session))
        }
        job.steps = steps
        guard devices[job.device]?.online == true, !steps.isEmpty else {
            announcements.removeValue(forKey: job.device)
            return
        }
        runNextAnnounceStep(job, now: now, &out)
    }
}
