import CastProtocol
import Foundation

/// What plays on a device when its first announcement starts, to put back after the last one.
struct AnnounceRestore: Sendable {
    var level: Double?
    var muted: Bool?
    var changedVolume = false
    var app: String?
    /// The media to replay (MediaReplay), when the Default Media Receiver played something.
    var media: CastOperationKind?

    /// What the restore will do, in the response's words.
    var action: String {
        if media != nil { return "media" }
        if let app, app != CastAppID.defaultMediaReceiver { return "relaunch_app" }
        if app == nil { return "stop_app" }
        return changedVolume ? "volume" : "none"
    }
}

/// The announcements of one device: the one that plays and the ones that wait for it.
///
/// Phases: `starting` (the current clip's steps: unmute, volume, load; without `wait` it is
/// answered when its LOAD is confirmed), `playing` (waiting for the clip to end: media IDLE or
/// gone, or a deadline of the clip's duration + request_timeout, at most 10 minutes; with
/// `wait` it is answered then), `settling` (the last clip has played: a moment for the next
/// announcement of a chain — an automation that waited for this one sends it now — before the
/// restore), `restoring` (one operation after another; failures are logged and the next step
/// still runs). The restore happens once, after the last announcement.
struct AnnounceJob: Sendable {
    typealias ID = UInt64
    enum Phase: Sendable, Equatable { case starting, playing, settling(until: Date), restoring }
    struct Announcement: Sendable {
        var ctx: CommandContext
        var command: AnnounceCommand
        var answered = false
    }

    var id: ID
    var device: DeviceID
    var phase: Phase = .starting
    var current: Announcement
    var waiting: [Announcement] = []
    var steps: [CastOperationKind] = []
    var restore: AnnounceRestore
    var clipSession: Int?
    var deadline: Date?
}

/// `announce` (mqtt-api.md §5): play a short clip at a temporary volume, then restore what was
/// there before — the previous media at its position and play state in the Default Media
/// Receiver, another app by relaunching it (its media cannot be reloaded by us), the previous
/// volume and mute. Announcements on one device queue (at most `maxWaiting`, then `busy`) and the
/// restore happens once after the last. Any command that changes what plays ends them without a
/// restore (`interrupt`): the user's newest intent wins. Owns the announcements of each device.
struct AnnounceJobs: Sendable {
    static let maxSeconds = 600.0
    /// Announcements that may wait behind the playing one, per device.
    static let maxWaiting = 8
    /// How long after the last clip the restore waits for another announcement (seconds; the
    /// clock tick makes it up to a second more).
    static let settleSeconds = 1.0
    let requestTimeout: Double
    private var jobs: [DeviceID: AnnounceJob] = [:]
    private var nextID: AnnounceJob.ID = 1

    init(requestTimeout: Double) { self.requestTimeout = requestTimeout }

    func isActive(_ device: DeviceID) -> Bool { jobs[device] != nil }

    mutating func start(_ ctx: CommandContext, device: DeviceRecord, _ a: AnnounceCommand, now: Date) -> [JobEffect] {
        let announcement = AnnounceJob.Announcement(ctx: ctx, command: a)
        if var job = jobs[device.id] {
            switch job.phase {
            case .settling:
                // The next announcement of a chain: it plays, and the restore waits for it.
                job.current = announcement
                job.phase = .starting
                job.steps = clipSteps(a, muted: false, restore: &job.restore)
                return runNextStep(job)
            case .restoring:
                // Before the restore is done: the rest of it waits for this clip (what to restore
                // was taken at the first announcement). The restore step in flight leads on.
                job.current = announcement
                job.phase = .starting
                job.clipSession = nil
                job.deadline = nil
                job.steps = clipSteps(a, muted: false, restore: &job.restore)
                jobs[device.id] = job
                return []
            case .starting, .playing:
                break
            }
            guard job.waiting.count < Self.maxWaiting else {
                return [.respond(ctx, .failure(BridgeError(.busy,
                    "\(Self.maxWaiting) announcements already wait on \(device.topic); try again when they have played")))]
            }
            var effects: [JobEffect] = []
            var queued = announcement
            if !a.wait {
                // Accepted: it plays after the ones before it (with `wait`, it is answered then).
                queued.answered = true
                effects.append(.respond(ctx, .success(.object(["queued": .int(job.waiting.count + 1),
                                                                "state": .string(device.stateWord)]))))
            }
            job.waiting.append(queued)
            jobs[device.id] = job
            return effects
        }
        let volume = device.receiver?.volume
        var restore = AnnounceRestore(level: volume?.level, muted: volume?.muted, app: device.activeApp?.appId)
        if let media = device.media, media.isActive, device.activeApp?.appId == CastAppID.defaultMediaReceiver {
            restore.media = MediaReplay.operation(media, position: device.position(at: now), appId: CastAppID.defaultMediaReceiver)
        }
        let id = nextID
        nextID += 1
        var job = AnnounceJob(id: id, device: device.id, current: announcement, restore: restore)
        job.steps = clipSteps(a, muted: volume?.muted == true, restore: &job.restore)
        return runNextStep(job)
    }

