// Opening the TPM, the storage key and the salted session every object
// operation uses, and the read-only queries (probe, lockout counters).

#include "tpm_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_sys.h>
#include <tss2/tss2_tctildr.h>

// The TCG's "H-2" template (EK Credential Profile B.4.5, zero-sized unique):
// the storage key that the key-file convention's parent 0x40000001 means,
// byte for byte what tpm2-openssl and go-tpm-keyfiles (ssh-tpm-agent) make,
// so a key made here loads in their tools and theirs here.
static const TPM2B_PUBLIC storage_key_template = {
    .publicArea = {
        .type = TPM2_ALG_ECC,
        .nameAlg = TPM2_ALG_SHA256,
        .objectAttributes = TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_NODA
            | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN,
        .authPolicy = { .size = 0 },
        .parameters.eccDetail = {
            .symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB },
            .scheme = { .scheme = TPM2_ALG_NULL },
            .curveID = TPM2_ECC_NIST_P256,
            .kdf = { .scheme = TPM2_ALG_NULL },
        },
        .unique.ecc = { .x.size = 0, .y.size = 0 },
    },
};

uint32_t locket_tpm_open(const char *tcti, locket_tpm **out, int *stage) {
    *stage = LOCKET_TPM_STAGE_CONNECT;
    *out = NULL;
    locket_tpm *tpm = calloc(1, sizeof *tpm);
    if (tpm == NULL) return TSS2_TCTI_RC_MEMORY;
    tpm->storage_key = ESYS_TR_NONE;
    tpm->session = ESYS_TR_NONE;
    TSS2_RC rc = Tss2_TctiLdr_Initialize(tcti, &tpm->tcti);
    if (rc == 0) rc = Esys_Initialize(&tpm->esys, tpm->tcti, NULL);
    if (rc != 0) {
        locket_tpm_close(tpm);
        return rc;
    }
    *out = tpm;
    return 0;
}

void locket_tpm_close(locket_tpm *tpm) {
    if (tpm == NULL) return;
    if (tpm->esys != NULL) {
        // A TPM without a resource manager (swtpm, /dev/tpm0) keeps what is
        // not flushed until its next reset.
        if (tpm->session != ESYS_TR_NONE) Esys_FlushContext(tpm->esys, tpm->session);
        if (tpm->storage_key != ESYS_TR_NONE) Esys_FlushContext(tpm->esys, tpm->storage_key);
        Esys_Finalize(&tpm->esys);
    }
    if (tpm->tcti != NULL) Tss2_TctiLdr_Finalize(&tpm->tcti);
    free(tpm);
}

TSS2_RC locket_tpm_storage_key(locket_tpm *tpm, int *stage) {
    if (tpm->storage_key != ESYS_TR_NONE) return 0;
    *stage = LOCKET_TPM_STAGE_PARENT;
    const TPM2B_SENSITIVE_CREATE sensitive = { .size = 0 };
    const TPM2B_DATA outside = { .size = 0 };
    const TPML_PCR_SELECTION creation = { .count = 0 };
    // Nothing secret goes with it (the owner hierarchy's empty authorization), so a password session.
    TSS2_RC rc = Esys_CreatePrimary(tpm->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive,
                                    &storage_key_template, &outside, &creation, &tpm->storage_key, NULL, NULL, NULL, NULL);
    if (rc != 0) tpm->storage_key = ESYS_TR_NONE;
    return rc;
}

TSS2_RC locket_tpm_parent(locket_tpm *tpm, int *stage) {
    TSS2_RC rc = locket_tpm_storage_key(tpm, stage);
    if (rc != 0 || tpm->session != ESYS_TR_NONE) return rc;
    *stage = LOCKET_TPM_STAGE_PARENT;
    // Salted to the storage key: the session key is unknown to anyone on the
    // bus, so the HMACs hide the authorization values and AES-128-CFB
    // parameter encryption hides secrets going in and out.
    const TPMT_SYM_DEF symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB };
    rc = Esys_StartAuthSession(tpm->esys, tpm->storage_key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL,
                               TPM2_SE_HMAC, &symmetric, TPM2_ALG_SHA256, &tpm->session);
    if (rc != 0) tpm->session = ESYS_TR_NONE;
    return rc;
}

TSS2_RC locket_tpm_session_for(locket_tpm *tpm, TPMA_SESSION encryption) {
    return Esys_TRSess_SetAttributes(tpm->esys, tpm->session, TPMA_SESSION_CONTINUESESSION | encryption, 0xff);
}

TSS2_RC locket_tpm_set_auth(locket_tpm *tpm, ESYS_TR object, locket_tpm_auth auth) {
    TPM2B_AUTH value = { .size = (UINT16)auth.size };
    if (auth.size > LOCKET_TPM_AUTH_MAX) return TSS2_ESYS_RC_BAD_VALUE;
    if (auth.size > 0) memcpy(value.buffer, auth.bytes, auth.size);
    TSS2_RC rc = Esys_TR_SetAuth(tpm->esys, object, &value);
    locket_tpm_wipe(&value, sizeof value);
    return rc;
}

