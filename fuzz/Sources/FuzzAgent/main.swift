import FuzzSupport
import LocketFuzzTargets

// The target's checks are in FuzzTargets.agent (Tests/FuzzTargets), which
// `make test` also runs over this target's seeds.
runFuzzer { data, size in
    guard let data else { return 0 }
    FuzzTargets.agent(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
