#ifndef LOCKET_TPM_H
#define LOCKET_TPM_H

// The TPM 2.0 calls of locket-tpm (SPEC §21), through tpm2-tss's ESAPI, the
// TCTI loader and its marshalling: every structure of the TSS stays on this
// side, the helper's Swift sees bytes, sizes and response codes only. Each
// function returns a TSS2_RC (0 on success) and sets `*stage` to the step
// that failed, since one code means different things at different steps
// (an integrity failure while loading is a blob from another TPM).
//
// Every object is made under the storage key the TCG's key-file convention
// names by the handle 0x40000001: the primary key of the owner hierarchy
// from the ECC P-256 "H-2" template (zero-sized unique), re-created from the
// TPM's seed, as tpm2-openssl and ssh-tpm-agent do, so their tools load
// locket's keys. Commands that carry an authorization value, a secret in or
// a secret out go through an HMAC session salted to that storage key, with
// parameter encryption, so neither crosses the bus to the TPM in the clear.

#include <stddef.h>
#include <stdint.h>

enum {
    LOCKET_TPM_STAGE_NONE = 0,
    /// Loading the TCTI, opening the TPM, Esys_Initialize.
    LOCKET_TPM_STAGE_CONNECT = 1,
    /// Making the storage key (CreatePrimary) or the salted session.
    LOCKET_TPM_STAGE_PARENT = 2,
    /// The caller's blob does not unmarshal or is not the right kind of object.
    LOCKET_TPM_STAGE_INPUT = 3,
    /// TPM2_Load of the caller's blob under the storage key.
    LOCKET_TPM_STAGE_LOAD = 4,
    /// A policy session (PolicyPCR, PolicyAuthValue).
    LOCKET_TPM_STAGE_POLICY = 5,
    /// The operation itself: Create, Sign, ECDH_ZGen, Unseal.
    LOCKET_TPM_STAGE_USE = 6,
    /// GetCapability.
    LOCKET_TPM_STAGE_QUERY = 7,
};

/// The largest authorization value: the digest size of the objects' name algorithm, SHA-256.
#define LOCKET_TPM_AUTH_MAX 32
/// The largest secret a sealed object holds (MAX_SYM_DATA of the PC Client profile).
#define LOCKET_TPM_SEAL_MAX 128
/// The PCRs a policy may select: the SHA-256 bank's 24.
#define LOCKET_TPM_PCR_COUNT 24
/// A P-256 coordinate, scalar or digest.
#define LOCKET_TPM_P256_BYTES 32

typedef struct locket_tpm locket_tpm;

/// A marshalled TPM2B_PUBLIC and TPM2B_PRIVATE, as the key file holds them.
typedef struct {
    const uint8_t *public_area;
    size_t public_size;
    const uint8_t *private_area;
    size_t private_size;
} locket_tpm_object;

/// Room for a new object's TPM2B_PUBLIC and TPM2B_PRIVATE; the sizes are set on success.
typedef struct {
    uint8_t *public_area;
    size_t public_capacity;
    size_t public_size;
    uint8_t *private_area;
    size_t private_capacity;
    size_t private_size;
} locket_tpm_made;

/// An authorization value (size 0: none).
typedef struct {
    const uint8_t *bytes;
    size_t size;
} locket_tpm_auth;

typedef struct {
    uint32_t family;
    uint32_t revision;
    uint32_t year;
    uint32_t day_of_year;
    uint32_t manufacturer;
    uint32_t vendor[4];
    uint32_t firmware[2];
    int has_p256;
} locket_tpm_info;

typedef struct {
    uint32_t counter;
    uint32_t max_tries;
    uint32_t interval;
    uint32_t recovery;
    int in_lockout;
} locket_tpm_lockout;

/// Loads the TCTI named by `tcti` ("device:/dev/tpmrm0", "swtpm:host=...,port=...") and opens the TPM.
uint32_t locket_tpm_open(const char *tcti, locket_tpm **out, int *stage);
/// Flushes the storage key and the session, closes the TPM; NULL is allowed.
void locket_tpm_close(locket_tpm *tpm);

uint32_t locket_tpm_probe(locket_tpm *tpm, locket_tpm_info *info, int *stage);
uint32_t locket_tpm_lockout_status(locket_tpm *tpm, locket_tpm_lockout *out, int *stage);

/// A P-256 key made in the TPM for signing and key agreement (sign and
/// decrypt, null scheme). With an authorization value it is subject to the
/// TPM's dictionary-attack protection; without one it is noDA.
uint32_t locket_tpm_create_key(locket_tpm *tpm, locket_tpm_auth auth, locket_tpm_made *made, int *stage);
/// ECDSA with SHA-256 over a 32-byte digest; r and s of up to 32 bytes each.
uint32_t locket_tpm_sign(locket_tpm *tpm, locket_tpm_object key, locket_tpm_auth auth, const uint8_t *digest,
                         uint8_t *r, size_t *r_size, uint8_t *s, size_t *s_size, int *stage);
/// TPM2_ECDH_ZGen with the peer's point (x, y, 32 bytes each); the shared x coordinate into z (32 bytes).
uint32_t locket_tpm_ecdh(locket_tpm *tpm, locket_tpm_object key, locket_tpm_auth auth, const uint8_t *x, const uint8_t *y,
                         uint8_t *z, size_t *z_size, int *stage);
/// A keyed-hash object holding `secret` (1 to LOCKET_TPM_SEAL_MAX bytes).
/// `pcr_mask` not 0: bound to those SHA-256 PCRs' current values by a
/// PolicyPCR (then PolicyAuthValue when there is an authorization value).
uint32_t locket_tpm_seal(locket_tpm *tpm, const uint8_t *secret, size_t secret_size, locket_tpm_auth auth, uint32_t pcr_mask,
                         locket_tpm_made *made, int *stage);
/// The secret of a sealed object, into `out` (at least LOCKET_TPM_SEAL_MAX bytes).
uint32_t locket_tpm_unseal(locket_tpm *tpm, locket_tpm_object sealed, locket_tpm_auth auth, uint32_t pcr_mask,
                           uint8_t *out, size_t *out_size, int *stage);

/// tpm2-tss's text for a response code ("tpm:session(1):the authorization HMAC check failed ...").
const char *locket_tpm_rc_text(uint32_t rc);

/// No core dumps of the helper (PR_SET_DUMPABLE 0, RLIMIT_CORE 0): it holds
/// authorization values and unsealed secrets for the length of a request.
void locket_tpm_disable_core_dumps(void);
/// Zeroes `size` bytes in a way the compiler keeps.
void locket_tpm_wipe(void *bytes, size_t size);
/// Zeroes the 256 KiB of stack below the caller's frame: what the calls it
/// made left there (ESAPI decrypts through copies on its stack; Swift and
/// libcrypto keep temporaries) goes after each request.
void locket_tpm_burn_stack(void);

#endif
