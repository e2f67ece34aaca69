import CastProtocol
import Foundation

/// Decides what a command sends to a device, against the device's state when its turn comes, or
/// why nothing can be sent. Every precondition is checked here, before anything is sent, and
/// only here: no app, no media session, `not_supported` from the receiver's
/// `supportedMediaCommands`, a fixed volume. Pure.
enum CommandPlanner {
    enum Plan {
        case single(CastOperationKind, timeout: Double?)
        case refresh
        case transfer(to: String, keepSource: Bool)
        case announce(AnnounceCommand)
    }

    /// Decides what to send, or why nothing can be sent. `loadedSession`: the app session the
    /// bridge's own `load` started on this device (`BridgeLoads`), whose queue it may edit.
    static func plan(_ command: DeviceCommand, device: DeviceRecord, loadedSession: String? = nil) -> Result<Plan, BridgeError> {
        func single(_ kind: CastOperationKind) -> Result<Plan, BridgeError> { .success(.single(kind, timeout: nil)) }
        switch command {
        case .keep:
            // Answered by the keeps (Core/KeepInputs.swift) before any plan.
            return .failure(BridgeError(.internal, "keep is not a Cast request"))
        case .tracks(let tracks):
            return tracksPlan(tracks, device: device).map { .single(.media($0), timeout: nil) }
        case .queue(let queue):
            let app = device.activeApp
            let owns = app?.appId == CastAppID.defaultMediaReceiver || (app?.sessionId != nil && app?.sessionId == loadedSession)
            return queuePlan(queue, device: device, ownsQueue: owns).map { .single(.media($0), timeout: nil) }
        case .play, .pause, .toggle, .stop, .seek, .rate, .next, .previous, .skipAd:
            return mediaPlan(command, device: device).map { .single(.media($0), timeout: nil) }
        case .volume(let change):
            let volume = device.receiver?.volume
            if volume?.controlType == "fixed" {
                return .failure(BridgeError(.notSupported, "\(device.topic) has a fixed volume"))
            }
            switch change {
            case .level(let level): return single(.setVolume(level: min(max(level, 0), 1)))
            case .relativePercent(let delta):
                guard let current = volume?.level else {
                    return .failure(BridgeError(.invalidPlayerState,
                        "\(device.topic) has not reported its volume yet; send an absolute volume such as 40"))
                }
                let level = min(max(current + delta / 100, 0), 1)
                return single(.setVolume(level: (level * 1000).rounded() / 1000))
            }
        case .mute(let change):
            switch change {
            case .set(let muted): return single(.setMuted(muted))
            case .toggle: return single(.setMuted(!(device.receiver?.volume?.muted ?? false)))
            }
        case .launch(let appId):
            return single(.launch(appId: appId))
        case .quit:
            guard let session = device.activeApp?.sessionId else {
                return .failure(BridgeError(.noApp, "no app is running on \(device.topic)"))
            }
            return single(.stopApp(sessionId: session))
        case .load(let load):
            if let request = load.load { return single(.load(request, appId: load.appId)) }
            if let queue = load.queue { return single(.queueLoad(queue, appId: load.appId)) }
            return .failure(BridgeError(.internal, "load without media"))
        case .send(let send):
            if send.appId == nil {
                guard let app = device.activeApp else {
                    return .failure(BridgeError(.noApp, "no app is running on \(device.topic); give \"app_id\" to launch one first"))
                }
                if !app.namespaces.isEmpty, !app.namespaces.contains(send.namespace) {
                    return .failure(BridgeError(.notSupported,
                        "the running app \(app.displayName ?? app.appId) does not speak \(send.namespace)"))
                }
            }
            return .success(.single(.send(namespace: send.namespace, payload: send.payload, appId: send.appId,
                                          awaitReply: send.awaitReply), timeout: send.timeout))
        case .transfer(let to, let keepSource):
            return .success(.transfer(to: to, keepSource: keepSource))
        case .refresh:
            return .success(.refresh)
        case .announce(let a):
            return .success(.announce(a))
        }
    }

