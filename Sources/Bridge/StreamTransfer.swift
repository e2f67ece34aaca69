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

extension BridgeCore {
    // MARK: observed

    mutating func recordSessionEndCandidate(_ id: DeviceID, now: Date) {
        guard let device = devices[id], let media = device.media,
              ["PLAYING", "PAUSED", "BUFFERING"].contains(media.playerState ?? ""),
              let content = media.effectiveMedia?.contentId, !content.isEmpty else { return }
        recordTransferCandidate(id, contentId: content, position: device.estimatedPosition(now: now), now: now)
    }

    mutating func recordTransferCandidate(_ id: DeviceID, contentId: String, position: Double?, now: Date) {
        transferCandidates.removeAll { $0.device == id }
        transferCandidates.append(TransferCandidate(device: id, contentId: contentId, position: position, at: now))
    }

    mutating func expireTransferCandidates(now: Date) {
        let window = configuration.cast.transferWindow
        transferCandidates.removeAll { now.timeIntervalSince($0.at) > window }
    }

    /// Media with `contentId` started on `id`: a transfer if another device lost the same content
    /// within the window.
    mutating func observedTransferTarget(_ id: DeviceID, contentId: String, now: Date, _ out: inout BridgeOutput) {
        expireTransferCandidates(now: now)
        guard let index = transferCandidates.firstIndex(where: { $0.device != id && $0.contentId == contentId }) else { return }
        let candidate = transferCandidates.remove(at: index)
        guard devices[candidate.device] != nil else { return }
        let position = devices[id]?.estimatedPosition(now: now) ?? candidate.position
        publishTransferred(from: candidate.device, to: id, contentId: contentId, position: position, now: now, &out)
    }

    mutating func publishTransferred(from: DeviceID, to: DeviceID, contentId: String?, position: Double?, now: Date,
                                     _ out: inout BridgeOutput) {
        let fields: [String: JSONValue] = ["type": .string("stream_transferred"), "from": .string(topicName(from)),
                                           "to": .string(topicName(to)), "content_id": .str(contentId), "position": .num(position)]
        publishBridgeEvent(fields, now: now, &out)
        publishDeviceEvent(from, fields, now: now, &out)
        publishDeviceEvent(to, fields, now: now, &out)
    }

    // MARK: commanded

    mutating func startTransfer(_ ctx: CommandContext, from source: DeviceID, to targetKey: String, keepSource: Bool,
                                now: Date, _ out: inout BridgeOutput) {
        guard let target = resolveDevice(targetKey) else {
            respond(ctx, .failure(BridgeError(.unknownDevice, "no device is called \"\(targetKey)\" (use a topic name, friendly name or id)")), &out)
            return
        }
        guard target != source else {
            respond(ctx, .failure(.invalid("the target is the device itself")), &out)
            return
        }
        guard devices[target]?.online == true else {
            respond(ctx, .failure(BridgeError(.deviceOffline, "\(topicName(target)) is offline")), &out)
            return
        }
        guard let app = devices[source]?.activeApp else {
            respond(ctx, .failure(BridgeError(.noApp, "nothing is playing on \(topicName(source))")), &out)
            return
        }
        guard devices[source]?.media?.mediaSessionId != nil else {
            respond(ctx, .failure(BridgeError(.noMediaSession, "\(topicName(source)) has no media session to transfer")), &out)
            return
        }
        let job = TransferJob(ctx: ctx, source: source, target: target, keepSource: keepSource, appId: app.appId, stage: .readingSource)
        enqueue(source, .getMediaStatus, purpose: .transfer(job), now: now, &out)
    }

