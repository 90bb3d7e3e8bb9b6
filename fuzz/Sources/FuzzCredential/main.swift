import FuzzSupport
import LocketFuzzTargets

// The target's checks are in FuzzTargets.credential (Tests/FuzzTargets), which
// `make test` also runs over this target's seeds.
runFuzzer { data, size in
    guard let data else { return 0 }
    FuzzTargets.credential(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
