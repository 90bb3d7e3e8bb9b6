import FuzzSupport
import LocketFuzzTargets

// The target's checks are in FuzzTargets.arguments (Tests/FuzzTargets), which
// `make test` also runs over this target's seeds.
runFuzzer { data, size in
    guard let data else { return 0 }
    FuzzTargets.arguments(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
