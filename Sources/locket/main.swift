import LocketCLI
import Glibc

exit(CLI.run(CommandLine.arguments, io: .standard))