    /// The steps that play one clip.
    private func clipSteps(_ a: AnnounceCommand, muted: Bool, restore: inout AnnounceRestore) -> [CastOperationKind] {
        var steps: [CastOperationKind] = []
        if let level = a.volume {
            if muted { steps.append(.setMuted(false)) }
            steps.append(.setVolume(level: level))
            restore.changedVolume = true
        }
        let clip = MediaInformation(contentId: a.url, streamType: "BUFFERED",
                                    contentType: a.contentType ?? MediaBuilder.guessContentType(a.url),
                                    metadata: a.title.map { MediaMetadata(metadataType: 0, title: $0) })
        steps.append(.load(LoadRequest(media: clip, autoplay: true), appId: CastAppID.defaultMediaReceiver))
        return steps
    }

    /// A step of the device's announcements finished.
    mutating func step(_ id: AnnounceJob.ID, _ result: Result<OperationResult, BridgeError>, device: DeviceRecord?,
                       now: Date) -> [JobEffect] {
        guard let deviceID = device?.id, var job = jobs[deviceID], job.id == id else { return [] }
        switch job.phase {
        case .starting:
            if case .failure(let e) = result {
                return [Self.fail(job.current, e, device: deviceID)] + next(&job, device: device, now: now)
            }
            if !job.steps.isEmpty { return runNextStep(job) }
            // The clip's LOAD was confirmed.
            let media = device?.media
            job.clipSession = media?.mediaSessionId
            let duration = media?.effectiveMedia?.duration ?? Self.maxSeconds
            job.deadline = now.addingTimeInterval(min(duration + requestTimeout, Self.maxSeconds))
            job.phase = .playing
            var effects: [JobEffect] = []
            // A queued one without `wait` was answered (`queued`) when it arrived: one answer.
            if !job.current.command.wait, !job.current.answered {
                job.current.answered = true
                effects.append(.respond(job.current.ctx, .success(.object([
                    "state": .string(device?.stateWord ?? "off"), "restoring": .bool(true),
                    "restore": .string(job.restore.action)]))))
            }
            jobs[deviceID] = job
            return effects
        case .playing, .settling:
            return []
        case .restoring:
            var effects: [JobEffect] = []
            if case .failure(let e) = result { effects.append(.log("announce: restoring \(device?.topic ?? deviceID) step failed: \(e)")) }
            return effects + runNextStep(job)
        }
    }

    /// Watches the device's media while a clip plays: it ended (IDLE, or no media), or something
    /// else took its place (another sender loaded other content: its intent wins).
    mutating func observe(_ change: DeviceChange, device: DeviceRecord, now: Date) -> [JobEffect] {
        guard var job = jobs[change.id], job.phase == .playing else { return [] }
        let media = change.newMedia
        if let media, media.playerState != "IDLE", job.clipSession != nil, media.mediaSessionId != job.clipSession,
           media.effectiveMedia?.contentId != job.current.command.url {
            return interrupt(device.id, by: "another sender")
        }
        guard media == nil || media?.playerState == "IDLE" || (job.clipSession != nil && media?.mediaSessionId != job.clipSession)
        else { return [] }
        return finished(&job, device: device, now: now)
    }

    /// Clips past their deadline end; settled announcements are restored.
    mutating func tick(now: Date, devices: DeviceRegistry) -> [JobEffect] {
        var effects: [JobEffect] = []
        for id in jobs.keys.sorted() {
            guard var job = jobs[id] else { continue }
            switch job.phase {
            case .playing:
                if let deadline = job.deadline, deadline <= now { effects += finished(&job, device: devices[id], now: now) }
            case .settling(let until) where until <= now:
                guard devices[id]?.online == true else {
                    jobs.removeValue(forKey: id)
                    continue
                }
                effects += beginRestore(&job, device: devices[id])
            default:
                break
            }
        }
        return effects
    }

