#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/encoder.h>
#include <openssl/decoder.h>
#include <openssl/ecdsa.h>
#include <openssl/sha.h>

// What Swift cannot import from libcrypto's headers: function-like macros and
// constants built from other macros.
static inline void locket_openssl_free(void *p) { OPENSSL_free(p); }
static inline int locket_err_reason(unsigned long e) { return ERR_GET_REASON(e); }
static inline int locket_err_lib(unsigned long e) { return ERR_GET_LIB(e); }
static inline unsigned long locket_init_no_config(void) { return OPENSSL_INIT_NO_LOAD_CONFIG; }
static inline long locket_bio_mem_data(BIO *b, char **p) { return BIO_get_mem_data(b, p); }
static inline int locket_evp_pkey_keypair(void) { return EVP_PKEY_KEYPAIR; }
static inline int locket_evp_pkey_public(void) { return EVP_PKEY_PUBLIC_KEY; }
static inline unsigned long locket_xn_flag_rfc2253(void) { return XN_FLAG_RFC2253; }
static inline int locket_evp_ctrl_gcm_set_ivlen(void) { return EVP_CTRL_GCM_SET_IVLEN; }
static inline int locket_evp_ctrl_gcm_get_tag(void) { return EVP_CTRL_GCM_GET_TAG; }
static inline int locket_evp_ctrl_gcm_set_tag(void) { return EVP_CTRL_GCM_SET_TAG; }
// PKCS7's content is a union Swift can't name safely: the type and the
// password-based algorithm of an encrypted PKCS#12 safe.
static inline int locket_pkcs7_nid(const PKCS7 *p7) { return p7 && p7->type ? OBJ_obj2nid(p7->type) : NID_undef; }
static inline const X509_ALGOR *locket_pkcs7_encrypted_algorithm(const PKCS7 *p7) {
    if (locket_pkcs7_nid(p7) != NID_pkcs7_encrypted || !p7->d.encrypted || !p7->d.encrypted->enc_data) return NULL;
    return p7->d.encrypted->enc_data->algorithm;
}
