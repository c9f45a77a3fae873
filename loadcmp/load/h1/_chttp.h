/* An incremental HTTP/1.x response reader for the compiled closed loop (_cloop.pyx).
 *
 * It only needs what a load tester needs: the status, where the response ends
 * (Content-Length, chunked, or the server's close), and whether the server
 * keeps the connection. Lines end with CRLF or a bare LF. Anything it cannot
 * read is an error (the request ends as protocol_error). A line split across
 * reads is carried over in a small buffer that grows only when a line is cut.
 */
#ifndef LOADCMP_CHTTP_H
#define LOADCMP_CHTTP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { R_STATUS, R_HEADER, R_BODY, R_EOF_BODY, R_CSIZE, R_CDATA, R_CDATA_END, R_TRAILER, R_DONE, R_ERROR };
enum { R_MORE = 0, R_COMPLETE = 1, R_BAD = -1 };

#define R_MAX_LINE (256 * 1024) /* a head line longer than this is not a response we can read */

typedef struct {
    int state;
    int status;
    int keepalive;      /* the server keeps the connection after this response */
    int nobody;         /* HEAD, 1xx, 204, 304: the head is the whole response */
    int is_head;        /* the request was HEAD */
    int has_length, chunked, has_te, conn_close, conn_keep, http11;
    int64_t remaining;  /* body or chunk bytes still to come */
    char *line;         /* a line cut by the end of a read */
    size_t line_len, line_cap;
} resp_t;

static void resp_reset(resp_t *r, int is_head) {
    char *line = r->line;
    size_t cap = r->line_cap;
    memset(r, 0, sizeof(*r));
    r->line = line;
    r->line_cap = cap;
    r->is_head = is_head;
    r->state = R_STATUS;
}

static void resp_free(resp_t *r) {
    free(r->line);
    r->line = NULL;
    r->line_cap = r->line_len = 0;
}

static int r_lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static int r_ieq(const char *a, size_t n, const char *lit) {
    size_t m = strlen(lit);
    if (n != m) return 0;
    for (size_t i = 0; i < n; i++)
        if (r_lower((unsigned char)a[i]) != lit[i]) return 0;
    return 1;
}

static int r_is_ows(char c) { return c == ' ' || c == '\t'; }

static int r_is_tchar(unsigned char c) {
    if (c >= '0' && c <= '9') return 1;
    if ((c | 32) >= 'a' && (c | 32) <= 'z') return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Each comma-separated token of a Connection value; sets close / keep-alive. */
static void r_connection(resp_t *r, const char *v, size_t n) {
    size_t i = 0;
    while (i < n) {
        while (i < n && (r_is_ows(v[i]) || v[i] == ',')) i++;
        size_t s = i;
        while (i < n && v[i] != ',') i++;
        size_t e = i;
        while (e > s && r_is_ows(v[e - 1])) e--;
        if (r_ieq(v + s, e - s, "close")) r->conn_close = 1;
        else if (r_ieq(v + s, e - s, "keep-alive")) r->conn_keep = 1;
    }
}

static int r_status_line(resp_t *r, const char *s, size_t n) {
    /* HTTP/d.d SP ddd [SP reason] */
    if (n < 12 || memcmp(s, "HTTP/", 5) != 0) return R_BAD;
    if (s[5] < '0' || s[5] > '9' || s[6] != '.' || s[7] < '0' || s[7] > '9' || s[8] != ' ') return R_BAD;
    for (int i = 9; i < 12; i++)
        if (s[i] < '0' || s[i] > '9') return R_BAD;
    if (n > 12 && s[12] != ' ') return R_BAD;
    r->http11 = s[5] == '1' && s[7] == '1';
    r->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    if (r->status < 100) return R_BAD;
    r->state = R_HEADER;
    return R_MORE;
}

static int r_header_line(resp_t *r, const char *s, size_t n) {
    if (r_is_ows(s[0])) return R_MORE; /* an obsolete folded line: part of a value we do not read */
    size_t c = 0;
    while (c < n && s[c] != ':') {
        if (!r_is_tchar((unsigned char)s[c])) return R_BAD;
        c++;
    }
    if (c == 0 || c == n) return R_BAD;
    const char *v = s + c + 1;
    size_t vn = n - c - 1;
    while (vn && r_is_ows(*v)) v++, vn--;
    while (vn && r_is_ows(v[vn - 1])) vn--;
    if (r_ieq(s, c, "content-length")) {
        int64_t len = 0;
        if (vn == 0) return R_BAD;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9' || len > (INT64_MAX - 9) / 10) return R_BAD;
            len = len * 10 + (v[i] - '0');
        }
        if (r->has_length && len != r->remaining) return R_BAD;
        r->has_length = 1;
        r->remaining = len;
    } else if (r_ieq(s, c, "transfer-encoding")) {
        size_t e = vn, b;
        while (e && (r_is_ows(v[e - 1]) || v[e - 1] == ',')) e--;
        b = e;
        while (b && v[b - 1] != ',' && !r_is_ows(v[b - 1])) b--;
        r->has_te = 1;
        r->chunked = r_ieq(v + b, e - b, "chunked");  /* only a last coding of chunked frames the body */
    } else if (r_ieq(s, c, "connection")) {
        r_connection(r, v, vn);
    }
    return R_MORE;
}

