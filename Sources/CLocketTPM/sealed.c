// Sealed secrets under the storage key (`init --tpm`'s binding secret): a
// keyed-hash object fixed to this TPM, optionally bound to PCRs through a
// policy the key file carries, so that other tools can replay it.

#include "tpm_internal.h"

#include <string.h>

/// The SHA-256 bank's PCRs in `mask`, as TPML_PCR_SELECTION.
static TPML_PCR_SELECTION selection(uint32_t mask) {
    TPML_PCR_SELECTION pcrs = { .count = 1 };
    pcrs.pcrSelections[0].hash = TPM2_ALG_SHA256;
    pcrs.pcrSelections[0].sizeofSelect = 3;
    for (int i = 0; i < 3; i++) pcrs.pcrSelections[0].pcrSelect[i] = (BYTE)((mask >> (8 * i)) & 0xff);
    return pcrs;
}

/// PolicyPCR over the PCRs' current values (an empty pcrDigest: the TPM
/// reads them), then PolicyAuthValue when the object has an authorization
/// value: the same steps make the policy in a trial session and satisfy it
/// in a real one.
static TSS2_RC run_policy(locket_tpm *tpm, ESYS_TR session, uint32_t mask, int with_auth) {
    const TPM2B_DIGEST current = { .size = 0 };
    const TPML_PCR_SELECTION pcrs = selection(mask);
    TSS2_RC rc = Esys_PolicyPCR(tpm->esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &pcrs);
    if (rc == 0 && with_auth) rc = Esys_PolicyAuthValue(tpm->esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE);
    return rc;
}

/// A policy session salted to the storage key (trial: only to compute a digest).
static TSS2_RC start_policy(locket_tpm *tpm, TPM2_SE type, ESYS_TR *session) {
    const TPMT_SYM_DEF symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB };
    return Esys_StartAuthSession(tpm->esys, tpm->storage_key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL, type,
                                 &symmetric, TPM2_ALG_SHA256, session);
}

uint32_t locket_tpm_seal(locket_tpm *tpm, const uint8_t *secret, size_t secret_size, locket_tpm_auth auth, uint32_t pcr_mask,
                         locket_tpm_made *made, int *stage) {
    *stage = LOCKET_TPM_STAGE_INPUT;
    if (secret_size == 0 || secret_size > LOCKET_TPM_SEAL_MAX || auth.size > LOCKET_TPM_AUTH_MAX
        || (pcr_mask >> LOCKET_TPM_PCR_COUNT) != 0) return TSS2_ESYS_RC_BAD_VALUE;
    TSS2_RC rc = locket_tpm_parent(tpm, stage);
    if (rc != 0) return rc;
    TPM2B_PUBLIC template = {
        .publicArea = {
            .type = TPM2_ALG_KEYEDHASH,
            .nameAlg = TPM2_ALG_SHA256,
            .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT,
            .parameters.keyedHashDetail.scheme = { .scheme = TPM2_ALG_NULL },
        },
    };
    if (auth.size == 0) template.publicArea.objectAttributes |= TPMA_OBJECT_NODA;
    if (pcr_mask == 0) {
        template.publicArea.objectAttributes |= TPMA_OBJECT_USERWITHAUTH;
    } else {
        // Policy only (no userWithAuth): the PCRs must hold the values they have now.
        *stage = LOCKET_TPM_STAGE_POLICY;
        ESYS_TR trial = ESYS_TR_NONE;
        rc = start_policy(tpm, TPM2_SE_TRIAL, &trial);
        if (rc != 0) return rc;
        rc = run_policy(tpm, trial, pcr_mask, auth.size > 0);
        TPM2B_DIGEST *digest = NULL;
        if (rc == 0) rc = Esys_PolicyGetDigest(tpm->esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &digest);
        Esys_FlushContext(tpm->esys, trial);
        if (rc != 0) return rc;
        template.publicArea.authPolicy = *digest;
        Esys_Free(digest);
    }
    *stage = LOCKET_TPM_STAGE_USE;
    TPM2B_SENSITIVE_CREATE sensitive = { .size = 0 };
    sensitive.sensitive.userAuth.size = (UINT16)auth.size;
    if (auth.size > 0) memcpy(sensitive.sensitive.userAuth.buffer, auth.bytes, auth.size);
    sensitive.sensitive.data.size = (UINT16)secret_size;
    memcpy(sensitive.sensitive.data.buffer, secret, secret_size);
    const TPM2B_DATA outside = { .size = 0 };
    const TPML_PCR_SELECTION creation = { .count = 0 };
    TPM2B_PUBLIC *public_area = NULL;
    TPM2B_PRIVATE *private_area = NULL;
    rc = locket_tpm_session_for(tpm, TPMA_SESSION_DECRYPT);
    if (rc == 0) {
        rc = Esys_Create(tpm->esys, tpm->storage_key, tpm->session, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template, &outside,
                         &creation, &private_area, &public_area, NULL, NULL, NULL);
    }
    locket_tpm_wipe(&sensitive, sizeof sensitive);
    locket_tpm_scrub(tpm);
    if (rc == 0) rc = locket_tpm_store(public_area, private_area, made);
    Esys_Free(public_area);
    Esys_Free(private_area);
    return rc;
}

uint32_t locket_tpm_unseal(locket_tpm *tpm, locket_tpm_object sealed, locket_tpm_auth auth, uint32_t pcr_mask,
                           uint8_t *out, size_t *out_size, int *stage) {
    *stage = LOCKET_TPM_STAGE_INPUT;
    if ((pcr_mask >> LOCKET_TPM_PCR_COUNT) != 0) return TSS2_ESYS_RC_BAD_VALUE;
    ESYS_TR handle;
    TSS2_RC rc = locket_tpm_load(tpm, sealed, TPM2_ALG_KEYEDHASH, auth, 1, &handle, stage);
    if (rc != 0) return rc;
    ESYS_TR session = tpm->session;
    ESYS_TR policy = ESYS_TR_NONE;
    if (pcr_mask != 0) {
        *stage = LOCKET_TPM_STAGE_POLICY;
        rc = start_policy(tpm, TPM2_SE_POLICY, &policy);
        if (rc == 0) rc = run_policy(tpm, policy, pcr_mask, auth.size > 0);
        if (rc == 0) rc = Esys_TRSess_SetAttributes(tpm->esys, policy, TPMA_SESSION_ENCRYPT, 0xff);
        session = policy;
    } else {
        rc = locket_tpm_session_for(tpm, TPMA_SESSION_ENCRYPT);
    }
    TPM2B_SENSITIVE_DATA *data = NULL;
    if (rc == 0) {
        *stage = LOCKET_TPM_STAGE_USE;
        rc = Esys_Unseal(tpm->esys, handle, session, ESYS_TR_NONE, ESYS_TR_NONE, &data);
        locket_tpm_scrub(tpm);
    }
    // Without continueSession the TPM ends a policy session that succeeded; one that failed is flushed here.
    if (policy != ESYS_TR_NONE && rc != 0) Esys_FlushContext(tpm->esys, policy);
    locket_tpm_flush(tpm, handle, auth.size > 0);
    if (rc != 0) return rc;
    if (data->size == 0 || data->size > LOCKET_TPM_SEAL_MAX) rc = TSS2_ESYS_RC_MALFORMED_RESPONSE;
    else {
        memcpy(out, data->buffer, data->size);
        *out_size = data->size;
    }
    locket_tpm_wipe(data, sizeof *data);
    Esys_Free(data);
    return rc;
}
