// The system-call wrapper (`valueOrErrno`, `Errno`, `writeAll`) and the
// spawner live in LocketSystem, which imports only Glibc so that the
// PostgreSQL helper's wire protocol (LocketWire) uses them too; whoever
// imports LocketSupport gets them with it.
@_exported import LocketSystem