/* The empty line after the headers: where does the body end? */
static int r_headers_done(resp_t *r) {
    if (r->has_te && r->has_length) return R_BAD;  /* ambiguous framing: refuse, as llhttp does */
    r->keepalive = r->http11 ? !r->conn_close : (r->conn_keep && !r->conn_close);
    if (r->status < 200 && r->status != 101) {  /* an interim response: the real one follows */
        int is_head = r->is_head;
        resp_reset(r, is_head);
        return R_MORE;
    }
    if (r->is_head || r->status == 101 || r->status == 204 || r->status == 304) {
        r->nobody = 1;
        r->state = R_DONE;
        return R_COMPLETE;
    }
    if (r->chunked) {
        r->state = R_CSIZE;
    } else if (r->has_te) {
        r->state = R_EOF_BODY;  /* a coding we do not frame: read to the close */
    } else if (r->has_length) {
        r->state = r->remaining ? R_BODY : R_DONE;
    } else {
        r->state = R_EOF_BODY;
    }
    return r->state == R_DONE ? R_COMPLETE : R_MORE;
}

static int r_chunk_size(resp_t *r, const char *s, size_t n) {
    int64_t size = 0;
    size_t i = 0;
    for (; i < n; i++) {
        int c = r_lower((unsigned char)s[i]), d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else break;
        if (size > (INT64_MAX >> 4)) return R_BAD;
        size = size * 16 + d;
    }
    if (i == 0) return R_BAD;
    while (i < n && r_is_ows(s[i])) i++;
    if (i < n && s[i] != ';') return R_BAD;  /* only chunk extensions may follow the size */
    r->remaining = size;
    r->state = size ? R_CDATA : R_TRAILER;
    return R_MORE;
}

/* One whole line (without its line end) in a line-reading state. */
static int r_line(resp_t *r, const char *s, size_t n) {
    switch (r->state) {
    case R_STATUS:
        return r_status_line(r, s, n);
    case R_HEADER:
        return n ? r_header_line(r, s, n) : r_headers_done(r);
    case R_CSIZE:
        return r_chunk_size(r, s, n);
    case R_CDATA_END:
        if (n) return R_BAD;
        r->state = R_CSIZE;
        return R_MORE;
    case R_TRAILER:
        if (n) return R_MORE;  /* a trailer field: read past it */
        r->state = R_DONE;
        return R_COMPLETE;
    }
    return R_BAD;
}

static int r_carry(resp_t *r, const char *p, size_t n) {
    if (r->line_len + n > R_MAX_LINE) return R_BAD;
    if (r->line_len + n > r->line_cap) {
        size_t cap = r->line_cap ? r->line_cap : 256;
        while (cap < r->line_len + n) cap *= 2;
        char *grown = (char *)realloc(r->line, cap);
        if (!grown) return R_BAD;
        r->line = grown;
        r->line_cap = cap;
    }
    memcpy(r->line + r->line_len, p, n);
    r->line_len += n;
    return R_MORE;
}

/* Feed `n` bytes; R_COMPLETE once the response has ended (bytes after it are
 * ignored), R_BAD for anything unreadable, R_MORE to wait for more. */
static int resp_feed(resp_t *r, const char *p, size_t n) {
    const char *end = p + n;
    while (p < end) {
        switch (r->state) {
        case R_BODY:
        case R_CDATA: {
            int64_t take = (int64_t)(end - p) < r->remaining ? (int64_t)(end - p) : r->remaining;
            p += take;
            r->remaining -= take;
            if (r->remaining == 0) {
                if (r->state == R_CDATA) r->state = R_CDATA_END;
                else { r->state = R_DONE; return R_COMPLETE; }
            }
            continue;
        }
        case R_EOF_BODY:
            return R_MORE;
        case R_DONE:
            return R_COMPLETE;
        case R_ERROR:
            return R_BAD;
        default: {
            const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
            if (nl == NULL) {
                if (r_carry(r, p, (size_t)(end - p)) == R_BAD) { r->state = R_ERROR; return R_BAD; }
                return R_MORE;
            }
            const char *s = p;
            size_t len = (size_t)(nl - p);
            if (r->line_len) {
                if (r_carry(r, p, len) == R_BAD) { r->state = R_ERROR; return R_BAD; }
                s = r->line;
                len = r->line_len;
            }
            if (len && s[len - 1] == '\r') len--;
            p = nl + 1;
            int got = r_line(r, s, len);
            r->line_len = 0;
            if (got == R_BAD) { r->state = R_ERROR; return R_BAD; }
            if (got == R_COMPLETE) return R_COMPLETE;
        }
        }
    }
    return R_MORE;
}

/* The server closed: a read-to-close body has ended; anything else was cut short. */
static int resp_eof(resp_t *r) {
    if (r->state == R_EOF_BODY) {
        r->state = R_DONE;
        return R_COMPLETE;
    }
    return r->state == R_DONE ? R_COMPLETE : R_BAD;
}

#endif
