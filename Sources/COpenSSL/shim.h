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

#endif
