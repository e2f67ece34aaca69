import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs a body again after its event loop's next pass over its sockets.
///
/// NIO runs the tasks that a task enqueues in the same tick: the loop takes tasks until none is
/// left before it polls its sockets again. A consumer that hands the rest of a long queue to the
/// next turn with `execute` therefore never lets its loop read: at 10 000 devices the republish
/// after a broker restart (~9 s of 5 ms turns) held every device on the core loop — about half
/// of them — unread, and a command to one of them waited for the whole republish.
///
/// A pipe registered with the loop: `arm()` writes one byte; the loop's poll finds it readable
/// together with the devices' sockets, and the body runs in that pass, beside them.
final class LoopYield {
    private let loop: any EventLoop
    private let body: () -> Void
    private var writeEnd: CInt = -1
    private var channel: (any Channel)?
    private var armed = false

    /// The body runs on `loop`; call `start()` there before `arm()`.
    init(loop: any EventLoop, body: @escaping () -> Void) {
        self.loop = loop
        self.body = body
    }

    /// True once the pipe is registered: until then (or if it could not be made) `arm()`
    /// returns false and the caller goes on with `execute`.
    var ready: Bool { channel != nil && writeEnd >= 0 }

    /// Makes the pipe and registers its read end with the loop; the future completes when that
    /// is done (`ready` tells whether it worked).
    @discardableResult
    func start() -> EventLoopFuture<Void> {
        loop.preconditionInEventLoop()
        var fds: [CInt] = [-1, -1]
        guard pipe(&fds) == 0 else { return loop.makeSucceededVoidFuture() }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        let handler = Reader(owner: self)
        let done = loop.makePromise(of: Void.self)
        NIOPipeBootstrap(group: loop).takingOwnershipOfDescriptor(input: fds[0]).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let channel):
                do {
                    try channel.pipeline.syncOperations.addHandler(handler)
                    self.channel = channel
                    self.writeEnd = fds[1]
                } catch {
                    channel.close(promise: nil)
                    close(fds[1])
                }
            case .failure:
                close(fds[0])
                close(fds[1])
            }
            done.succeed()
        }
        return done.futureResult
    }

    /// Asks for one more run of the body after the loop's next poll (once, however often it is
    /// asked meanwhile). False when the pipe is not there: the caller must schedule the body itself.
    func arm() -> Bool {
        loop.preconditionInEventLoop()
        guard ready else { return false }
        if armed { return true }
        var byte: UInt8 = 1
        // The pipe holds at most one byte (one arm at a time): the write cannot block or fail
        // for want of room.
        guard write(writeEnd, &byte, 1) == 1 else { return false }
        armed = true
        return true
    }

    /// Closes both ends (at shutdown).
    func stop() {
        loop.preconditionInEventLoop()
        channel?.close(promise: nil)
        channel = nil
        if writeEnd >= 0 { close(writeEnd) }
        writeEnd = -1
    }

    fileprivate func fired() {
        guard armed else { return }
        armed = false
        body()
    }

    private final class Reader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private weak var owner: LoopYield?

        init(owner: LoopYield) { self.owner = owner }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            owner?.fired()
        }
    }
}
