// libcrypto probes the CPU (OPENSSL_cpuid_setup: a dozen CPUID instructions,
// each a trap to the hypervisor on a VM) from its .init section, in every
// process, although most commands never use libcrypto. The link wraps that
// symbol (Makefile START_UP_FLAGS: --wrap=OPENSSL_cpuid_setup, and the macro
// below, in the static release build only: a shared libcrypto keeps both its
// calls inside itself and does not export the function): the start-up call is
// skipped, and libcrypto's own initialisation (ossl_init_base, which every
// EVP, PEM and X.509 entry point runs first) makes the real probe before the
// first use. A low-level call before that would find no CPU features and
// take the plain x86-64 code: slower, never wrong.
#ifdef LOCKET_DEFER_CRYPTO_PROBE
#include <stdatomic.h>

void __real_OPENSSL_cpuid_setup(void);

static atomic_flag start_up_call_skipped = ATOMIC_FLAG_INIT;

void __wrap_OPENSSL_cpuid_setup(void) {
    if (!atomic_flag_test_and_set(&start_up_call_skipped)) return;
    __real_OPENSSL_cpuid_setup();
}
#endif
