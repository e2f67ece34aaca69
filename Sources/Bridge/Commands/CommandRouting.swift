import CastProtocol
import Foundation

/// The router's command path: a parsed command for a device is admitted by the scheduler (now,
/// later, or `busy`), planned when its turn comes (CommandPlanner), and carried out as one
/// operation or handed to a job; each operation's completion is routed back to what asked for it.
extension BridgeCore {
    mutating func runCommand(_ command: DeviceCommand, deviceTopic: String, _ ctx: CommandContext, now: Date,
                             _ out: inout BridgeOutput) {
        guard let device = knownDevice(deviceTopic, ctx, &out) else { return }
        let id = device.id
        guard device.online else {
            respond(ctx, .failure(BridgeError(.deviceOffline, "\(device.topic) is offline; the command was not sent")), &out)
            return
        }
        if let expires = ctx.expires, expires <= now {
            respond(ctx, .failure(BridgeError(.timeout, "the command expired before it could be sent")), &out)
            return
        }
        // A member that shows its group's playback hands play, pause, seek... to the group.
        let target = commandTarget(command, device: id)
        if command.changesWhatPlays { endAnnouncements(target, by: ctx.name, now: now, &out) }
        switch scheduler.admit(command, device: target, ctx) {
        case .ready:
            startCommand(command, device: target, ctx, now: now, &out)
        case .queued:
            break
        case .busy(let rejections):
            if rejections == 1 || rejections % 1000 == 0 {
                out.logs.append("\(registry.topicName(target)): \(WorkScheduler.maxWaitingCommands) commands are waiting; answering busy (\(rejections) so far)")
            }
            respond(ctx, .failure(BridgeError(.busy,
                "\(device.topic) already has \(WorkScheduler.maxWaitingCommands) commands waiting; try again when they are answered")), &out)
        }
    }

    /// The device a command names, or nil after answering `unknown_device`.
    func knownDevice(_ deviceTopic: String, _ ctx: CommandContext, _ out: inout BridgeOutput) -> DeviceRecord? {
        guard let id = registry.device(topic: deviceTopic), let device = registry[id] else {
            respond(ctx, .failure(BridgeError(.unknownDevice, "no device has the topic name \"\(deviceTopic)\"; see \(topics.bridgeDevices)")), &out)
            return nil
        }
        return device
    }

    /// Where a command for a device goes: its group's session for the transport commands of a
    /// member that shows its group's playback, else the device itself.
    func commandTarget(_ command: DeviceCommand, device id: DeviceID) -> DeviceID {
        guard CommandPlanner.actsOnGroup(command), let mirrored = groups.mirroredGroup(id, in: registry) else { return id }
        return mirrored.group.id
    }

    /// Plans a command against the device's state now (its turn has come) and starts it.
    mutating func startCommand(_ command: DeviceCommand, device id: DeviceID, _ ctx: CommandContext, now: Date,
                               _ out: inout BridgeOutput) {
        guard let device = groups.record(id, in: registry) else { return }
        if case .load(let load) = command { loads.starting(load, on: device) }
        switch CommandPlanner.plan(command, device: device, loadedSession: loads.session(id)) {
        case .failure(let error):
            if case .load = command { loads.abandoned(id) }
            respond(ctx, .failure(error), &out)
        case .success(.single(let kind, let timeout)):
            startOperation(id, kind, purpose: .command(ctx, command), now: now, timeout: timeout, &out)
        case .success(.refresh):
            startOperation(id, .getReceiverStatus, purpose: .refresh(ctx, mediaDone: false), now: now, &out)
        case .success(.transfer(let target, let keepSource)):
            apply(transfers.start(ctx, from: id, to: target, keepSource: keepSource, devices: registry), now: now, &out)
        case .success(.announce(let announce)):
            apply(announcements.start(ctx, device: device, announce, now: now), now: now, &out)
        }
    }

    /// The device's announcements end without a restore (a command that changes what plays
    /// arrived): their waiting steps are dropped, the announcements answered.
    mutating func endAnnouncements(_ id: DeviceID, by command: String, now: Date, _ out: inout BridgeOutput) {
        guard let job = announcements.jobID(id) else { return }
        scheduler.dropSteps(id, of: .announce(job))
        apply(announcements.interrupt(id, by: command), now: now, &out)
    }

    /// Starts an operation, or queues it behind the device's running one.
    mutating func startOperation(_ id: DeviceID, _ kind: CastOperationKind, purpose: Purpose, now: Date,
                                 timeout: Double? = nil, _ out: inout BridgeOutput) {
        guard var operation = scheduler.enqueue(id, kind, purpose: purpose, now: now, timeout: timeout) else { return }
        switch CommandPlanner.appStep(kind, device: groups.record(id, in: registry)) {
        case .send:
            out.operations.append(operation)
        case .launchFirst(let appId):
            operation.launchFirst = appId
            out.operations.append(operation)
        case .nothingToAsk:
            // Completed where it was decided (bounded: each completion frees the lane once).
            operationCompleted(operation.token, .success(.done), now: now, &out)
        }
    }

    mutating func operationCompleted(_ token: OperationToken, _ result: Result<OperationResult, BridgeError>, now: Date,
                                     _ out: inout BridgeOutput) {
        // The device state this operation changed arrived before this completion, as a
        // snapshot: a completion carries success or failure (and a reply's data), not state.
        guard let op = scheduler.complete(token) else {
            out.logs.append("ignoring the late completion of \(token)")
            return
        }
        continueAfter(op, result, now: now, &out)
        startNext(op.deviceID, now: now, &out)
    }