void locket_tpm_flush(locket_tpm *tpm, ESYS_TR object, int had_auth) {
    if (object == ESYS_TR_NONE) return;
    // ESAPI keeps the object's authorization value in its own record and
    // frees it unwiped: overwrite the whole buffer first. (Not for an object
    // that had none: ESAPI hashes a value this long, and tpm2-tss 3.2 pays a
    // new OpenSSL library context, about a millisecond, for every hash.)
    if (had_auth) {
        TPM2B_AUTH zeros = { .size = sizeof zeros.buffer };
        memset(zeros.buffer, 0, sizeof zeros.buffer);
        (void)Esys_TR_SetAuth(tpm->esys, object, &zeros);
    }
    (void)Esys_FlushContext(tpm->esys, object);
}

/// One TPM property (TPM2_CAP_TPM_PROPERTIES); missing ones read as 0.
static TSS2_RC read_properties(locket_tpm *tpm, TPM2_PT first, uint32_t count, uint32_t *values) {
    memset(values, 0, count * sizeof *values);
    TPMS_CAPABILITY_DATA *data = NULL;
    TPMI_YES_NO more = 0;
    TSS2_RC rc = Esys_GetCapability(tpm->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_TPM_PROPERTIES, first, count,
                                    &more, &data);
    if (rc != 0) return rc;
    for (UINT32 i = 0; i < data->data.tpmProperties.count; i++) {
        TPM2_PT property = data->data.tpmProperties.tpmProperty[i].property;
        if (property >= first && property < first + count) values[property - first] = data->data.tpmProperties.tpmProperty[i].value;
    }
    Esys_Free(data);
    return 0;
}

uint32_t locket_tpm_probe(locket_tpm *tpm, locket_tpm_info *info, int *stage) {
    *stage = LOCKET_TPM_STAGE_QUERY;
    memset(info, 0, sizeof *info);
    uint32_t fixed[13];
    TSS2_RC rc = read_properties(tpm, TPM2_PT_FAMILY_INDICATOR, 13, fixed);
    if (rc != 0) return rc;
    info->family = fixed[0];
    info->revision = fixed[2];
    info->day_of_year = fixed[3];
    info->year = fixed[4];
    info->manufacturer = fixed[5];
    for (int i = 0; i < 4; i++) info->vendor[i] = fixed[6 + i];
    info->firmware[0] = fixed[11];
    info->firmware[1] = fixed[12];
    TPMS_CAPABILITY_DATA *curves = NULL;
    TPMI_YES_NO more = 0;
    rc = Esys_GetCapability(tpm->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_ECC_CURVES, TPM2_ECC_NIST_P256, 1,
                            &more, &curves);
    if (rc != 0) return rc;
    info->has_p256 = curves->data.eccCurves.count > 0 && curves->data.eccCurves.eccCurves[0] == TPM2_ECC_NIST_P256;
    Esys_Free(curves);
    return 0;
}

uint32_t locket_tpm_lockout_status(locket_tpm *tpm, locket_tpm_lockout *out, int *stage) {
    *stage = LOCKET_TPM_STAGE_QUERY;
    memset(out, 0, sizeof *out);
    uint32_t permanent = 0;
    TSS2_RC rc = read_properties(tpm, TPM2_PT_PERMANENT, 1, &permanent);
    if (rc != 0) return rc;
    uint32_t counters[4];
    rc = read_properties(tpm, TPM2_PT_LOCKOUT_COUNTER, 4, counters);
    if (rc != 0) return rc;
    out->in_lockout = (permanent & TPMA_PERMANENT_INLOCKOUT) != 0;
    out->counter = counters[0];
    out->max_tries = counters[1];
    out->interval = counters[2];
    out->recovery = counters[3];
    return 0;
}

// Not inlined, so its frame lies where the frames of the calls just made lay.
__attribute__((noinline)) void locket_tpm_burn_stack(void) {
    volatile uint8_t area[256 * 1024];
    explicit_bzero((void *)area, sizeof area);
    __asm__ __volatile__("" : : "r"(area) : "memory");
}

void locket_tpm_scrub(locket_tpm *tpm) {
    // ESAPI decrypts a response's first parameter through a copy on its own
    // stack and then puts the plaintext back into the SAPI context's buffer,
    // where it stays until the next response: zero both.
    TSS2_SYS_CONTEXT *sys = NULL;
    size_t size = 0;
    const uint8_t *parameters = NULL;
    if (Esys_GetSysContext(tpm->esys, &sys) == 0 && sys != NULL && Tss2_Sys_GetRpBuffer(sys, &size, &parameters) == 0 && parameters != NULL) {
        explicit_bzero((void *)parameters, size);
    }
    locket_tpm_burn_stack();
}

const char *locket_tpm_rc_text(uint32_t rc) { return Tss2_RC_Decode(rc); }

void locket_tpm_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &none);
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void locket_tpm_wipe(void *bytes, size_t size) {
    if (bytes != NULL && size > 0) explicit_bzero(bytes, size);
}
