import CastProtocol
import Foundation

/// The router's side of the keeps (Jobs/Keep.swift, mqtt-api.md §13): the `keep` command, the
/// inputs a keep reacts to (a device's snapshot, the Lovelace receiver's messages, the tick, a
/// keep step's completion), and `<dev>/keep`.
extension BridgeCore {
    /// `<dev>/command/keep`: answered at once (it is no Cast request); works for an offline device.
    mutating func keepCommand(_ command: KeepCommand, deviceTopic: String, _ ctx: CommandContext, now: Date,
                              _ out: inout BridgeOutput) {
        guard let device = knownDevice(deviceTopic, ctx, &out) else { return }
        let id = device.id
        if device.descriptor.castType == .group {
            respond(ctx, .failure(BridgeError(.notSupported, "\(device.topic) is a speaker group; keep a page on a display")), &out)
            return
        }
        let had = keeps.entry(id) != nil
        let result = keeps.command(command, device: device, now: now)
        guard case .success = result else {
            respond(ctx, result, &out)
            return
        }
        out.keepsChanged = true
        switch command {
        case .set(let spec, _): out.logs.append("\(device.topic): keep \(spec.summary) (\(keeps.entry(id)?.enabled == true ? "on" : "off"))")
        case .on: out.logs.append("\(device.topic): keep switched on")
        case .off: out.logs.append("\(device.topic): keep switched off")
        case .clear: out.logs.append("\(device.topic): keep cleared")
        }
        if had != (keeps.entry(id) != nil) { publishDiscovery(id, &out) }
        evaluateKeep(id, now: now, &out)
        // The answer says the keep's state after it acted on the command.
        respond(ctx, .success(keeps.entry(id)?.document ?? (try? result.get()) ?? .null), &out)
    }

    /// The device's keep acts on what it sees now, and `<dev>/keep` follows.
    mutating func evaluateKeep(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        guard let before = keeps.entry(id) else {
            publishKeep(id, &out)
            return
        }
        // Instance mode: only the owner acts for a device.
        if instances?.ownership.owns(id) ?? true {
            let playing = groups.mirroredGroup(id, in: registry) != nil
            for (kind, step) in keeps.evaluate(device, groupPlaying: playing, now: now) {
                startOperation(id, kind, purpose: .keep(step), now: now, &out)
            }
        }
        if let after = keeps.entry(id), after.saved != before.saved { out.keepsChanged = true }
        if let after = keeps.entry(id), after.state != before.state || after.reason != before.reason {
            out.logs.append("\(device.topic): keep \(after.state.rawValue)" + (after.detail.map { ": \($0)" } ?? ""))
        }
        publishKeep(id, &out)
    }

    /// `<dev>/keep` (retained, change-only); cleared when the device has no keep.
    mutating func publishKeep(_ id: DeviceID, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        let topic = topics.keep(device.topic)
        if let entry = keeps.entry(id) {
            publisher.publish(topic, entry.document, &out)
        } else if publisher.keepsPayload(topic) == true {
            publisher.clear(topic, &out)
        }
    }

    mutating func keepStepDone(_ id: DeviceID, _ step: KeepStep, _ result: Result<OperationResult, BridgeError>, now: Date,
                               _ out: inout BridgeOutput) {
        out.logs += keeps.stepDone(id, step, result, device: registry[id], now: now)
        evaluateKeep(id, now: now, &out)
    }

    /// After a device's snapshot: a (re)connect makes the next idle screen a fresh one.
    mutating func keepAfterSnapshot(_ change: DeviceChange, now: Date, _ out: inout BridgeOutput) {
        guard keeps.entry(change.id) != nil else { return }
        if change.link != nil { keeps.linkChanged(change.id) }
        evaluateKeep(change.id, now: now, &out)
    }

    /// A message of the running app: the Lovelace receiver's status and errors.
    mutating func keepAppMessage(_ id: DeviceID, namespace: String, payload: CastPayload, now: Date, _ out: inout BridgeOutput) {
        guard namespace == KeepReceiver.lovelaceNamespace, keeps.entry(id) != nil, let device = registry[id] else { return }
        if let line = keeps.lovelaceMessage(id, payload, device: device, now: now) { out.logs.append(line) }
        evaluateKeep(id, now: now, &out)
    }

    /// The tick: keeps with a deadline due (yield, backoff, an answer awaited) or a window edge.
    mutating func keepTick(now: Date, _ out: inout BridgeOutput) {
        guard !keeps.isEmpty else { return }
        for id in keeps.due(now: now) { evaluateKeep(id, now: now, &out) }
    }

    /// A device became known (or its names did): its configured keep, if any.
    mutating func keepDeviceKnown(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        keeps.reconcileConfigured(device)
        if keeps.deviceKnown(device, now: now) { out.keepsChanged = true }
        if keeps.entry(id) != nil {
            publishDiscovery(id, &out)
            evaluateKeep(id, now: now, &out)
        }
    }

    // MARK: - State the daemon saves and restores

    /// Every keep (`state_dir/keeps.json`, mode 0600: it holds refresh tokens).
    public var keepSnapshot: KeepSnapshot { keeps.snapshot }

    /// Seeds the keeps a previous run saved.
    public mutating func restoreKeeps(_ snapshot: KeepSnapshot, now: Date) { keeps.restore(snapshot, now: now) }
}