    /// An announcement that will not play: its response says so — or, when its one response
    /// was already given (a queued one without `wait` is answered `queued` when it arrives), a
    /// `load_failed` event on the device's event topic does, with the error and
    /// `"command": "announce"`.
    static func fail(_ a: AnnounceJob.Announcement, _ error: BridgeError, device: DeviceID) -> JobEffect {
        guard a.answered else { return .respond(a.ctx, .failure(error)) }
        var fields: [String: JSONValue] = ["type": .string("load_failed"), "content_id": .string(a.command.url),
                                           "command": .string("announce"),
                                           "error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)])]
        if let id = a.ctx.id { fields["id"] = id }
        return .event(device, fields)
    }

    /// The job of a device (its id: the scheduler drops its waiting steps when it ends early).
    func jobID(_ device: DeviceID) -> AnnounceJob.ID? { jobs[device]?.id }

    /// A command that changes what plays (`by`) arrived: the announcements end without a restore.
    /// The playing one is answered (it was cut short), the waiting ones are cancelled.
    mutating func interrupt(_ device: DeviceID, by command: String) -> [JobEffect] {
        guard let job = jobs.removeValue(forKey: device) else { return [] }
        var effects: [JobEffect] = []
        if !job.current.answered, job.phase != .restoring {
            effects.append(.respond(job.current.ctx, .success(.object(["finished": .bool(false), "interrupted_by": .string(command)]))))
        }
        let cancelled = BridgeError(.loadCancelled, "the announcement was cancelled by a newer command (\(command)) before it played")
        for waiting in job.waiting { effects.append(Self.fail(waiting, cancelled, device: device)) }
        return effects
    }

    /// The device went offline or was removed: whatever was not answered fails with `error`.
    mutating func abandon(_ device: DeviceID, _ error: BridgeError) -> [JobEffect] {
        guard let job = jobs.removeValue(forKey: device) else { return [] }
        var effects: [JobEffect] = []
        if !job.current.answered, job.phase != .restoring { effects.append(.respond(job.current.ctx, .failure(error))) }
        for waiting in job.waiting { effects.append(Self.fail(waiting, error, device: device)) }
        return effects
    }

    /// The current clip has played: answer it when it waited for that, then the next clip, or
    /// the restore after the last.
    private mutating func finished(_ job: inout AnnounceJob, device: DeviceRecord?, now: Date) -> [JobEffect] {
        var effects: [JobEffect] = []
        if !job.current.answered {
            job.current.answered = true
            effects.append(.respond(job.current.ctx, .success(.object([
                "finished": .bool(true), "state": .string(device?.stateWord ?? "off"),
                "restore": .string(job.waiting.isEmpty ? job.restore.action : "next_announcement")]))))
        }
        return effects + next(&job, device: device, now: now)
    }

    /// After the current announcement: the next waiting one, or (after settling) the restore.
    private mutating func next(_ job: inout AnnounceJob, device: DeviceRecord?, now: Date) -> [JobEffect] {
        guard device?.online == true else {
            jobs[job.device] = job
            return abandon(job.device, BridgeError(.deviceOffline, "the device went offline before the announcement played"))
        }
        if !job.waiting.isEmpty {
            job.current = job.waiting.removeFirst()
            job.phase = .starting
            job.clipSession = nil
            job.deadline = nil
            job.steps = clipSteps(job.current.command, muted: false, restore: &job.restore)
            return runNextStep(job)
        }
        job.phase = .settling(until: now.addingTimeInterval(Self.settleSeconds))
        jobs[job.device] = job
        return []
    }

    private mutating func runNextStep(_ job: AnnounceJob) -> [JobEffect] {
        var job = job
        guard !job.steps.isEmpty else {
            jobs.removeValue(forKey: job.device)
            return []
        }
        let kind = job.steps.removeFirst()
        jobs[job.device] = job
        return [.operation(job.device, kind, .announce(job.id))]
    }

    private mutating func beginRestore(_ job: inout AnnounceJob, device: DeviceRecord?) -> [JobEffect] {
        job.phase = .restoring
        let restore = job.restore
        var steps: [CastOperationKind] = []
        if restore.changedVolume {
            if let level = restore.level { steps.append(.setVolume(level: level)) }
            if restore.muted == true { steps.append(.setMuted(true)) }
        }
        if let media = restore.media {
            steps.append(media)
        } else if let app = restore.app, app != CastAppID.defaultMediaReceiver {
            steps.append(.launch(appId: app))
        } else if restore.app == nil, let session = device?.activeApp?.sessionId {
            steps.append(.stopApp(sessionId: session))
        }
        job.steps = steps
        return runNextStep(job)
    }
}
