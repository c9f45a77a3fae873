# OpenSSL as the compiled loops call it: _ctls.h's context, certificate check, saved sessions and step results,
# declared once for _ctls.pyx (https) and _ch2conn.pxd (h2 over TLS), with what both do with them at a load's start
# (`tls_start`) and at each hand-over to the recorder (`tls_hand_over`).

cdef extern from "_ctls.h" nogil:
    ctypedef struct SSL:
        pass
    ctypedef struct tls_fact_t:
        const char *version
        const char *cipher
        int alpn  # 0: no ALPN, 1: "http/1.1", 2: "h2"
        long long n
    ctypedef struct tls_t:
        void *saved
        long long full, resumed
        tls_fact_t facts[8]
        int nfacts
    enum: TLS_DONE, TLS_WANT_READ, TLS_WANT_WRITE, TLS_CLOSED, TLS_SYSCALL, TLS_FAILED
    const char *tls_open(tls_t *, const char *, const char *, int, int, int, int)
    void tls_close(tls_t *)
    SSL *tls_new(tls_t *, SSL *, int, const char *, int)
    int tls_result(SSL *, int, int *)
    void tls_reason(char *, size_t)
    void tls_count(tls_t *, SSL *)
    void ERR_clear_error()
    int SSL_do_handshake(SSL *)
    int SSL_read(SSL *, void *, int)
    int SSL_write(SSL *, const void *, int)
    int SSL_has_pending(const SSL *)
    int SSL_is_init_finished(const SSL *)
    int SSL_shutdown(SSL *)
    void SSL_free(SSL *)
    void SSL_set_quiet_shutdown(SSL *, int)
    int SSL_get_quiet_shutdown(const SSL *)


cdef inline bytes tls_start(tls_t *tls, target, bint resume, bint h2):
    # The load's TLS context for `target` (ALPN "h2" first when `h2`), or OSError; the name to send as SNI (None
    # for an IP address).
    import ipaddress
    try:
        ipaddress.ip_address(target.host)
        is_ip = True
    except ValueError:
        is_ip = False
    cdef bytes host = target.host.encode("idna")
    cdef bytes ca = target.cafile.encode() if target.cafile else b""
    cdef const char *why = tls_open(tls, <const char *>ca if ca else NULL, host, is_ip, not target.insecure, resume, h2)
    if why != NULL:
        raise OSError(f"TLS: {why.decode()}")
    return None if is_ip else host


cdef inline void tls_hand_over(tls_t *t, rec) except *:
    # The handshakes counted since the last hand-over, full or resumed and by (version, cipher, ALPN), to the
    # recorder (`Recorder.add_tls`).
    if not (t.full or t.resumed):
        return
    seen = {}
    for i in range(t.nfacts):
        key = (t.facts[i].version.decode(), t.facts[i].cipher.decode(), ("", "http/1.1", "h2")[t.facts[i].alpn])
        seen[key] = seen.get(key, 0) + t.facts[i].n
    full, resumed = t.full, t.resumed
    t.full = t.resumed = t.nfacts = 0
    rec.add_tls(full, resumed, seen)
