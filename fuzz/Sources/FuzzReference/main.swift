import FuzzSupport
import LocketCore

runFuzzer { data, size in
    guard let data else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? Reference.query(text)
    return 0
}