    /// What happens after an operation, by why it was asked for.
    mutating func continueAfter(_ op: PendingOperation, _ result: Result<OperationResult, BridgeError>, now: Date,
                                _ out: inout BridgeOutput) {
        switch op.purpose {
        case .internalQuery:
            if case .failure(let e) = result { out.logs.append("\(registry.topicName(op.deviceID)): status query failed: \(e)") }
        case .command(let ctx, let command):
            finishCommand(ctx, command, device: op.deviceID, result, now: now, &out)
        case .refresh(let ctx, let mediaDone):
            refreshStep(ctx, device: op.deviceID, mediaDone: mediaDone, result, now: now, &out)
        case .transfer(let job):
            apply(transfers.step(job, result, devices: registry, now: now), now: now, &out)
        case .announce(let job):
            apply(announcements.step(job, result, device: registry[op.deviceID], now: now), now: now, &out)
        case .keep(let step):
            keepStepDone(op.deviceID, step, result, now: now, &out)
        }
    }

    /// The device's operation finished (or failed, or timed out): start what waits next.
    mutating func startNext(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        // Bounded: each round removes one waiting item.
        while let work = scheduler.next(id) {
            switch work {
            case .step(let kind, let purpose, let timeout):
                startOperation(id, kind, purpose: purpose, now: now, timeout: timeout, &out)
            case .command(let command, let ctx):
                guard let device = groups.record(id, in: registry), device.online else {
                    respond(ctx, .failure(BridgeError(.deviceOffline, "\(registry.topicName(id)) went offline; the command was not sent")), &out)
                    continue
                }
                startCommand(command, device: id, ctx, now: now, &out)
            }
        }
    }

    /// The device went offline or was removed: its running operation fails with `error`, and so
    /// does everything waiting for it (follow-up steps that the failures queue included).
    mutating func failAllWork(_ id: DeviceID, _ error: BridgeError, now: Date, _ out: inout BridgeOutput) {
        apply(announcements.abandon(id, error), now: now, &out)
        for op in scheduler.abandonOperations(of: id) { continueAfter(op, .failure(error), now: now, &out) }
        drainWaiting(id, error, now: now, &out)
    }

    /// Answers or fails everything waiting for a device.
    mutating func drainWaiting(_ id: DeviceID, _ error: BridgeError, now: Date, _ out: inout BridgeOutput) {
        // Follow-up steps may queue more work for this device; each round removes one item and
        // a job adds at most one, so this ends.
        var rounds = 0
        while rounds < 10_000, let work = scheduler.popWaiting(id) {
            rounds += 1
            switch work {
            case .command(_, let ctx):
                respond(ctx, .failure(error), &out)
            case .step(_, let purpose, _):
                continueAfter(PendingOperation(deviceID: id, deadline: now, purpose: purpose), .failure(error), now: now, &out)
            }
        }
    }

    /// `refresh`: receiver GET_STATUS, then media GET_STATUS when an app that speaks media runs.
    /// Without a command (a bridge-wide refresh) nothing is answered.
    mutating func refreshStep(_ ctx: CommandContext?, device id: DeviceID, mediaDone: Bool,
                              _ result: Result<OperationResult, BridgeError>, now: Date, _ out: inout BridgeOutput) {
        if case .failure(let e) = result {
            if let ctx { respond(ctx, .failure(e), &out) } else { out.logs.append("\(registry.topicName(id)): refresh failed: \(e)") }
            return
        }
        if !mediaDone, let device = registry[id], device.appSpeaksMedia {
            startOperation(id, .getMediaStatus, purpose: .refresh(ctx, mediaDone: true), now: now, &out)
            return
        }
        if let ctx, let device = registry[id] {
            respond(ctx, .success(.object(["state": .string(device.stateWord), "position": .num(device.position(at: now))])), &out)
        }
    }

    func respond(_ ctx: CommandContext, _ result: Result<JSONValue, BridgeError>, _ out: inout BridgeOutput) {
        let doc = CommandResponses.document(ctx, result)
        out.publish(Publication(topic: ctx.responseTopic, payload: JSONOutput.bytes(doc), retain: false,
                                correlationData: ctx.correlationData))
        let code: String
        switch result {
        case .success: code = "ok"
        case .failure(let e): code = e.code.rawValue
        }
        out.outcomes.append(CommandOutcome(command: ctx.name, code: code, receivedAt: ctx.receivedAt))
        // `busy` comes in bursts; it is logged once per burst where it is decided.
        if case .failure(let e) = result, e.code != .busy { out.logs.append("\(ctx.name) failed: \(e)") }
    }

    /// A single-operation command finished.
    mutating func finishCommand(_ ctx: CommandContext, _ command: DeviceCommand, device: DeviceID,
                                _ result: Result<OperationResult, BridgeError>, now: Date, _ out: inout BridgeOutput) {
        var data: JSONValue?
        if case .success(let value) = result {
            data = CommandResponses.successData(command, device: groups.record(device, in: registry), result: value, now: now)
        }
        if case .load = command {
            // Which app the load replaced (another app than the load's, e.g. Spotify), when it did.
            let replaced = loads.finished(device, device: registry[device], ok: data != nil)
            // The queue the load made the bridge's is saved with the sessions (state_dir).
            if data != nil { out.sessionsChanged = true }
            if case .object(var fields)? = data {
                fields["replaced"] = BridgeLoads.document(replaced)
                data = .object(fields)
            }
        }
        switch result {
        case .success:
            respond(ctx, .success(data ?? .object([:])), &out)
        case .failure(let error):
            if case .load(let load) = command {
                let contentId = load.load?.media.contentId ?? load.queue?.items.first?.media?.contentId
                loads.failed(device, contentId: contentId, now: now)
                publishDeviceEvent(device, ["type": .string("load_failed"), "content_id": .str(contentId),
                                            "error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)])],
                                   now: now, &out)
            }
            respond(ctx, .failure(error), &out)
        }
    }
}
