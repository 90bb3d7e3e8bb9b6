import Foundation

/// The one pty driver of the tests (issue 12): runs a program on a
/// pseudo-terminal made by Python's pty module, which types one answer per
/// prompt (a prompt ends in ":" or "]", perhaps then a line break) and
/// records the screen, so a test can check what was asked and that nothing
/// typed was echoed.
public enum TerminalDriver {
    static let script = """
    import os, pty, sys, time
    answers = sys.argv[2].split('\\x1f') if sys.argv[2] else []
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.argv[3], sys.argv[3:])
    screen, pending, deadline = b'', b'', time.time() + float(sys.argv[1])
    while time.time() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk; pending += chunk
        if pending.rstrip().endswith((b':', b']')) and answers:
            os.write(fd, answers.pop(0).encode() + b'\\n'); pending = b''
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(screen.decode('utf-8', 'replace'))
    sys.exit(os.waitstatus_to_exitcode(status))
    """

    /// Runs `executable ARGS` at a terminal with exactly `environment` plus
    /// TERM=dumb; its status is the program's, its stdout the screen.
    public static func run(_ executable: String, _ arguments: [String], answers: [String], environment: [String: String],
                           timeout: Double = 15) -> RunResult {
        // -I -S: the standard library alone (no site, no PYTHON* variables, no user
        // site): 14 ms of CPU to start, not 19-25 (issue 38).
        Spawn.run("/usr/bin/python3", ["-I", "-S", "-c", script, String(timeout), answers.joined(separator: "\u{1f}"), executable] + arguments,
                  environment: environment.merging(["TERM": "dumb"]) { $1 }, input: .devNull, timeout: timeout + 5)
    }
}
