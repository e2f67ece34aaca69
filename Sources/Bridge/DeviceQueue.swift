import CastProtocol
import Foundation

/// Per-device order: the Cast operations of one device are carried out one at a time, in the
/// order their commands arrived; devices run in parallel.
///
/// A device has at most one operation in flight (`DeviceState.inFlight`). Work that arrives
/// while it is busy waits in `DeviceState.waiting`: MQTT commands (planned only when their turn
/// comes, so a relative volume or seek starts from the state the previous operation left) and
/// the bridge's own follow-up operations (the next step of a refresh, transfer or announce).
/// At most `maxWaitingCommands` commands wait per device; one more is answered `busy` at once.
enum QueuedWork: Sendable {
    case command(DeviceCommand, CommandContext)
    case operation(CastOperationKind, Purpose, timeout: Double?)
}

extension BridgeCore {
    /// Commands that may wait for a busy device; past this a command is answered `busy`.
    public static let maxWaitingCommands = 64

    /// True when the device has an operation in flight or work waiting.
    func isBusy(_ id: DeviceID) -> Bool {
        guard let device = devices[id] else { return false }
        return device.inFlight != nil || !device.waiting.isEmpty
    }

    /// Queues a command behind the device's running operation, or answers `busy`.
    mutating func queueCommand(_ command: DeviceCommand, device id: DeviceID, _ ctx: CommandContext, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        let waitingCommands = device.waiting.reduce(0) { n, work in
            if case .command = work { return n + 1 }
            return n
        }
        guard waitingCommands < Self.maxWaitingCommands else {
            busyRejections += 1
            if busyRejections == 1 || busyRejections % 1000 == 0 {
                out.logs.append("\(device.topic): \(Self.maxWaitingCommands) commands are waiting; answering busy (\(busyRejections) so far)")
            }
            respond(ctx, .failure(BridgeError(.busy,
                "\(device.topic) already has \(Self.maxWaitingCommands) commands waiting; try again when they are answered")), &out)
            return
        }
        devices[id]?.waiting.append(.command(command, ctx))
    }

    /// The device's operation finished (or failed, or timed out): start what waits next.
    mutating func startNext(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        // Bounded: each round removes one waiting item.
        while let device = devices[id], device.inFlight == nil, let work = device.waiting.first {
            devices[id]?.waiting.removeFirst()
            switch work {
            case .operation(let kind, let purpose, let timeout):
                enqueue(id, kind, purpose: purpose, now: now, timeout: timeout, &out)
            case .command(let command, let ctx):
                guard device.online else {
                    respond(ctx, .failure(BridgeError(.deviceOffline, "\(device.topic) went offline; the command was not sent")), &out)
                    continue
                }
                startCommand(command, device: id, ctx, now: now, &out)
            }
        }
    }

    /// The device went offline or was removed: its running operation fails with `error`, and so
    /// does everything waiting for it (follow-up steps that the failures queue included).
    mutating func failAllWork(_ id: DeviceID, _ error: BridgeError, now: Date, _ out: inout BridgeOutput) {
        for (token, _) in pending.sorted(by: { $0.key < $1.key }) where pending[token]?.deviceID == id {
            guard let op = finishOperation(token) else { continue }
            continueAfter(op, .failure(error), now: now, &out)
        }
        drainWaiting(id, error, now: now, &out)
    }

    /// Answers or fails everything waiting for a device.
    mutating func drainWaiting(_ id: DeviceID, _ error: BridgeError, now: Date, _ out: inout BridgeOutput) {
        // Follow-up steps may queue more work for this device; each round removes one item and
        // a job adds at most a few, so this ends.
        var rounds = 0
        while let work = devices[id]?.waiting.first, rounds < 10_000 {
            rounds += 1
            devices[id]?.waiting.removeFirst()
            switch work {
            case .command(_, let ctx):
                respond(ctx, .failure(error), &out)
            case .operation(_, let purpose, _):
                continueAfter(PendingOperation(deviceID: id, deadline: now, purpose: purpose), .failure(error), now: now, &out)
            }
        }
    }
}
