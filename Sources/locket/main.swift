import Glibc
import LocketCLI
import LocketCLIBackends

exit(CLI.runProcess(backends: .all))
