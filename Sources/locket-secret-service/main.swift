import Glibc
import LocketSecretService

// The Secret Service provider (SPEC §18), started by `locket secret-service`.
exit(SecretServiceMain.run(CommandLine.arguments))
