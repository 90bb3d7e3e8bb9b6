// Two pieces of the Swift runtime's start-up that `locket` does not need,
// left out of the static release build (Makefile START_UP_FLAGS:
// -DLOCKET_LEAN_RUNTIME; bench/README.md "A lookup above the process floor").
// Each is an object of libswiftCore.a with a global constructor; defining
// here the symbols that make the linker take that object from the archive
// leaves the object, and its constructor, out of the executable.
//
// argv. Swift's CommandLine finds argc and argv through a constructor in
// CommandLine.cpp that opens /proc/self/maps, sscanf's each line to find the
// stack, and walks back from `environ` to argc: an open, an fstat, two
// reads, a close and some 53 k instructions in every process, before main.
// glibc passes every .init_array function argc, argv and envp (the dynamic
// loader does the same), so the function below keeps them; the two entry
// points the standard library has are defined here with the Swift calling
// convention it declares them with.
//
// The backtracer. Backtrace.cpp's constructor reads SWIFT_BACKTRACE, looks
// for a swift-backtrace program in six places beside the executable and asks
// whether stdout and stderr are terminals (a dozen system calls), and its
// crash handler, when enabled, starts that program to read this process's
// memory and print what it finds: nothing a keychain wants (locket turns off
// core dumps for the same reason), and no install of locket has it. The
// object is linked only because every executable's swiftrt.o names
// _swift_backtrace_isThunkFunction (for the backtracer to find); with that
// defined here, Backtrace.cpp and its crash handler stay out. A crash then
// ends as a C program's does: with its signal, and no core dump.
//
// These are the runtime's internal names and layouts as Swift 6.3 has them,
// so the Makefile defines LOCKET_LEAN_RUNTIME only for swiftc 6.3.x.
// Checked with nm on 6.3.1's libswiftCore.a: CommandLine.cpp.o defines
// nothing but the two argv entry points below, and Backtrace.cpp.o's other
// symbols are asked for only through CrashHandlerLinux.cpp.o, so whatever
// pulled either object in would bring strong definitions of these symbols
// beside ours and stop the link with "duplicate symbol", never silently (as
// `ld.lld -r runtime.o -u _swift_spawnBacktracer libswiftCore.a` does).
//
// StartupEndToEndTests.testTheRuntimeReadsNeitherItsMapsNorTheBacktracer pins
// both; testTheLeanRuntimeHandsOverEveryArgumentWhole pins argv.
#ifdef LOCKET_LEAN_RUNTIME
#include <stdbool.h>
#include <stddef.h>

static char **process_argv;
static int process_argc;
static char **override_argv;
static int override_argc;

static void keep_arguments(int argc, char **argv, char **envp) {
    (void)envp;
    process_argc = argc;
    process_argv = argv;
}

__attribute__((section(".init_array"), used)) static void (*const keep_arguments_at_start)(int, char **, char **) =
    keep_arguments;

__attribute__((swiftcall)) char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
    if (override_argv != NULL) {
        *outArgLen = override_argc;
        return override_argv;
    }
    static char *empty[] = {NULL};
    if (process_argv == NULL) {
        *outArgLen = 0;
        return empty;
    }
    *outArgLen = process_argc;
    return process_argv;
}

__attribute__((swiftcall)) void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    override_argv = argv;
    override_argc = argc;
}

bool _swift_backtrace_isThunkFunction(const char *mangledName) {
    (void)mangledName;
    return false;
}

// What Errors.cpp reads of the backtracer's settings: whether it is on (the
// second 32-bit field; a fatal error then leaves the stack to it). Zero: not
// on, as it is today wherever swift-backtrace is missing, so a fatal error
// prints its message and ends by SIGILL, as with the whole runtime and no
// swift-backtrace (checked on 6.3.1: a static program that calls fatalError,
// linked with and without this file, prints the same line and exits 132).
__attribute__((aligned(16))) char _swift_backtraceSettings[256];
#endif
