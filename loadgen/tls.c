/* HTTPS with OpenSSL, behind calls shaped like send and recv, so the loop
 * treats a TLS connection as a socket with a handshake in front.
 *
 * As ab: a full handshake on every new connection (the cost a browser
 * pays on its first visit), certificates not checked. --tls-resume offers
 * each thread's latest session on its next connection (a returning
 * visitor); --verify checks the chain (against --cacert, or the system's
 * store) and the URL's host. Each loop thread has its own SSL_CTX, so no
 * lock is shared between threads. */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>

#include "loadgen.h"

struct tls_ctx {
    SSL_CTX *ctx;
    SSL_SESSION *session;      /* --tls-resume: the latest one the server gave */
    char sni[256];             /* "" = send none */
    char verify_host[256];     /* --verify: the name (or address) to check */
};

static _Atomic int first_error_set;
static char first_error[512];

const char *tls_library(void) { return OpenSSL_version(OPENSSL_VERSION); }

const char *tls_first_error(void) { return atomic_load(&first_error_set) == 2 ? first_error : ""; }

/* Keeps the reason of the first failure, for one line on stderr. */
static void note_error(SSL *ssl, const char *what)
{
    int zero = 0;
    if (!atomic_compare_exchange_strong(&first_error_set, &zero, 1))
        return;
    char e[256] = "";
    unsigned long code = ERR_peek_error();
    if (code)
        ERR_error_string_n(code, e, sizeof e);
    long vr = SSL_get_verify_result(ssl);
    if (vr != X509_V_OK)
        snprintf(first_error, sizeof first_error, "%s: certificate verify failed: %s", what,
                 X509_verify_cert_error_string(vr));
    else
        snprintf(first_error, sizeof first_error, "%s: %s", what,
                 e[0] ? e : errno ? strerror(errno) : "connection closed");
    atomic_store(&first_error_set, 2);
}

static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct tls_ctx *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if (t->session)
        SSL_SESSION_free(t->session);
    t->session = sess;
    return 1;                  /* we keep the reference */
}

/* ab's -f names. */
static int protocol_range(const char *name, int *lo, int *hi)
{
    static const struct { const char *name; int v; } p[] = {
        { "TLS1.1", TLS1_1_VERSION }, { "TLS1.2", TLS1_2_VERSION },
        { "TLS1.3", TLS1_3_VERSION }, { "TLS1", TLS1_VERSION },
    };
    if (!strcasecmp(name, "ALL")) {
        *lo = *hi = 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (!strcasecmp(name, p[i].name)) {
            *lo = *hi = p[i].v;
            return 0;
        }
    return -1;
}

static void ssl_err(struct zb_err *err, const char *what)
{
    char e[256] = "";
    unsigned long code = ERR_get_error();
    if (code)
        ERR_error_string_n(code, e, sizeof e);
    zb_fail(err, ZB_ERR_INPUT, "%s%s%s", what, e[0] ? ": " : "", e);
    ERR_clear_error();
}

struct tls_ctx *tls_ctx_new(const struct config *cfg, const char *sni, const char *host,
                            struct zb_err *err)
{
    struct tls_ctx *t = calloc(1, sizeof *t);
    if (!t) {
        zb_fail(err, ZB_ERR_SYS, "out of memory");
        return NULL;
    }
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) {
        ssl_err(err, "TLS: cannot make a context");
        free(t);
        return NULL;
    }
    SSL_CTX_set_app_data(t->ctx, t);
    /* A body framed by the close must end at EOF even from a server that
     * sends no close_notify; partial writes as send() has them. */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (cfg->tls_resume) {
        SSL_CTX_set_session_cache_mode(t->ctx,
                                       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(t->ctx, on_new_session);
    } else {
        SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
    }
    const char *bad = NULL;
    int lo, hi;
    if (cfg->tls_protocol) {
        if (protocol_range(cfg->tls_protocol, &lo, &hi) < 0) {
            zb_fail(err, ZB_ERR_INPUT, "-f '%s': not one of TLS1, TLS1.1, TLS1.2, TLS1.3, ALL",
                    cfg->tls_protocol);
            tls_ctx_free(t);
            return NULL;
        }
        if (!SSL_CTX_set_min_proto_version(t->ctx, lo) ||
            !SSL_CTX_set_max_proto_version(t->ctx, hi))
            bad = "-f: protocol not available";
    }
    /* -Z: TLS 1.2 cipher names or TLS 1.3 suites, whichever it holds. */
    if (!bad && cfg->ciphers && !SSL_CTX_set_cipher_list(t->ctx, cfg->ciphers)) {
        ERR_clear_error();
        if (!SSL_CTX_set_ciphersuites(t->ctx, cfg->ciphers))
            bad = "-Z: no cipher or suite matches";
    }
    if (!bad && cfg->client_cert &&
        (!SSL_CTX_use_certificate_chain_file(t->ctx, cfg->client_cert) ||
         !SSL_CTX_use_PrivateKey_file(t->ctx, cfg->client_cert, SSL_FILETYPE_PEM)))
        bad = "-E: cannot use the certificate and key";
    if (!bad && cfg->verify) {
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
        if (cfg->cacert ? !SSL_CTX_load_verify_locations(t->ctx, cfg->cacert, NULL)
                        : !SSL_CTX_set_default_verify_paths(t->ctx))
            bad = "--cacert: cannot load the certificates";
    }
    if (bad) {
        ssl_err(err, bad);
        tls_ctx_free(t);
        return NULL;
    }
    snprintf(t->sni, sizeof t->sni, "%s", sni ? sni : "");
    if (cfg->verify)
        snprintf(t->verify_host, sizeof t->verify_host, "%s", host);
    return t;
}

void tls_ctx_free(struct tls_ctx *t)
{
    if (!t)
        return;
    if (t->session)
        SSL_SESSION_free(t->session);
    SSL_CTX_free(t->ctx);
    free(t);
}

void *tls_open(struct tls_ctx *t, int fd)
{
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl)
        return NULL;
    if (!SSL_set_fd(ssl, fd)) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    if (t->sni[0])
        SSL_set_tlsext_host_name(ssl, t->sni);
    if (t->verify_host[0]) {
        unsigned char ip[16];
        bool literal = inet_pton(AF_INET, t->verify_host, ip) == 1 ||
                       inet_pton(AF_INET6, t->verify_host, ip) == 1;
        if (literal)
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), t->verify_host);
        else
            SSL_set1_host(ssl, t->verify_host);
    }
    if (t->session)
        SSL_set_session(ssl, t->session);
    return ssl;
}

