import CastProtocol
import Foundation

/// An `announce` in progress on one device.
///
/// Phases: `before` (set volume, load the clip; the response is sent when the clip's LOAD is
/// confirmed), `playing` (waiting for the clip to end: media IDLE, another media session, or a
/// deadline of the clip's duration + request_timeout, at most 10 minutes), `restoring` (one
/// operation after another; failures are logged and the next step still runs).
struct AnnounceJob: Sendable {
    typealias ID = DeviceID
    enum Phase: Sendable { case before, playing, restoring }
    var ctx: CommandContext
    var device: DeviceID
    var phase: Phase = .before
    var steps: [CastOperationKind]
    var previousLevel: Double?
    var previousMuted: Bool?
    var changedVolume: Bool
    var previousApp: String?
    /// What played before, to replay after the clip (MediaReplay).
    var previousMedia: CastOperationKind?
    var clipSession: Int?
    var deadline: Date?
}

/// `announce`: play a short clip at a temporary volume, then restore what was there before (the
/// previous app and media at its position and play state, the previous volume and mute). Owns
/// the announcement of each device.
struct AnnounceJobs: Sendable {
    static let maxSeconds = 600.0
    let requestTimeout: Double
    private var jobs: [AnnounceJob.ID: AnnounceJob] = [:]

    init(requestTimeout: Double) { self.requestTimeout = requestTimeout }

    mutating func start(_ ctx: CommandContext, device: DeviceRecord, _ a: AnnounceCommand, now: Date) -> [JobEffect] {
        if jobs[device.id] != nil {
            return [.respond(ctx, .failure(BridgeError(.invalidPlayerState, "an announcement is already playing on \(device.topic)")))]
        }
        let volume = device.receiver?.volume
        var previousMedia: CastOperationKind?
        if let media = device.media, media.isActive {
            previousMedia = MediaReplay.operation(media, position: device.position(at: now),
                                                  appId: device.activeApp?.appId ?? CastAppID.defaultMediaReceiver)
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
        let job = AnnounceJob(ctx: ctx, device: device.id, steps: steps, previousLevel: volume?.level, previousMuted: volume?.muted,
                              changedVolume: a.volume != nil, previousApp: device.activeApp?.appId, previousMedia: previousMedia)
        return runNextStep(job)
    }

    /// A step of the device's announcement finished.
    mutating func step(_ id: AnnounceJob.ID, _ result: Result<OperationResult, BridgeError>, device: DeviceRecord?,
                       now: Date) -> [JobEffect] {
        guard var job = jobs[id] else { return [] }
        switch job.phase {
        case .before:
            if case .failure(let e) = result {
                return [.respond(job.ctx, .failure(e))] + beginRestore(&job, device: device)
            }
            if !job.steps.isEmpty { return runNextStep(job) }
            // The clip's LOAD was confirmed.
            let media = device?.media
            job.clipSession = media?.mediaSessionId
            let duration = media?.effectiveMedia?.duration ?? Self.maxSeconds
            job.deadline = now.addingTimeInterval(min(duration + requestTimeout, Self.maxSeconds))
            job.phase = .playing
            jobs[id] = job
            return [.respond(job.ctx, .success(.object(["state": .string(device?.stateWord ?? "off"), "restoring": .bool(true)])))]
        case .playing:
            return []
        case .restoring:
            var effects: [JobEffect] = []
            if case .failure(let e) = result { effects.append(.log("announce: restoring \(device?.topic ?? id) step failed: \(e)")) }
            return effects + runNextStep(job)
        }
    }

    /// Watches the device's media while a clip plays.
    mutating func observe(_ change: DeviceChange, device: DeviceRecord, now: Date) -> [JobEffect] {
        guard var job = jobs[change.id], job.phase == .playing else { return [] }
        let media = change.newMedia
        let ended = media == nil || media?.playerState == "IDLE" || (job.clipSession != nil && media?.mediaSessionId != job.clipSession)
        return ended ? beginRestore(&job, device: device) : []
    }

    /// Clips past their deadline end.
    mutating func tick(now: Date, devices: DeviceRegistry) -> [JobEffect] {
        var effects: [JobEffect] = []
        for id in jobs.keys.sorted() {
            guard var job = jobs[id], job.phase == .playing, let deadline = job.deadline, deadline <= now else { continue }
            effects += beginRestore(&job, device: devices[id])
        }
        return effects
    }

    private mutating func runNextStep(_ job: AnnounceJob) -> [JobEffect] {
        var job = job
        guard !job.steps.isEmpty else {
            if job.phase == .restoring { jobs.removeValue(forKey: job.device) }
            return []
        }
        let kind = job.steps.removeFirst()
        jobs[job.device] = job
        return [.operation(job.device, kind, .announce(job.device))]
    }

    private mutating func beginRestore(_ job: inout AnnounceJob, device: DeviceRecord?) -> [JobEffect] {
        job.phase = .restoring
        var steps: [CastOperationKind] = []
        if job.changedVolume {
            if let level = job.previousLevel { steps.append(.setVolume(level: level)) }
            if let muted = job.previousMuted, muted { steps.append(.setMuted(true)) }
        }
        if let media = job.previousMedia {
            steps.append(media)
        } else if let app = job.previousApp, app != CastAppID.defaultMediaReceiver {
            steps.append(.launch(appId: app))
        } else if job.previousApp == nil, let session = device?.activeApp?.sessionId {
            steps.append(.stopApp(sessionId: session))
        }
        job.steps = steps
        guard device?.online == true, !steps.isEmpty else {
            jobs.removeValue(forKey: job.device)
            return []
        }
        return runNextStep(job)
    }
}
