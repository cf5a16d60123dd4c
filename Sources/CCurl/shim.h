#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <stddef.h>
#include <string.h>
#include <curl/curl.h>

/// One transfer's settings in a fixed shape: `curl_easy_setopt` and `curl_easy_getinfo` are
/// variadic, which Swift cannot call.
typedef struct CCurl_Transfer {
    const char *url;
    const char *method;                 /* "GET", "HEAD", "POST", "PUT" … */
    const unsigned char *body;          /* sent for every method but GET and HEAD; may be NULL */
    size_t bodyLength;
    struct curl_slist *headers;         /* "Name: value" lines */
    long timeoutMilliseconds;           /* the whole transfer, connection to last byte */
    long connectTimeoutMilliseconds;
    const char *caFile;                 /* NULL: the system's trust store */
    curl_off_t maxFileSize;             /* refused at once when Content-Length says more */
    char *errorBuffer;                  /* CURL_ERROR_SIZE bytes */
    size_t (*write)(char *data, size_t size, size_t count, void *context);
    size_t (*header)(char *data, size_t size, size_t count, void *context);
    int (*progress)(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
    void *context;
} CCurl_Transfer;

#define CCURL_SET(handle, option, value) \
    do { CURLcode code_ = curl_easy_setopt(handle, option, value); if (code_ != CURLE_OK) return code_; } while (0)

/// Applies `t` to a reset easy handle. Redirects are never followed, only http and https are
/// spoken, bodies are never decoded (the byte cap applies to what arrives), signals are not used.
static inline CURLcode CCurl_configure(CURL *handle, const CCurl_Transfer *t) {
    CCURL_SET(handle, CURLOPT_URL, t->url);
    CCURL_SET(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    CCURL_SET(handle, CURLOPT_FOLLOWLOCATION, 0L);
    CCURL_SET(handle, CURLOPT_NOSIGNAL, 1L);
    CCURL_SET(handle, CURLOPT_TIMEOUT_MS, t->timeoutMilliseconds);
    CCURL_SET(handle, CURLOPT_CONNECTTIMEOUT_MS, t->connectTimeoutMilliseconds);
    CCURL_SET(handle, CURLOPT_MAXFILESIZE_LARGE, t->maxFileSize);
    CCURL_SET(handle, CURLOPT_ERRORBUFFER, t->errorBuffer);
    CCURL_SET(handle, CURLOPT_WRITEFUNCTION, t->write);
    CCURL_SET(handle, CURLOPT_WRITEDATA, t->context);
    CCURL_SET(handle, CURLOPT_HEADERFUNCTION, t->header);
    CCURL_SET(handle, CURLOPT_HEADERDATA, t->context);
    CCURL_SET(handle, CURLOPT_XFERINFOFUNCTION, t->progress);
    CCURL_SET(handle, CURLOPT_XFERINFODATA, t->context);
    CCURL_SET(handle, CURLOPT_NOPROGRESS, 0L);
    CCURL_SET(handle, CURLOPT_HTTPHEADER, t->headers);
    if (t->caFile != NULL) CCURL_SET(handle, CURLOPT_CAINFO, t->caFile);
    if (strcmp(t->method, "GET") == 0) {
        CCURL_SET(handle, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(t->method, "HEAD") == 0) {
        CCURL_SET(handle, CURLOPT_NOBODY, 1L);
    } else {
        CCURL_SET(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->bodyLength);
        CCURL_SET(handle, CURLOPT_POSTFIELDS, t->body != NULL ? (const char *)t->body : "");
        if (strcmp(t->method, "POST") != 0) CCURL_SET(handle, CURLOPT_CUSTOMREQUEST, t->method);
    }
    return CURLE_OK;
}

#undef CCURL_SET

/// `curl_global_init` with the default flags (a macro Swift cannot import).
static inline CURLcode CCurl_globalInit(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }

/// The size `CURLOPT_ERRORBUFFER` needs.
static const size_t CCurl_errorBufferSize = CURL_ERROR_SIZE;

/// The last response's status code (0 when none arrived).
static inline long CCurl_responseCode(CURL *handle) {
    long code = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

#endif
