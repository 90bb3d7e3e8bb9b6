import Glibc
import LocketCLI

exit(CLI.runProcess())