/* After a fatal error OpenSSL must not send close_notify: mark it sent. */
static void dead(SSL *ssl) { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN); }

/* Maps SSL_get_error to errno; 0 for a clean end of stream. */
static int fail(SSL *ssl, int rc, bool *want_out, const char *what)
{
    int saved = errno;
    switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        *want_out = false;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want_out = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        dead(ssl);
        ERR_clear_error();
        if (!saved)
            return 0;          /* EOF */
        errno = saved;
        return -1;
    default:
        if (what)
            note_error(ssl, what);
        dead(ssl);
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
}

int tls_handshake(void *p, bool *want_out)
{
    SSL *ssl = p;
    errno = 0;
    int rc = SSL_do_handshake(ssl);
    if (rc == 1)
        return 1;
    int r = fail(ssl, rc, want_out, "TLS handshake");
    if (r == 0 || errno != EAGAIN) {
        if (r == 0) {
            note_error(ssl, "TLS handshake");
            errno = ECONNRESET;
        } else if (errno != EPROTO) {
            note_error(ssl, "TLS handshake");
        }
        return -1;
    }
    return 0;
}

ssize_t tls_send(void *p, const void *buf, size_t n, bool *want_out)
{
    SSL *ssl = p;
    errno = 0;
    int rc = SSL_write(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    if (fail(ssl, rc, want_out, NULL) == 0)
        errno = EPIPE;         /* closed: as send() on a closed socket */
    return -1;
}

ssize_t tls_recv(void *p, void *buf, size_t n, bool *want_out)
{
    SSL *ssl = p;
    errno = 0;
    int rc = SSL_read(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    return fail(ssl, rc, want_out, NULL) == 0 ? 0 : -1;
}

bool tls_resumed(void *p) { return SSL_session_reused(p) == 1; }

void tls_describe(void *p, char *info, size_t infolen, char *tmpkey, size_t tmpkeylen)
{
    SSL *ssl = p;
    const SSL_CIPHER *c = SSL_get_current_cipher(ssl);
    int alg_bits = 0, bits = SSL_CIPHER_get_bits(c, &alg_bits), pk_bits = 0;
    X509 *cert = SSL_get1_peer_certificate(ssl);
    if (cert) {
        pk_bits = EVP_PKEY_get_bits(X509_get0_pubkey(cert));
        X509_free(cert);
    }
    snprintf(info, infolen, "%s,%s,%d,%d", SSL_get_version(ssl), SSL_CIPHER_get_name(c), pk_bits,
             bits);
    tmpkey[0] = 0;
    EVP_PKEY *key;
    if (SSL_get_peer_tmp_key(ssl, &key)) {
        char group[80] = "";
        size_t len = 0;
        if (EVP_PKEY_get_id(key) == EVP_PKEY_EC &&
            EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof group, &len))
            snprintf(tmpkey, tmpkeylen, "ECDH %s %d bits", group, EVP_PKEY_get_bits(key));
        else
            snprintf(tmpkey, tmpkeylen, "%s %d bits", OBJ_nid2sn(EVP_PKEY_get_id(key)),
                     EVP_PKEY_get_bits(key));
        EVP_PKEY_free(key);
    }
}

void tls_close(void *p)
{
    SSL *ssl = p;
    if (SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
        SSL_shutdown(ssl);     /* one close_notify, as ab and wrk send */
    ERR_clear_error();
    SSL_free(ssl);
}
