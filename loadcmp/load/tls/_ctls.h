/* OpenSSL for the compiled closed loop's https (_ctls.pyx): one client context per load, its
 * certificate check, the sessions it saves for resumption, and each step's result as the loop
 * reads it (want read / want write / done / failed, and why).
 *
 * The check. The first handshake verifies the server's chain in full against the CA file (or the
 * system's CAs) and the name in the URL (a DNS name or an IP address); its leaf certificate is
 * kept. Each later handshake whose leaf is byte-identical to that one (X509_cmp: the SHA-1 of the
 * DER, then the DER itself) is accepted without walking the chain again: the CA's signature over
 * those very bytes was checked already, the name in them was matched, and the handshake itself
 * still proves the server holds the leaf's key (CertificateVerify, or the resumed session's
 * secret). Any other leaf is verified in full. So a load checks what a browser checks, and a
 * new connection per request costs no more client CPU than ab's, which verifies nothing.
 */
#ifndef LOADCMP_CTLS_H
#define LOADCMP_CTLS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

enum { TLS_DONE = 1, TLS_WANT_READ = 2, TLS_WANT_WRITE = 3, TLS_CLOSED = 0, TLS_SYSCALL = -1, TLS_FAILED = -2 };

#define TLS_FACTS 8 /* distinct (version, cipher, ALPN) kept apart until the hand-over; more are summed in the last */

typedef struct {
    const char *version, *cipher; /* OpenSSL's static names */
    int alpn;                     /* 1: "http/1.1" was chosen, 2: "h2", 0: none */
    long long n;
} tls_fact_t;

#define TLS_POOL 64 /* the TLS 1.3 tickets kept for their single use, at most (the oldest go first) */

typedef struct {
    SSL_CTX *ctx;
    X509 *leaf;          /* the leaf that verified in full; later handshakes need only match it */
    SSL_SESSION *saved;  /* the latest session the server handed out (a ticket), offered to resume */
    SSL_SESSION *fresh[TLS_POOL]; /* TLS 1.3 tickets not offered yet, newest last: each is offered once */
    int nfresh;
    long long full, resumed;
    tls_fact_t facts[TLS_FACTS];
    int nfacts;
} tls_t;

static int tls_check(X509_STORE_CTX *store, void *arg) {
    tls_t *t = (tls_t *)arg;
    X509 *leaf = X509_STORE_CTX_get0_cert(store);
    if (t->leaf != NULL && leaf != NULL && X509_cmp(t->leaf, leaf) == 0)
        return 1;
    int ok = X509_verify_cert(store);
    if (ok == 1 && leaf != NULL && t->leaf == NULL && X509_up_ref(leaf))
        t->leaf = leaf;
    return ok;
}

static int tls_unchecked(X509_STORE_CTX *store, void *arg) {
    (void)store, (void)arg;
    return 1;
}

/* A ticket or session arrived (TLS 1.3: after the handshake, with the answer): keep the latest. */
static int tls_new_session(SSL *ssl, SSL_SESSION *sess) {
    tls_t *t = (tls_t *)SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if (!SSL_SESSION_is_resumable(sess))
        return 0;
    if (SSL_SESSION_get_protocol_version(sess) == TLS1_3_VERSION && SSL_SESSION_up_ref(sess)) {
        if (t->nfresh == TLS_POOL) {
            SSL_SESSION_free(t->fresh[0]);
            memmove(t->fresh, t->fresh + 1, (TLS_POOL - 1) * sizeof(*t->fresh));
            t->nfresh--;
        }
        t->fresh[t->nfresh++] = sess;
    }
    if (t->saved != NULL)
        SSL_SESSION_free(t->saved);
    t->saved = sess;
    return 1; /* ours now */
}

/* The context of one load (ALPN offers "h2" first when `h2`, and "http/1.1", so that a server without h2 says
 * what it speaks instead of nothing; else "http/1.1" alone); NULL, or what went wrong in words. */
static const char *tls_open(tls_t *t, const char *cafile, const char *host, int is_ip, int verify, int resume,
                            int h2) {
    static const unsigned char h1_alpn[] = "\x08http/1.1", h2_alpn[] = "\x02h2\x08http/1.1";
    const unsigned char *alpn = h2 ? h2_alpn : h1_alpn;
    unsigned int alpn_len = h2 ? sizeof(h2_alpn) - 1 : sizeof(h1_alpn) - 1;
    memset(t, 0, sizeof(*t));
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (t->ctx == NULL)
        return "SSL_CTX_new failed";
    SSL_CTX_set_app_data(t->ctx, t);
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION); /* as Python's default context */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF); /* a close without close_notify is an EOF */
    SSL_CTX_set_read_ahead(t->ctx, 1);                         /* one recv for several records */
    if (SSL_CTX_set_alpn_protos(t->ctx, alpn, alpn_len) != 0)
        return "cannot offer ALPN";
    if (verify) {
        if ((cafile ? SSL_CTX_load_verify_locations(t->ctx, cafile, NULL)
                    : SSL_CTX_set_default_verify_paths(t->ctx)) != 1)
            return "cannot read the CA certificates";
        X509_VERIFY_PARAM *p = SSL_CTX_get0_param(t->ctx);
        if ((is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host) : X509_VERIFY_PARAM_set1_host(p, host, 0)) != 1)
            return "cannot check the server's name";
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_cert_verify_callback(t->ctx, tls_check, t);
    } else { /* --insecure: nothing is checked, so the chain is not walked either (OpenSSL would, to ignore it) */
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_NONE, NULL);
        SSL_CTX_set_cert_verify_callback(t->ctx, tls_unchecked, NULL);
    }
    if (resume) {
        SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(t->ctx, tls_new_session);
    } else {
        SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
    }
    ERR_clear_error();
    return NULL;
}

