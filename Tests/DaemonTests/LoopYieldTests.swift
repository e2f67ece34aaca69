import NIOCore
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import cast2mqtt

/// The consumer's way to go on after its loop's sockets: a chain of turns that resumes through
/// `LoopYield` lets a socket that is readable meanwhile be read between two turns; one that
/// resumes with `execute` keeps the loop off its sockets until the chain ends (why LoopYield is).
@Suite struct LoopYieldTests {
    static let turns = 500

    /// The turn count when a readable pipe on the same loop was read, and whether the chain ran
    /// all its turns.
    func run(resumingWithYield: Bool) async throws -> (readAtTurn: Int, turns: Int) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let future: EventLoopFuture<Outcome> = try await loop.submit {
            Chain(loop: loop, turns: Self.turns).run(resumingWithYield: resumingWithYield)
        }.get()
        let outcome = try await future.get()
        try await group.shutdownGracefully()
        return (outcome.readAt, outcome.turns)
    }

    @Test func aSocketReadableMeanwhileIsReadBetweenTwoTurns() async throws {
        let result = try await run(resumingWithYield: true)
        #expect(result.turns == Self.turns)
        // Readable before the first turn: read in the first poll, after the first turn or two.
        #expect(result.readAtTurn < 5, "the pipe was read only after turn \(result.readAtTurn)")
    }

    /// NIO's behaviour LoopYield works around: should NIO one day poll between tasks, this fails
    /// and the pipe can go.
    @Test func executeAloneRunsTheWholeChainBeforeAnySocket() async throws {
        let result = try await run(resumingWithYield: false)
        #expect(result.turns == Self.turns)
        #expect(result.readAtTurn == Self.turns)
    }

    struct Outcome: Sendable {
        var readAt: Int
        var turns: Int
    }

    /// Loop-confined: a chain of `turns` bodies, and a pipe with a byte waiting on the same loop.
    final class Chain {
        let loop: any EventLoop
        let turns: Int
        var turn = 0
        var readAt: Int?
        var ended = false
        var yield: LoopYield?
        var cleanup: () -> Void = {}
        let done: EventLoopPromise<Outcome>

        init(loop: any EventLoop, turns: Int) {
            self.loop = loop
            self.turns = turns
            done = loop.makePromise()
        }

        func run(resumingWithYield: Bool) -> EventLoopFuture<Outcome> {
            let yield = LoopYield(loop: loop) { [self] in step(resumingWithYield) }
            self.yield = yield
            var fds: [CInt] = [-1, -1]
            guard pipe(&fds) == 0 else { return loop.makeFailedFuture(ChannelError.inappropriateOperationForState) }
            let reader = Reader { [self] in
                guard readAt == nil else { return }
                readAt = turn
                finishIfDone()
            }
            let registering = NIOPipeBootstrap(group: loop).takingOwnershipOfDescriptor(input: fds[0])
            yield.start().assumeIsolated().whenComplete { [self] _ in
                registering.assumeIsolated().whenComplete { [self] result in
                    guard yield.ready, case .success(let channel) = result,
                          (try? channel.pipeline.syncOperations.addHandler(reader)) != nil else {
                        done.fail(ChannelError.inappropriateOperationForState)
                        return
                    }
                    cleanup = {
                        channel.close(promise: nil)
                        close(fds[1])
                        yield.stop()
                    }
                    // The pipe is readable from now on; the chain starts in this same task.
                    var byte: UInt8 = 7
                    _ = write(fds[1], &byte, 1)
                    step(resumingWithYield)
                }
            }
            return done.futureResult
        }

        func step(_ resumingWithYield: Bool) {
            turn += 1
            guard turn < turns else {
                ended = true
                finishIfDone()
                return
            }
            if resumingWithYield {
                precondition(yield?.arm() == true)
            } else {
                loop.assumeIsolated().execute { self.step(false) }
            }
        }

        func finishIfDone() {
            guard ended, let readAt else { return }
            cleanup()
            done.succeed(Outcome(readAt: readAt, turns: turn))
        }
    }

    final class Reader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let onRead: () -> Void
        init(onRead: @escaping () -> Void) { self.onRead = onRead }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { onRead() }
    }
}
