import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Points on the command and status paths, in the order an input passes them.
public enum Stage: UInt8, Sendable, CaseIterable {
    // A command: MQTT in → Cast out.
    /// libmosquitto's socket polled readable (the MQTT thread is awake).
    case mqttReadable = 1
    /// libmosquitto has parsed a PUBLISH and called back.
    case mqttDelivered = 2
    /// The message is in the input queue (the core's loop woken if it slept).
    case mqttQueued = 3
    /// The core's loop took it from the queue.
    case commandTaken = 4
    /// The Cast messages of a device are written to its channel (encoded, not yet flushed).
    case castWritten = 5
    /// The channel was flushed: TLS-sealed and handed to the kernel.
    case castFlushed = 6
    // A status: Cast in → MQTT out.
    /// Bytes read from a device's socket, before TLS.
    case castRead = 11
    /// One Cast message decoded (TLS opened, frame and protobuf read).
    case castDecoded = 12
    /// The device's snapshot is in the input queue.
    case snapshotQueued = 13
    /// The core's loop took a snapshot from the queue.
    case snapshotTaken = 14
    /// A publication handed to libmosquitto ...
    case publishing = 15
    /// ... and back (written to the socket when the MQTT thread was idle).
    case published = 16
    // Both.
    /// The core starts handling an input ...
    case coreStart = 20
    /// ... and returns its output.
    case coreEnd = 21
}

/// Optional timestamps at the stages of the command and status paths, for `scripts/bench e2e
/// --parts hops --stages`: with `CAST2MQTT_STAGE_TRACE=<file>` in the environment, every `mark`
/// records (stage, CLOCK_REALTIME ns) into a preallocated buffer (a million marks, then it stops
/// recording) and `flush()` (at shutdown) writes them as "stage nanoseconds" lines. Without the
/// variable a mark is one load and one branch.
public enum StageTrace {
    private static let path: String? = getenv("CAST2MQTT_STAGE_TRACE").map { String(cString: $0) }
    public static let enabled: Bool = path != nil

    @inline(__always)
    public static func mark(_ stage: Stage) {
        if enabled { Recorder.shared.record(stage) }
    }

    /// Writes what was recorded to the file named by the environment (appending); no-op when off.
    public static func flush() {
        guard let path else { return }
        Recorder.shared.write(to: path)
    }

    /// The marks, behind a mutex (buffers reserved once, at the first mark; the recorder lives
    /// as long as the process).
    private final class Recorder: Sendable {
        static let shared = Recorder()
        private static let capacity = 1 << 20
        private let marks = Mutex(Marks())

        private struct Marks {
            var stages: [UInt8] = []
            var times: [Int64] = []
        }

        func record(_ stage: Stage) {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let ns = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            marks.withLock { m in
                if m.stages.isEmpty {
                    m.stages.reserveCapacity(Self.capacity)
                    m.times.reserveCapacity(Self.capacity)
                }
                guard m.stages.count < Self.capacity else { return }
                m.stages.append(stage.rawValue)
                m.times.append(ns)
            }
        }

        func write(to path: String) {
            marks.withLock { m in
                guard !m.stages.isEmpty, let file = fopen(path, "a") else { return }
                for i in m.stages.indices { fputs("\(m.stages[i]) \(m.times[i])\n", file) }
                fclose(file)
                m.stages.removeAll(keepingCapacity: true)
                m.times.removeAll(keepingCapacity: true)
            }
        }
    }
}
