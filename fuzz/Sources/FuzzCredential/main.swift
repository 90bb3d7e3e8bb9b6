import FuzzSupport
import LocketCLI

runFuzzer { data, size in
    guard let data else { return 0 }
    let request = GitCredential(parsing: Array(UnsafeBufferPointer(start: data, count: size)))
    for (key, value) in request.fields {
        precondition(!key.isEmpty && !key.contains("\n") && !value.contains("\n") && !value.contains("\0"))
    }
    return 0
}
