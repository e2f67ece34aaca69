import CastProtocol
import Foundation

/// Playback that stopped on a device in a way that may be a transfer (media IDLE/INTERRUPTED, or
/// the session ended while media was active). Kept for `cast.transfer_window`.
struct TransferCandidate: Sendable, Hashable {
    var device: DeviceID
    var contentId: String
    var position: Double?
    var at: Date
}

/// A commanded `transfer` in progress.
struct TransferJob: Sendable {
    typealias ID = UInt64
    enum Stage: Sendable {
        case readingSource
        case storing(position: Double?)
        case resuming(position: Double?)
        case loading(position: Double?)
        case stoppingSource(position: Double?)
    }
    var ctx: CommandContext
    var source: DeviceID
    var target: DeviceID
    var keepSource: Bool
    var appId: String
    var stage: Stage
}

/// Stream transfer, observed and commanded (mqtt-api.md §6). Owns the candidates (playback
/// that stopped within the window) and the commanded transfers in progress.
struct TransferJobs: Sendable {
    let window: TimeInterval
    private var candidates: [TransferCandidate] = []
    private var jobs: [TransferJob.ID: TransferJob] = [:]
    private var nextID: TransferJob.ID = 1

    init(window: TimeInterval) { self.window = window }

    // MARK: - Observed

    /// The device's session ended (or its media vanished) while its media was active.
    mutating func sessionEnded(_ change: DeviceChange, now: Date) {
        guard let media = change.oldMedia, media.isActive, let content = media.effectiveMedia?.contentId else { return }
        recordCandidate(change.id, contentId: content, position: change.oldPosition, now: now)
    }

    mutating func recordCandidate(_ id: DeviceID, contentId: String, position: Double?, now: Date) {
        candidates.removeAll { $0.device == id }
        candidates.append(TransferCandidate(device: id, contentId: contentId, position: position, at: now))
    }

    mutating func expireCandidates(now: Date) {
        candidates.removeAll { now.timeIntervalSince($0.at) > window }
    }

    /// Media with `contentId` started on `id`: a transfer from the device that lost the same
    /// content within the window, if any (`position`: the target's, else the source's last).
    mutating func mediaStarted(on id: DeviceID, contentId: String, position: Double?, now: Date) -> (from: DeviceID, position: Double?)? {
        expireCandidates(now: now)
        guard let index = candidates.firstIndex(where: { $0.device != id && $0.contentId == contentId }) else { return nil }
        let candidate = candidates.remove(at: index)
        return (candidate.device, position ?? candidate.position)
    }

    // MARK: - Commanded

    /// Checks the transfer and starts it by reading the source's media status.
    mutating func start(_ ctx: CommandContext, from source: DeviceID, to targetKey: String, keepSource: Bool,
                        devices: DeviceRegistry) -> [JobEffect] {
        func fail(_ error: BridgeError) -> [JobEffect] { [.respond(ctx, .failure(error))] }
        guard let target = devices.resolve(targetKey) else {
            return fail(BridgeError(.unknownDevice, "no device is called \"\(targetKey)\" (use a topic name, friendly name or id)"))
        }
        guard target != source else { return fail(.invalid("the target is the device itself")) }
        guard devices[target]?.online == true else { return fail(BridgeError(.deviceOffline, "\(devices.topicName(target)) is offline")) }
        guard let app = devices[source]?.activeApp else {
            return fail(BridgeError(.noApp, "nothing is playing on \(devices.topicName(source))"))
        }
        guard devices[source]?.media?.mediaSessionId != nil else {
            return fail(BridgeError(.noMediaSession, "\(devices.topicName(source)) has no media session to transfer"))
        }
        let id = nextID
        nextID += 1
        jobs[id] = TransferJob(ctx: ctx, source: source, target: target, keepSource: keepSource, appId: app.appId, stage: .readingSource)
        return [.operation(source, .getMediaStatus, .transfer(id))]
    }

    /// A step of transfer `id` finished.
    mutating func step(_ id: TransferJob.ID, _ result: Result<OperationResult, BridgeError>, devices: DeviceRegistry,
                       now: Date) -> [JobEffect] {
        guard var job = jobs.removeValue(forKey: id) else { return [] }
        var effects: [JobEffect] = []
        func next(_ device: DeviceID, _ kind: CastOperationKind) {
            jobs[id] = job
            effects.append(.operation(device, kind, .transfer(id)))
        }
        switch (job.stage, result) {
        case (.readingSource, .failure(let e)), (.loading, .failure(let e)), (.resuming, .failure(let e)):
            effects.append(.respond(job.ctx, .failure(e)))
        case (.readingSource, .success):
            guard let source = devices[job.source], let media = source.media, let session = media.mediaSessionId,
                  media.effectiveMedia != nil else {
                return [.respond(job.ctx, .failure(BridgeError(.noMediaSession, "\(devices.topicName(job.source)) has no media to transfer")))]
            }
            let position = source.position(at: now)
            let targetSupports = devices[job.target]?.media?.commands.contains(.streamTransfer) ?? false
            if media.commands.contains(.streamTransfer), targetSupports {
                job.stage = .storing(position: position)
                next(job.source, .storeSession(mediaSessionId: session))
            } else {
                effects += loadOnTarget(&job, id, media: media, position: position)
            }
        case (.storing(let position), .success(.sessionState(let state))):
            job.stage = .resuming(position: position)
            next(job.target, .resumeSession(sessionState: state, appId: job.appId))
        case (.storing(let position), _):
            // STORE_SESSION refused or unusable: fall back to reading and loading.
            guard let media = devices[job.source]?.media else {
                return [.respond(job.ctx, .failure(BridgeError(.noMediaSession, "the source's media session ended")))]
            }
            effects += loadOnTarget(&job, id, media: media, position: position)
        case (.loading(let position), .success), (.resuming(let position), .success):
            if !job.keepSource, devices[job.source]?.online == true, let session = devices[job.source]?.media?.mediaSessionId {
                job.stage = .stoppingSource(position: position)
                next(job.source, .media(.stop(mediaSessionId: session)))
            } else {
                effects += finish(job, position: position, devices: devices)
            }
        case (.stoppingSource(let position), let r):
            if case .failure(let e) = r { effects.append(.log("transfer: stopping the source failed: \(e)")) }
            effects += finish(job, position: position, devices: devices)
        }
        return effects
    }

    /// The fallback: the source's content, metadata, queue, position and rate loaded on the target.
    private mutating func loadOnTarget(_ job: inout TransferJob, _ id: TransferJob.ID, media: MediaStatus,
                                       position: Double?) -> [JobEffect] {
        guard let kind = MediaReplay.operation(media, position: position, appId: job.appId) else {
            return [.respond(job.ctx, .failure(BridgeError(.noMediaSession, "the source has no media information")))]
        }
        job.stage = .loading(position: position)
        jobs[id] = job
        return [.operation(job.target, kind, .transfer(id))]
    }

    private mutating func finish(_ job: TransferJob, position: Double?, devices: DeviceRegistry) -> [JobEffect] {
        let content = devices[job.target]?.media?.effectiveMedia?.contentId ?? devices[job.source]?.media?.effectiveMedia?.contentId
        candidates.removeAll { $0.device == job.source }
        return [.respond(job.ctx, .success(.object(["from": .string(devices.topicName(job.source)),
                                                     "to": .string(devices.topicName(job.target)), "position": .num(position)]))),
                .transferred(from: job.source, to: job.target, contentId: content, position: position)]
    }
}
