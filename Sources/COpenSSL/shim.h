#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>

// Function-like macros and stack accessors that Swift cannot import directly.

static inline STACK_OF(X509) *COpenSSL_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int COpenSSL_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void COpenSSL_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
static inline void COpenSSL_free(void *p) { OPENSSL_free(p); }

static inline int COpenSSL_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *COpenSSL_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
static inline void COpenSSL_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }

static inline int COpenSSL_sk_OPENSSL_STRING_num(const STACK_OF(OPENSSL_STRING) *sk) { return sk_OPENSSL_STRING_num(sk); }
static inline const char *COpenSSL_sk_OPENSSL_STRING_value(const STACK_OF(OPENSSL_STRING) *sk, int i) {
    return sk_OPENSSL_STRING_value(sk, i);
}

/// `EVP_EC_gen` is a macro over the variadic `EVP_PKEY_Q_keygen`.
static inline EVP_PKEY *COpenSSL_EC_gen_P256(void) { return EVP_EC_gen("P-256"); }

/// `EVP_RSA_gen` is a macro over the variadic `EVP_PKEY_Q_keygen`.
static inline EVP_PKEY *COpenSSL_RSA_gen(unsigned int bits) { return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits); }

/// `BIO_get_mem_data` is a macro over `BIO_ctrl`.
static inline long COpenSSL_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }

static inline unsigned long COpenSSL_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }

/// `X509V3_set_ctx_nodb` is a statement macro.
static inline void COpenSSL_X509V3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }

#endif