static void tls_close(tls_t *t) {
    while (t->nfresh > 0)
        SSL_SESSION_free(t->fresh[--t->nfresh]);
    if (t->saved != NULL)
        SSL_SESSION_free(t->saved);
    if (t->leaf != NULL)
        X509_free(t->leaf);
    if (t->ctx != NULL)
        SSL_CTX_free(t->ctx);
    t->saved = NULL, t->leaf = NULL, t->ctx = NULL;
}

/* A connection's TLS over socket `fd`, offering the saved session when `offer`; NULL: out of memory.
 * `spare`, the TLS of the client's last connection when it ended well, is cleared and used again:
 * its buffers and settings are kept, sparing the allocations that are most of SSL_new's and
 * SSL_free's cost (its session is dropped unless this one offers the saved one). */
static SSL *tls_new(tls_t *t, SSL *spare, int fd, const char *sni, int offer) {
    SSL *s = spare;
    if (s != NULL) {
        BIO *b = SSL_get_rbio(s);
        if (!SSL_clear(s) || b == NULL || BIO_set_fd(b, fd, BIO_NOCLOSE) != 1) {
            SSL_free(s);
            s = NULL;
        } else {
            BIO_clear_retry_flags(b);
        }
    }
    if (s == NULL) {
        s = SSL_new(t->ctx);
        if (s == NULL || !SSL_set_fd(s, fd)) {
            SSL_free(s);
            return NULL;
        }
    }
    /* a TLS 1.3 ticket once, as browsers use them (RFC 8446 C.4); the latest again when none is fresh */
    SSL_SESSION *fresh = offer && t->nfresh > 0 ? t->fresh[--t->nfresh] : NULL;
    int set = SSL_set_session(s, fresh ? fresh : offer ? t->saved : NULL);
    if (fresh != NULL)
        SSL_SESSION_free(fresh); /* the connection holds it now */
    if ((sni != NULL && !SSL_set_tlsext_host_name(s, sni)) || !set) {
        SSL_free(s);
        return NULL;
    }
    SSL_set_connect_state(s);
    return s;
}

/* What a call of SSL_do_handshake / SSL_read / SSL_write that returned `r` means; `*err` gets errno
 * for TLS_SYSCALL. The error queue is left as it is for TLS_FAILED (`tls_reason` reads it). */
static int tls_result(SSL *s, int r, int *err) {
    int saved = errno, e = SSL_get_error(s, r);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        return TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        return TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        *err = saved;
        return saved ? TLS_SYSCALL : TLS_CLOSED;
    default:
        return TLS_FAILED;
    }
}

/* Why the last TLS call failed, as outcomes.tls_reason names it: "alert handshake failure",
 * "certificate verify failed", "wrong version number". Clears the error queue. */
static void tls_reason(char *out, size_t n) {
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    static const char *prefixes[] = {"sslv3 ", "tlsv13 ", "tlsv1 "};
    if (r == NULL) {
        snprintf(out, n, e ? "error %lu" : "unknown", e);
    } else {
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++)
            if (strncmp(r, prefixes[i], strlen(prefixes[i])) == 0) {
                r += strlen(prefixes[i]);
                break;
            }
        snprintf(out, n, "%s", strstr(r, "eof") ? "eof during handshake" : r);
    }
    ERR_clear_error();
}

/* A handshake ended: count it (full or resumed) and what it negotiated. */
static void tls_count(tls_t *t, SSL *s) {
    const unsigned char *proto;
    unsigned int len = 0;
    const char *version = SSL_get_version(s);
    const SSL_CIPHER *c = SSL_get_current_cipher(s);
    const char *cipher = c ? SSL_CIPHER_get_name(c) : "";
    int i;
    SSL_get0_alpn_selected(s, &proto, &len);
    int alpn = len == 8 && memcmp(proto, "http/1.1", 8) == 0 ? 1 : (len == 2 && memcmp(proto, "h2", 2) == 0 ? 2 : 0);
    if (SSL_session_reused(s))
        t->resumed++;
    else
        t->full++;
    for (i = 0; i < t->nfacts; i++)
        if (t->facts[i].version == version && t->facts[i].cipher == cipher && t->facts[i].alpn == alpn)
            break;
    if (i == t->nfacts) {
        if (t->nfacts == TLS_FACTS)
            i = TLS_FACTS - 1;
        else
            t->nfacts++, t->facts[i].version = version, t->facts[i].cipher = cipher, t->facts[i].alpn = alpn;
    }
    t->facts[i].n++;
}

#endif
