import CastProtocol
import NIOCore

/// Input: byte 0 is a chunk size (1...256), the rest is a byte stream from a device.
///
/// The stream goes through `CastFrameDecoder` twice: whole, and in chunks of that size the way
/// `ByteToMessageHandler` feeds it (decode after every read). Both must yield the same messages
/// and the same error. Every decoded message must survive `CastFraming.frame` and decode to
/// itself, and the frame's body must be SwiftProtobuf's encoding of it. The stream is also read
/// as one bare `CastMessage` body, by `CastMessageReader` and by SwiftProtobuf: the same message
/// or both refusals.
func fuzzFrame(_ input: UnsafeRawBufferPointer) {
    guard let first = input.first else { return }
    let chunk = Int(first) + 1
    let stream = input.dropFirst()

    let whole = decodeAll([ArraySlice(stream)])
    var chunks: [ArraySlice<UInt8>] = []
    var start = stream.startIndex
    while start < stream.endIndex {
        let end = min(start + chunk, stream.endIndex)
        chunks.append(ArraySlice(stream[start..<end]))
        start = end
    }
    let chunked = decodeAll(chunks)
    precondition(whole.messages == chunked.messages, "chunked decoding yields other messages")
    precondition(whole.error == chunked.error, "chunked decoding ends with another error")

    for message in whole.messages {
        let frame: [UInt8]
        do {
            frame = try CastFraming.frame(message)
        } catch {
            preconditionFailure("a decoded message cannot be framed again: \(error)")
        }
        let again = decodeAll([ArraySlice(frame)])
        precondition(again.error == nil && again.messages == [message], "a message does not survive a round trip")
        // The frame writer encodes by hand: it must write SwiftProtobuf's bytes.
        precondition((try? message.serializedBytes()) == Array(frame.dropFirst(CastFraming.headerSize)),
                     "the frame writer and SwiftProtobuf encode a message differently")
    }

    // The body reader is hand-written: it must take what SwiftProtobuf takes, as the same message.
    let ours = try? CastMessage(serializedBytes: stream)
    let reference = try? CastMessage(swiftProtobufBytes: stream)
    precondition(ours == reference, "the body reader and SwiftProtobuf read a body differently: \(String(describing: ours)) / \(String(describing: reference))")
}

private struct Decoded {
    var messages: [CastMessage] = []
    var error: String?
}

/// Decodes like `ByteToMessageHandler`: append each read, decode until the decoder wants more.
/// Every decoded frame consumes at least 5 bytes, so the loop is bounded by the input size.
private func decodeAll(_ reads: [ArraySlice<UInt8>]) -> Decoded {
    var decoder = CastFrameDecoder()
    var buffer = ByteBuffer()
    var out = Decoded()
    for read in reads {
        buffer.writeBytes(read)
        do {
            while let message = try decoder.decode(buffer: &buffer) {
                out.messages.append(message)
            }
        } catch {
            out.error = "\(error)"
            return out
        }
    }
    do {
        while let message = try decoder.decodeLast(buffer: &buffer, seenEOF: true) {
            out.messages.append(message)
        }
    } catch {
        out.error = "\(error)"
    }
    return out
}
