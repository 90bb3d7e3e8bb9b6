// Objects under the storage key: P-256 keys (made, loaded, used, flushed;
// sealed secrets are in sealed.c). Every object is loaded for one request
// and flushed before it returns; the blobs come from the caller and are
// checked here again (they unmarshal whole, and are the kind the request needs).

#include "tpm_internal.h"

#include <string.h>
#include <tss2/tss2_mu.h>

/// The P-256 key the Secure Enclave token means: made in the TPM and fixed
/// to it (never duplicated, never exported), both a signing and a key
/// agreement key as Apple's are, with a null scheme so each command names
/// its own. Without an authorization value there is nothing to guess, so
/// noDA: such keys keep working while the TPM is in lockout.
static TPM2B_PUBLIC key_template(int has_auth) {
    TPM2B_PUBLIC template = {
        .publicArea = {
            .type = TPM2_ALG_ECC,
            .nameAlg = TPM2_ALG_SHA256,
            .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
                | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_DECRYPT,
            .parameters.eccDetail = {
                .symmetric = { .algorithm = TPM2_ALG_NULL },
                .scheme = { .scheme = TPM2_ALG_NULL },
                .curveID = TPM2_ECC_NIST_P256,
                .kdf = { .scheme = TPM2_ALG_NULL },
            },
        },
    };
    if (!has_auth) template.publicArea.objectAttributes |= TPMA_OBJECT_NODA;
    return template;
}

TSS2_RC locket_tpm_store(const TPM2B_PUBLIC *public_area, const TPM2B_PRIVATE *private_area, locket_tpm_made *made) {
    size_t offset = 0;
    TSS2_RC rc = Tss2_MU_TPM2B_PUBLIC_Marshal(public_area, made->public_area, made->public_capacity, &offset);
    if (rc != 0) return rc;
    made->public_size = offset;
    offset = 0;
    rc = Tss2_MU_TPM2B_PRIVATE_Marshal(private_area, made->private_area, made->private_capacity, &offset);
    if (rc != 0) return rc;
    made->private_size = offset;
    return 0;
}

/// The caller's blob, unmarshalled whole (no trailing bytes) and of the expected type.
static TSS2_RC parse(locket_tpm_object object, TPMI_ALG_PUBLIC type, TPM2B_PUBLIC *public_area, TPM2B_PRIVATE *private_area) {
    size_t offset = 0;
    memset(public_area, 0, sizeof *public_area);
    memset(private_area, 0, sizeof *private_area);
    TSS2_RC rc = Tss2_MU_TPM2B_PUBLIC_Unmarshal(object.public_area, object.public_size, &offset, public_area);
    if (rc != 0) return rc;
    if (offset != object.public_size) return TSS2_ESYS_RC_BAD_VALUE;
    offset = 0;
    rc = Tss2_MU_TPM2B_PRIVATE_Unmarshal(object.private_area, object.private_size, &offset, private_area);
    if (rc != 0) return rc;
    if (offset != object.private_size) return TSS2_ESYS_RC_BAD_VALUE;
    if (public_area->publicArea.type != type) return TSS2_ESYS_RC_BAD_VALUE;
    if (type == TPM2_ALG_ECC && public_area->publicArea.parameters.eccDetail.curveID != TPM2_ECC_NIST_P256) return TSS2_ESYS_RC_BAD_VALUE;
    return 0;
}

/// Checks and loads `object` under the storage key; `*handle` to flush after
/// use. With `session`, the salted session is made if it is not there yet
/// and Load goes through it; without, Load and whatever follows go with the
/// empty password (`ESYS_TR_PASSWORD`): nothing secret passes (the private
/// part is encrypted to the storage key), and tpm2-tss 3.2 pays about a
/// millisecond of CPU for each hash an HMAC session computes (it makes a new
/// OpenSSL library context every time), some ten for a signature.
TSS2_RC locket_tpm_load(locket_tpm *tpm, locket_tpm_object object, TPMI_ALG_PUBLIC type, locket_tpm_auth auth, int session, ESYS_TR *handle,
                    int *stage) {
    *handle = ESYS_TR_NONE;
    TPM2B_PUBLIC public_area;
    TPM2B_PRIVATE private_area;
    *stage = LOCKET_TPM_STAGE_INPUT;
    TSS2_RC rc = parse(object, type, &public_area, &private_area);
    if (rc != 0) return rc;
    rc = session ? locket_tpm_parent(tpm, stage) : locket_tpm_storage_key(tpm, stage);
    if (rc != 0) return rc;
    *stage = LOCKET_TPM_STAGE_LOAD;
    if (session) rc = locket_tpm_session_for(tpm, 0);
    if (rc == 0) {
        rc = Esys_Load(tpm->esys, tpm->storage_key, session ? tpm->session : ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &private_area,
                       &public_area, handle);
    }
    if (rc != 0) {
        *handle = ESYS_TR_NONE;
        return rc;
    }
    // A loaded object's authorization value is empty until set.
    if (auth.size > 0) rc = locket_tpm_set_auth(tpm, *handle, auth);
    if (rc != 0) {
        locket_tpm_flush(tpm, *handle, 1);
        *handle = ESYS_TR_NONE;
    }
    return rc;
}

