#ifndef LOCKET_TPM_INTERNAL_H
#define LOCKET_TPM_INTERNAL_H

// What the C files of CLocketTPM share; not part of the module's interface.

#include "locket_tpm.h"

#include <tss2/tss2_esys.h>

struct locket_tpm {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    /// The owner hierarchy's storage key, made on first use and kept for the helper's life.
    ESYS_TR storage_key;
    /// The HMAC session salted to it, made by the first request that carries
    /// a secret in or out, and kept likewise.
    ESYS_TR session;
};

/// Makes the storage key if it is not there yet.
TSS2_RC locket_tpm_storage_key(locket_tpm *tpm, int *stage);
/// Makes the storage key and the salted session if they are not there yet.
TSS2_RC locket_tpm_parent(locket_tpm *tpm, int *stage);
/// Sets the session's attributes for the next command: continue, plus
/// TPMA_SESSION_DECRYPT / TPMA_SESSION_ENCRYPT where that command's first
/// parameter in or out is a secret.
TSS2_RC locket_tpm_session_for(locket_tpm *tpm, TPMA_SESSION encryption);
/// Esys_TR_SetAuth from a locket_tpm_auth, the copy wiped.
TSS2_RC locket_tpm_set_auth(locket_tpm *tpm, ESYS_TR object, locket_tpm_auth auth);
/// Forgets an object's authorization value (if it had one) and flushes it from the TPM.
void locket_tpm_flush(locket_tpm *tpm, ESYS_TR object, int had_auth);
/// Marshals a new object's public and private parts into `made`.
TSS2_RC locket_tpm_store(const TPM2B_PUBLIC *public_area, const TPM2B_PRIVATE *private_area, locket_tpm_made *made);
/// Checks `object` (of `type`) and loads it under the storage key, through
/// the salted session or not (objects.c says when); `*handle` to flush.
TSS2_RC locket_tpm_load(locket_tpm *tpm, locket_tpm_object object, TPMI_ALG_PUBLIC type, locket_tpm_auth auth, int session, ESYS_TR *handle,
                        int *stage);
/// Zeroes what ESAPI left of the last response's parameters (a shared or
/// unsealed secret, decrypted) in its buffer and on the stack.
void locket_tpm_scrub(locket_tpm *tpm);

#endif
