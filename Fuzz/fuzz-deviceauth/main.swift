import FuzzSupport

// The one entry, by libFuzzer's name: the libFuzzer archive that -sanitize=fuzzer links refers
// to it (our main runs instead of libFuzzer's, see FuzzMain).
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzDeviceAuth(fuzzInput(data, size))
    return 0
}

FuzzMain.run { data, size in testOneInput(data, size) }