uint32_t locket_tpm_create_key(locket_tpm *tpm, locket_tpm_auth auth, locket_tpm_made *made, int *stage) {
    *stage = LOCKET_TPM_STAGE_INPUT;
    if (auth.size > LOCKET_TPM_AUTH_MAX) return TSS2_ESYS_RC_BAD_VALUE;
    TSS2_RC rc = locket_tpm_parent(tpm, stage);
    if (rc != 0) return rc;
    *stage = LOCKET_TPM_STAGE_USE;
    TPM2B_SENSITIVE_CREATE sensitive = { .size = 0 };
    sensitive.sensitive.userAuth.size = (UINT16)auth.size;
    if (auth.size > 0) memcpy(sensitive.sensitive.userAuth.buffer, auth.bytes, auth.size);
    const TPM2B_PUBLIC template = key_template(auth.size > 0);
    const TPM2B_DATA outside = { .size = 0 };
    const TPML_PCR_SELECTION creation = { .count = 0 };
    TPM2B_PUBLIC *public_area = NULL;
    TPM2B_PRIVATE *private_area = NULL;
    // The authorization value is Create's first parameter: encrypted on the way in.
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

uint32_t locket_tpm_sign(locket_tpm *tpm, locket_tpm_object key, locket_tpm_auth auth, const uint8_t *digest,
                         uint8_t *r, size_t *r_size, uint8_t *s, size_t *s_size, int *stage) {
    // Neither the digest nor the signature is secret: only an authorization
    // value needs the HMAC session (it must never cross the bus). locket
    // checks every signature against the key's public key, which catches a
    // digest or signature changed on the way.
    const int session = auth.size > 0;
    ESYS_TR handle;
    TSS2_RC rc = locket_tpm_load(tpm, key, TPM2_ALG_ECC, auth, session, &handle, stage);
    if (rc != 0) return rc;
    *stage = LOCKET_TPM_STAGE_USE;
    TPM2B_DIGEST hashed = { .size = LOCKET_TPM_P256_BYTES };
    memcpy(hashed.buffer, digest, LOCKET_TPM_P256_BYTES);
    const TPMT_SIG_SCHEME scheme = { .scheme = TPM2_ALG_ECDSA, .details.ecdsa.hashAlg = TPM2_ALG_SHA256 };
    // An unrestricted key signs any digest: the null ticket.
    const TPMT_TK_HASHCHECK validation = { .tag = TPM2_ST_HASHCHECK, .hierarchy = TPM2_RH_NULL, .digest.size = 0 };
    TPMT_SIGNATURE *signature = NULL;
    if (session) rc = locket_tpm_session_for(tpm, 0);
    if (rc == 0) {
        rc = Esys_Sign(tpm->esys, handle, session ? tpm->session : ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &hashed, &scheme,
                       &validation, &signature);
    }
    locket_tpm_flush(tpm, handle, auth.size > 0);
    if (rc != 0) return rc;
    const TPMS_SIGNATURE_ECDSA *ecdsa = &signature->signature.ecdsa;
    if (signature->sigAlg != TPM2_ALG_ECDSA || ecdsa->signatureR.size > LOCKET_TPM_P256_BYTES
        || ecdsa->signatureS.size > LOCKET_TPM_P256_BYTES) {
        Esys_Free(signature);
        return TSS2_ESYS_RC_MALFORMED_RESPONSE;
    }
    memcpy(r, ecdsa->signatureR.buffer, ecdsa->signatureR.size);
    *r_size = ecdsa->signatureR.size;
    memcpy(s, ecdsa->signatureS.buffer, ecdsa->signatureS.size);
    *s_size = ecdsa->signatureS.size;
    Esys_Free(signature);
    return 0;
}

uint32_t locket_tpm_ecdh(locket_tpm *tpm, locket_tpm_object key, locket_tpm_auth auth, const uint8_t *x, const uint8_t *y,
                         uint8_t *z, size_t *z_size, int *stage) {
    ESYS_TR handle;
    TSS2_RC rc = locket_tpm_load(tpm, key, TPM2_ALG_ECC, auth, 1, &handle, stage);
    if (rc != 0) return rc;
    *stage = LOCKET_TPM_STAGE_USE;
    TPM2B_ECC_POINT peer = { .size = 0 };
    peer.point.x.size = LOCKET_TPM_P256_BYTES;
    memcpy(peer.point.x.buffer, x, LOCKET_TPM_P256_BYTES);
    peer.point.y.size = LOCKET_TPM_P256_BYTES;
    memcpy(peer.point.y.buffer, y, LOCKET_TPM_P256_BYTES);
    TPM2B_ECC_POINT *shared = NULL;
    // The shared point is the response's first parameter: encrypted on the way out.
    rc = locket_tpm_session_for(tpm, TPMA_SESSION_ENCRYPT);
    if (rc == 0) rc = Esys_ECDH_ZGen(tpm->esys, handle, tpm->session, ESYS_TR_NONE, ESYS_TR_NONE, &peer, &shared);
    locket_tpm_scrub(tpm);
    locket_tpm_flush(tpm, handle, auth.size > 0);
    if (rc != 0) return rc;
    if (shared->point.x.size != LOCKET_TPM_P256_BYTES) rc = TSS2_ESYS_RC_MALFORMED_RESPONSE;
    else {
        memcpy(z, shared->point.x.buffer, LOCKET_TPM_P256_BYTES);
        *z_size = LOCKET_TPM_P256_BYTES;
    }
    locket_tpm_wipe(shared, sizeof *shared);
    Esys_Free(shared);
    return rc;
}
