import FuzzSupport
import LocketFuzzTargets

// The target's checks are in FuzzTargets.reference (Tests/FuzzTargets), which
// `make test` also runs over this target's seeds.
runFuzzer { data, size in
    guard let data else { return 0 }
    FuzzTargets.reference(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