    mutating func transferStep(_ job: TransferJob, _ result: Result<OperationResult, BridgeError>, now: Date,
                               _ out: inout BridgeOutput) {
        var job = job
        switch (job.stage, result) {
        case (.readingSource, .failure(let e)), (.loading, .failure(let e)), (.resuming, .failure(let e)):
            respond(job.ctx, .failure(e), &out)
        case (.readingSource, .success):
            guard let source = devices[job.source], let media = source.media, media.mediaSessionId != nil, media.effectiveMedia != nil else {
                respond(job.ctx, .failure(BridgeError(.noMediaSession, "\(topicName(job.source)) has no media to transfer")), &out)
                return
            }
            let position = source.estimatedPosition(now: now)
            let targetSupports = devices[job.target]?.media?.commands.contains(.streamTransfer) ?? false
            if media.commands.contains(.streamTransfer), targetSupports {
                job.stage = .storing(position: position)
                enqueue(job.source, .storeSession(mediaSessionId: media.mediaSessionId), purpose: .transfer(job), now: now, &out)
            } else {
                loadOnTarget(&job, media: media, position: position, now: now, &out)
            }
        case (.storing(let position), .success(.sessionState(let state))):
            job.stage = .resuming(position: position)
            enqueue(job.target, .resumeSession(sessionState: state, appId: job.appId), purpose: .transfer(job), now: now, &out)
        case (.storing(let position), _):
            // STORE_SESSION refused or unusable: fall back to reading and loading.
            guard let media = devices[job.source]?.media else {
                respond(job.ctx, .failure(BridgeError(.noMediaSession, "the source's media session ended")), &out)
                return
            }
            loadOnTarget(&job, media: media, position: position, now: now, &out)
        case (.loading(let position), .success), (.resuming(let position), .success):
            if job.keepSource || devices[job.source]?.online != true {
                finishTransfer(job, position: position, now: now, &out)
            } else if let session = devices[job.source]?.media?.mediaSessionId {
                job.stage = .stoppingSource(position: position)
                enqueue(job.source, .media(.stop(mediaSessionId: session)), purpose: .transfer(job), now: now, &out)
            } else {
                finishTransfer(job, position: position, now: now, &out)
            }
        case (.stoppingSource(let position), let r):
            if case .failure(let e) = r { out.logs.append("transfer: stopping the source failed: \(e)") }
            finishTransfer(job, position: position, now: now, &out)
        }
    }

    /// The fallback: the source's content, metadata, queue, position and rate loaded on the target.
    mutating func loadOnTarget(_ job: inout TransferJob, media: MediaStatus, position: Double?, now: Date, _ out: inout BridgeOutput) {
        job.stage = .loading(position: position)
        let kind: CastOperationKind
        if let items = media.items, items.count > 1, items.allSatisfy({ $0.media != nil }) {
            let start = items.firstIndex { $0.itemId == media.currentItemId } ?? 0
            let stripped = items.map { item -> QueueItem in var copy = item; copy.itemId = nil; return copy }
            kind = .queueLoad(QueueLoadRequest(items: stripped, startIndex: start, repeatMode: media.repeatMode ?? "REPEAT_OFF",
                                               currentTime: position), appId: job.appId)
        } else if let info = media.effectiveMedia {
            kind = .load(LoadRequest(media: info, autoplay: media.playerState != "PAUSED", currentTime: position,
                                     playbackRate: media.playbackRate, activeTrackIds: media.activeTrackIds,
                                     customData: media.customData), appId: job.appId)
        } else {
            respond(job.ctx, .failure(BridgeError(.noMediaSession, "the source has no media information")), &out)
            return
        }
        enqueue(job.target, kind, purpose: .transfer(job), now: now, &out)
    }

    mutating func finishTransfer(_ job: TransferJob, position: Double?, now: Date, _ out: inout BridgeOutput) {
        let content = devices[job.target]?.media?.effectiveMedia?.contentId ?? devices[job.source]?.media?.effectiveMedia?.contentId
        transferCandidates.removeAll { $0.device == job.source }
        respond(job.ctx, .success(.object(["from": .string(topicName(job.source)), "to": .string(topicName(job.target)),
                                           "position": .num(position)])), &out)
        publishTransferred(from: job.source, to: job.target, contentId: content, position: position, now: now, &out)
    }
}
