import FuzzSupport
import LocketFuzzTargets

// The target's checks are in FuzzTargets.mask (Tests/FuzzTargets), which
// `make test` also runs over this target's seeds.
runFuzzer { data, size in
    guard let data else { return 0 }
    FuzzTargets.mask(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