    /// Media-namespace commands: need an app, a media session and the command in supportedMediaCommands
    /// (an absent `supportedMediaCommands` is treated as "unknown" and allows everything).
    static func mediaPlan(_ command: DeviceCommand, device: DeviceRecord) -> Result<MediaRequest, BridgeError> {
        guard device.activeApp != nil else {
            return .failure(BridgeError(.noApp, "no app is running on \(device.topic); use load to play something"))
        }
        guard let media = device.media, let session = media.mediaSessionId else {
            return .failure(BridgeError(.noMediaSession, "\(device.topic) has no media session; use load to play something"))
        }
        let known = media.supportedMediaCommands != nil
        let supported = media.commands
        func require(_ bit: MediaCommands, _ what: String) -> BridgeError? {
            (known && !supported.contains(bit)) ? BridgeError(.notSupported, "the receiver on \(device.topic) does not support \(what)") : nil
        }
        switch command {
        case .play: return .success(.play(mediaSessionId: session))
        case .pause:
            if let e = require(.pause, "pause") { return .failure(e) }
            return .success(.pause(mediaSessionId: session))
        case .toggle:
            if media.playerState == "PLAYING" || media.playerState == "BUFFERING" {
                if let e = require(.pause, "pause") { return .failure(e) }
                return .success(.pause(mediaSessionId: session))
            }
            return .success(.play(mediaSessionId: session))
        case .stop: return .success(.stop(mediaSessionId: session))
        case .seek(let seek):
            if let e = require(.seek, "seeking") { return .failure(e) }
            switch seek.target {
            case .absolute(let t): return .success(.seek(mediaSessionId: session, currentTime: t, relativeTime: nil, resumeState: seek.resumeState))
            case .relative(let t): return .success(.seek(mediaSessionId: session, currentTime: nil, relativeTime: t, resumeState: seek.resumeState))
            }
        case .rate(let rate):
            if let e = require(.playbackRate, "changing the playback rate") { return .failure(e) }
            return .success(.setPlaybackRate(mediaSessionId: session, rate: rate))
        case .next:
            if let e = require(.queueNext, "skipping to the next item") { return .failure(e) }
            return .success(.queueNext(mediaSessionId: session))
        case .previous:
            if let e = require(.queuePrev, "going back to the previous item") { return .failure(e) }
            return .success(.queuePrev(mediaSessionId: session))
        case .skipAd:
            if let e = require(.skipAd, "skipping ads") { return .failure(e) }
            guard let breakStatus = media.breakStatus else {
                return .failure(BridgeError(.invalidPlayerState, "no ad break is playing on \(device.topic)"))
            }
            if let when = breakStatus.whenSkippable, when < 0 {
                return .failure(BridgeError(.invalidPlayerState, "this ad cannot be skipped"))
            }
            if let when = breakStatus.whenSkippable, let clipTime = breakStatus.currentBreakClipTime, clipTime < when {
                return .failure(BridgeError(.invalidPlayerState,
                    "the ad can be skipped after \(formatSeconds(when)) s (now at \(formatSeconds(clipTime)) s)"))
            }
            return .success(.skipAd(mediaSessionId: session))
        default:
            return .failure(BridgeError(.internal, "not a media command"))
        }
    }
}

extension CommandPlanner {
    /// The commands a member that shows its group's playback hands to the group's session: the
    /// transport commands of mqtt-api.md §4 and, where it is silent, every other command that
    /// acts on the media session the member shows (its rate, ad, subtitles, queue); volume, mute,
    /// load, launch, announce and the rest stay on the member.
    static func actsOnGroup(_ command: DeviceCommand) -> Bool {
        switch command {
        case .play, .pause, .toggle, .stop, .seek, .next, .previous, .rate, .skipAd, .tracks, .queue: return true
        case .load, .volume, .mute, .launch, .quit, .send, .transfer, .refresh, .announce, .keep: return false
        }
    }

    // MARK: - Join or launch

    /// How an operation reaches its app, decided here and only here, when the operation starts.
    enum AppStep: Equatable {
        /// Sent as it is: to the platform, or to the app the client joined.
        case send
        /// Its app is not the joined one: launch (and join) it first.
        case launchFirst(String)
        /// A media status query with no app joined: nothing to ask, done at once.
        case nothingToAsk
    }

    /// Join or launch, against what the device's snapshot carries (`joinedApp`): an app that
    /// runs and is joined is used as it is (never relaunched or reloaded); any other is
    /// launched first. A dynamic group is planned against its own snapshot the same way.
    static func appStep(_ kind: CastOperationKind, device: DeviceRecord?) -> AppStep {
        let joined = device?.snapshot.joinedApp?.appId
        let appId: String?
        switch kind {
        case .getMediaStatus: return joined == nil ? .nothingToAsk : .send
        case .load(_, let app), .queueLoad(_, let app), .resumeSession(_, let app): appId = app
        case .send(_, _, let app, _): appId = app
        case .getReceiverStatus, .launch, .stopApp, .setVolume, .setMuted, .media, .storeSession: appId = nil
        }
        guard let appId, appId != joined else { return .send }
        return .launchFirst(appId)
    }
}
