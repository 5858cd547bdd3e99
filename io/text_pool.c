/* text_pool.c — the reader pool of the text formats (see text_pool.h).
 *
 * A ring of frame slots, filled in order by the scanner, parsed by the
 * workers (the oldest slot with work left first), drained in order by the
 * caller. Slot k of the ring holds frame k's text, a parser state, a parsed
 * frame and, for a split frame, its pieces. One mutex guards the ring; the
 * scanner waits on `room`, the workers on `work`, the caller on `ready`. */
#define _DEFAULT_SOURCE /* madvise */
#include "text_pool.h"

#include <pthread.h>
#include <stdio.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h> /* SSE2 always, AVX2 when the CPU has it (find_newlines) */
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOCK (1 << 22)              /* the text buffers' first size */
#define MIN_READ (1 << 16)           /* the least the scanner asks for at once */
#define MAX_READ (1 << 20)           /* the most: counted while still in the cache */
#define MAX_TEXT ((size_t)256 << 20) /* text in flight beyond the oldest frame */
#define SPLIT_AHEAD 3                /* split frames in flight: each keeps every worker busy */
#define HUGE_PAGE ((size_t)2 << 20)  /* text buffers are aligned to it and asked to use huge pages */
#define PIECE_LINES 65536            /* lines of a piece of a split frame */
#define SPLIT_ATOMS (4 * PIECE_LINES) /* frames this large are split */
#define MAX_SLOTS 64
#define MSG 2048
#define MAX_CONTEXT 256 /* bytes of a format's context of a frame (mdnl_text_ops.context) */

enum kind { K_EMPTY, K_PARSE, K_SKIPPED, K_ERROR, K_END };

typedef struct piece {
    int64_t i0, i1, line;
    size_t b, e;
    void *state;
    mdnl_frame tab; /* the piece's species table */
    mdnl_status st;
} piece;

typedef struct slot {
    enum kind kind;
    int64_t index, line, natoms;
    char *text;
    size_t len, cap;
    bool truncated;
    mdnl_status end_status;
    char end_message[MSG];
    _Alignas(16) unsigned char context[MAX_CONTEXT];
    bool skip_only; /* not selected: checked by the format's skip, not parsed */
    bool split;     /* cut into pieces */
    void *state;
    mdnl_frame *f; /* the parsed frame: from the pool's spares while the slot holds a frame to parse */
    mdnl_status st;
    char msg[MSG];
    int ntasks, taken, done;
    int pieces_done; /* a split frame is done once its pieces are put together (complete) */
    piece *pieces;
    int npieces, pieces_cap;
    size_t *marks; /* offsets of lines PIECE_LINES, 2 PIECE_LINES, ... */
    int64_t nmarks, marks_cap;
} slot;

struct mdnl_text_pool {
    const mdnl_text_ops *ops;
    void *ctx;
    mdnl_stream *in;
    int workers;
    bool started, failed_start;
    pthread_t scanner, *thr;
    int nthr;
    bool have_scanner;
    pthread_mutex_t mu;
    pthread_cond_t room, work, ready;
    slot *slots;
    int nslots;
    int64_t head, tail; /* frames delivered (or skipped) / published */
    size_t bytes;       /* text of the published frames not yet released */
    bool stop;
    int64_t sel_start, sel_stop, sel_step;
    const mdnl_frame_allocator *alloc;
    /* frames not in a slot: as many frames exist as were ever in flight at once */
    mdnl_frame **spare;
    int nspare;
    slot *last; /* delivered, released at the next call */
    /* text buffers of released slots: as many exist as frames were ever in flight at once */
    char **free_text;
    size_t *free_cap;
    int nfree_text;
    /* the scanner's */
    void *scan_state;
    char *carry;
    size_t carry_len, carry_cap;
    int64_t line;
    size_t last_len; /* the last frame's bytes: what the next one likely needs */
    bool eof;
};

static bool selected(const mdnl_text_pool *p, int64_t k)
{
    return k >= p->sel_start && (p->sel_stop < 0 || k < p->sel_stop) && (k - p->sel_start) % p->sel_step == 0;
}

/* Makes room for `need` bytes in *buf, keeping its first `keep`. Text
 * buffers are megabytes that the scanner fills with read() once a frame:
 * aligned to huge pages and advised to use them, a frame of 32 MB faults
 * in 16 pages, not 8,192 (where the kernel has transparent huge pages). */
static int grow(char **buf, size_t *cap, size_t need, size_t keep)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : BLOCK;
    while (c < need)
        c *= 2;
    void *b = NULL;
    if (posix_memalign(&b, HUGE_PAGE, c) != 0) {
        mdnl_error(MDNL_ERR_RESOURCE, "out of host memory allocating %zu bytes for reader pool text", c);
        return -1;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(b, c, MADV_HUGEPAGE);
#endif
    if (keep)
        memcpy(b, *buf, keep);
    free(*buf);
    *buf = b, *cap = c;
    return 0;
}

/* A free text buffer for s (the largest), if there is one. */
static void take_text(mdnl_text_pool *p, slot *s)
{
    pthread_mutex_lock(&p->mu);
    int best = -1;
    for (int k = 0; k < p->nfree_text; ++k)
        if (best < 0 || p->free_cap[k] > p->free_cap[best])
            best = k;
    if (best >= 0) {
        s->text = p->free_text[best], s->cap = p->free_cap[best];
        p->nfree_text--;
        p->free_text[best] = p->free_text[p->nfree_text], p->free_cap[best] = p->free_cap[p->nfree_text];
    }
    pthread_mutex_unlock(&p->mu);
}

static void keep_message(char *dst, const char *what)
{
    snprintf(dst, MSG, "%s", what ? what : "");
}

/* ---- the scanner ---- */

/* Newlines in the 64 bytes at b. */
static inline unsigned newlines64(const char *b)
{
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n');
    uint64_t m = 0;
    for (int k = 0; k < 4; ++k) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * k));
        m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) << (16 * k);
    }
    m -= (m >> 1) & 0x5555555555555555ull; /* a popcount without -mpopcnt */
    m = (m & 0x3333333333333333ull) + ((m >> 2) & 0x3333333333333333ull);
    m = (m + (m >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (unsigned)((m * 0x0101010101010101ull) >> 56);
#else
    unsigned c = 0;
    for (int j = 0; j < 64; ++j)
        c += b[j] == '\n';
    return c;
#endif
}

/* The offset behind the want-th newline of [b, b + n) with *got = want, or
 * n with *got the newlines there are. 64 bytes at a time (NL64 counts
 * them); the bytes of the block that holds the want-th one by one. */
#define FIND_NEWLINES(NAME, NL64)                                                                                      \
    static size_t NAME(const char *b, size_t n, int64_t want, int64_t *got)                                            \
    {                                                                                                                  \
        int64_t k = 0;                                                                                                 \
        size_t i = 0;                                                                                                  \
        while (k < want && i + 64 <= n) {                                                                              \
            const unsigned c = NL64(b + i);                                                                            \
            if (k + (int64_t)c >= want)                                                                                \
                break;                                                                                                 \
            k += c;                                                                                                    \
            i += 64;                                                                                                   \
        }                                                                                                              \
        for (; i < n && k < want; ++i)                                                                                 \
            k += b[i] == '\n';                                                                                         \
        *got = k;                                                                                                      \
        return i;                                                                                                      \
    }
FIND_NEWLINES(find_newlines_base, newlines64)

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,popcnt"))) static inline unsigned newlines64_avx2(const char *b)
{
    const __m256i nl = _mm256_set1_epi8('\n');
    const __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)b);
    const __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(b + 32));
    const uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, nl)) |
                       (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, nl)) << 32;
    return (unsigned)__builtin_popcountll(m);
}
__attribute__((target("avx2,popcnt"))) FIND_NEWLINES(find_newlines_avx2, newlines64_avx2)

static size_t find_newlines(const char *b, size_t n, int64_t want, int64_t *got)
{
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt"))
        return find_newlines_avx2(b, n, want, got);
    return find_newlines_base(b, n, want, got);
}
#else
#define find_newlines find_newlines_base
#endif

/* Appends up to `want` bytes of the stream to s's text (about what the
 * frame still needs, so that little is read past it and carried to the next
 * slot), at most MAX_READ: the scanner counts the newlines of what it read
 * before it reads more, while those bytes are in the cache (reading a 32 MB
 * frame at once, then counting it, made the count run from memory). 0 at
 * the end of the stream (p->eof), -1 on an error (recorded). */
static int fill(mdnl_text_pool *p, slot *s, size_t want)
{
    if (want < MIN_READ)
        want = MIN_READ;
    if (want > MAX_READ)
        want = MAX_READ;
    if (grow(&s->text, &s->cap, s->len + want, s->len) < 0)
        return -1;
    ptrdiff_t got = mdnl_stream_read(p->in, s->text + s->len, want);
    if (got < 0)
        return -1;
    s->len += (size_t)got;
    p->eof = got == 0;
    return got > 0;
}

/* When the text's last line has grown past the longest line a stream
 * serves: its number (the error the line reader gives), else 0. */
static int64_t long_line(const slot *s)
{
    size_t k = s->len;
    while (k > 0 && s->text[k - 1] != '\n')
        --k;
    if (s->len - k <= MDNL_STREAM_MAX_LINE)
        return 0;
    int64_t lines;
    find_newlines(s->text, k, INT64_MAX, &lines);
    return s->line + lines + 1;
}

static mdnl_text_frame text_of(const slot *s)
{
    return (mdnl_text_frame){.text = s->text, .len = s->len, .line = s->line, .index = s->index,
                             .end_status = s->end_status, .end_message = s->end_message, .context = s->context};
}

static enum kind scan_error(slot *s, mdnl_status st)
{
    s->st = st;
    keep_message(s->msg, mdnl_last_error());
    return K_ERROR;
}

/* Splits the selected, complete frame of s into pieces of PIECE_LINES atom
 * lines; leaves it whole when its header does not parse (the worker that
 * parses it whole reports the error). */
static mdnl_status split(mdnl_text_pool *p, slot *s, int64_t nlines)
{
    const int64_t hl = nlines - s->natoms - p->ops->tail_lines; /* lines before the first atom */
    size_t hb = 0;
    for (int64_t k = 0; k < hl; ++k) {
        const char *nl = memchr(s->text + hb, '\n', s->len - hb);
        hb = nl ? (size_t)(nl - s->text) + 1 : s->len;
    }
    const char *nl = memchr(s->text + hb, '\n', s->len - hb);
    mdnl_text_frame t = text_of(s);
    t.len = nl ? (size_t)(nl - s->text) + 1 : s->len; /* the header and the first atom line */
    if (p->ops->header(s->state, &t, s->natoms, s->f) != MDNL_OK) {
        mdnl_clear_error();
        return MDNL_OK;
    }
    const int64_t np = s->nmarks + 1; /* at most; pieces start at hl and at every mark past it */
    if (np > s->pieces_cap) {
        piece *q = mdnl_realloc(s->pieces, (size_t)np * sizeof *q, "reader pool pieces");
        if (!q)
            return MDNL_ERR_RESOURCE;
        memset(q + s->pieces_cap, 0, (size_t)(np - s->pieces_cap) * sizeof *q);
        s->pieces = q, s->pieces_cap = (int)np;
    }
    int n = 0;
    int64_t l0 = hl;
    size_t b0 = hb;
    for (int64_t m = 0; m <= s->nmarks; ++m) {
        /* the last piece takes the lines after the atoms (tail_lines) too */
        const bool last = m == s->nmarks || (m + 1) * PIECE_LINES - hl >= s->natoms;
        const int64_t l1 = last ? nlines : (m + 1) * PIECE_LINES;
        const size_t b1 = last ? s->len : s->marks[m];
        if (l1 <= l0)
            continue;
        piece *q = &s->pieces[n++];
        q->i0 = l0 - hl, q->i1 = last ? s->natoms : l1 - hl, q->line = s->line + l0, q->b = b0, q->e = b1;
        q->st = MDNL_OK;
        l0 = l1, b0 = b1;
        if (last)
            break;
    }
    s->npieces = n;
    s->pieces_done = 0;
    return MDNL_OK;
}

/* Makes f's arrays come from `alloc`, the allocator the caller's frames ask
 * for now (it changes when a pipeline's engine is up): a frame still in the
 * old memory is freed, so that the frames parsed from now on are handed
 * over by swapping arrays, not copied. f holds no parsed frame. */
static void follow(mdnl_frame *f, const mdnl_frame_allocator *alloc)
{
    if (f->pos_alloc != alloc) {
        mdnl_frame_free(f);
        f->pos_alloc = alloc;
    }
}

/* Cuts frame k out of the stream into s. */
static enum kind scan_frame(mdnl_text_pool *p, slot *s, int64_t k)
{
    s->index = k;
    s->line = p->line;
    s->truncated = false;
    s->end_status = MDNL_OK;
    s->end_message[0] = '\0';
    s->npieces = 0;
    s->nmarks = 0;
    s->natoms = 0;
    s->st = MDNL_OK;
    s->skip_only = false;
    s->split = false;
    s->len = 0;
    if (p->sel_stop >= 0 && k >= p->sel_stop)
        return K_END;
    if (!s->text)
        take_text(p, s);
    if (grow(&s->text, &s->cap, p->carry_len + 1, 0) < 0)
        return scan_error(s, MDNL_ERR_RESOURCE);
    if (p->carry_len)
        memcpy(s->text, p->carry, p->carry_len);
    s->len = p->carry_len;
    p->carry_len = 0;
    int64_t nlines, natoms;
    for (;;) { /* the frame's size, from its head */
        mdnl_text_frame t = text_of(s);
        size_t drop = 0;
        int64_t dropped = 0;
        int h = p->ops->head(p->scan_state, &t, p->eof, &nlines, &natoms, &drop, &dropped);
        if (h == MDNL_OK)
            break;
        if (h == MDNL_END)
            return K_END;
        if (h != MDNL_TEXT_MORE)
            return scan_error(s, (mdnl_status)h);
        if (drop) {
            memmove(s->text, s->text + drop, s->len - drop);
            s->len -= drop;
            s->line += dropped;
        }
        int64_t bad = long_line(s);
        if (bad)
            return scan_error(s, mdnl_stream_long_line(mdnl_stream_name(p->in), bad));
        if (p->eof) /* head() decides at the end; this is a bug */
            return scan_error(s, mdnl_error(MDNL_ERR_INTERNAL, "reader pool: no frame size at the end"));
        if (fill(p, s, p->last_len) < 0)
            return scan_error(s, MDNL_ERR_INPUT);
    }
    s->natoms = natoms;
    if (p->ops->context)
        p->ops->context(p->scan_state, s->context);
    const bool sel = selected(p, k);
    const bool want_split = sel && p->ops->header && p->workers > 1 && natoms >= SPLIT_ATOMS;
    size_t at = 0; /* text[0, at) holds `found` whole lines */
    int64_t found = 0;
    for (;;) {
        while (found < nlines && at < s->len) {
            int64_t want = nlines - found, got;
            if (want_split && want > PIECE_LINES - found % PIECE_LINES)
                want = PIECE_LINES - found % PIECE_LINES;
            at += find_newlines(s->text + at, s->len - at, want, &got);
            found += got;
            if (want_split && got == want && found % PIECE_LINES == 0 && found < nlines) {
                if (s->nmarks == s->marks_cap) {
                    const int64_t c = s->marks_cap ? 2 * s->marks_cap : 64;
                    size_t *m = mdnl_realloc(s->marks, (size_t)c * sizeof *m, "reader pool line index");
                    if (!m)
                        return scan_error(s, MDNL_ERR_RESOURCE);
                    s->marks = m, s->marks_cap = c;
                }
                s->marks[s->nmarks++] = at;
            }
        }
        if (found == nlines)
            break;
        if (p->eof) { /* an unterminated last line is a line too */
            if (at < s->len)
                found++;
            s->truncated = found < nlines;
            break;
        }
        int64_t bad = long_line(s);
        if (bad) {
            mdnl_stream_long_line(mdnl_stream_name(p->in), bad);
            s->truncated = true;
            s->end_status = MDNL_ERR_INPUT;
            keep_message(s->end_message, mdnl_last_error());
            p->eof = true; /* nothing is read after an error */
            break;
        }
        /* the rest of the frame as its lines so far suggest, at most doubling the text */
        double rest = found ? (double)at / (double)found * (double)(nlines - found) * 1.01 + 4096 : BLOCK;
        if (rest > (double)s->len)
            rest = (double)s->len;
        if (fill(p, s, (size_t)rest) < 0) {
            s->truncated = true;
            s->end_status = MDNL_ERR_INPUT;
            keep_message(s->end_message, mdnl_last_error());
            p->eof = true;
            break;
        }
    }
    if (!s->truncated && at < s->len) { /* the next frame's first bytes */
        if (grow(&p->carry, &p->carry_cap, s->len - at, 0) < 0)
            return scan_error(s, MDNL_ERR_RESOURCE);
        memcpy(p->carry, s->text + at, s->len - at);
        p->carry_len = s->len - at;
        s->len = at;
    }
    p->line = s->line + nlines;
    p->last_len = s->len;
    if (!sel && p->ops->check_skipped) { /* a worker runs the format's skip */
        s->skip_only = true;
        s->ntasks = 1;
        s->taken = s->done = 0;
        return K_PARSE;
    }
    if (!sel) {
        if (!s->truncated)
            return K_SKIPPED;
        mdnl_text_frame t = text_of(s);
        mdnl_status st = p->ops->skip(p->scan_state, &t);
        return st == MDNL_OK ? K_SKIPPED : scan_error(s, st);
    }
    if (!s->f) {
        pthread_mutex_lock(&p->mu);
        s->f = p->nspare ? p->spare[--p->nspare] : NULL;
        const mdnl_frame_allocator *alloc = p->alloc;
        pthread_mutex_unlock(&p->mu);
        if (!s->f && !(s->f = mdnl_calloc(1, sizeof *s->f, "reader pool frame")))
            return scan_error(s, MDNL_ERR_RESOURCE);
        follow(s->f, alloc);
    }
    if (want_split && !s->truncated) {
        mdnl_status st = split(p, s, nlines);
        if (st != MDNL_OK)
            return scan_error(s, st);
        s->split = s->npieces > 0;
    }
    s->ntasks = s->npieces ? s->npieces : 1;
    s->taken = s->done = 0;
    return K_PARSE;
}

/* Whether the scanner must wait for the caller: the ring is full, or holds
 * MAX_TEXT, or SPLIT_AHEAD split frames (more would only add memory: one
 * split frame keeps every worker busy). With mu held. */
static bool full(const mdnl_text_pool *p)
{
    if (p->tail - p->head >= p->nslots)
        return true;
    if (p->tail == p->head)
        return false;
    if (p->bytes >= MAX_TEXT)
        return true;
    int split = 0;
    for (int64_t k = p->head; k < p->tail; ++k)
        split += p->slots[k % p->nslots].split;
    return split >= SPLIT_AHEAD;
}

static void *scanner_main(void *arg)
{
    mdnl_text_pool *p = arg;
    for (int64_t k = 0;; ++k) {
        pthread_mutex_lock(&p->mu);
        while (!p->stop && full(p))
            pthread_cond_wait(&p->room, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        slot *s = &p->slots[p->tail % p->nslots];
        pthread_mutex_unlock(&p->mu);
        enum kind kind = scan_frame(p, s, k);
        pthread_mutex_lock(&p->mu);
        s->kind = kind;
        p->tail++;
        p->bytes += s->len;
        pthread_cond_broadcast(&p->work);
        pthread_cond_broadcast(&p->ready);
        pthread_mutex_unlock(&p->mu);
        if (kind == K_END || kind == K_ERROR)
            return NULL;
    }
}

/* ---- the workers ---- */

static void run_task(mdnl_text_pool *p, slot *s, int task)
{
    if (s->skip_only) {
        mdnl_text_frame t = text_of(s);
        s->st = p->ops->skip(s->state, &t);
        if (s->st != MDNL_OK)
            keep_message(s->msg, mdnl_last_error());
        return;
    }
    if (!s->npieces) {
        mdnl_text_frame t = text_of(s);
        s->st = p->ops->parse(s->state, &t, s->f);
        if (s->st != MDNL_OK)
            keep_message(s->msg, mdnl_last_error());
        return;
    }
    piece *q = &s->pieces[task];
    if (!q->state && !(q->state = p->ops->state_new(p->ctx))) {
        q->st = MDNL_ERR_RESOURCE;
        return;
    }
    mdnl_text_frame t = {.text = s->text + q->b, .len = q->e - q->b, .line = q->line, .index = s->index};
    q->tab.nspecies = 0;
    q->st = p->ops->piece(q->state, s->state, &t, q->i0, q->i1, s->f, &q->tab);
}

/* A split frame's pieces into one frame: their species tables merged in
 * file order (the order of first appearance, as one thread finds it). */
static mdnl_status assemble(slot *s)
{
    mdnl_frame *f = s->f;
    for (int j = 0; j < s->npieces; ++j)
        if (s->pieces[j].st != MDNL_OK)
            return s->pieces[j].st;
    for (int j = 0; j < s->npieces; ++j) {
        const piece *q = &s->pieces[j];
        int32_t map[MDNL_MAX_SPECIES];
        bool same = true;
        for (int32_t l = 0; l < q->tab.nspecies; ++l) {
            const char *sym = q->tab.symbols[l];
            if ((map[l] = mdnl_frame_species_id(f, sym, strlen(sym))) < 0)
                return MDNL_ERR_INPUT;
            same = same && map[l] == l;
        }
        if (!same)
            for (int64_t i = q->i0; i < q->i1; ++i)
                f->species[i] = map[f->species[i]];
    }
    f->natoms = s->natoms;
    return MDNL_OK;
}

/* A split frame once its last piece is parsed, on the worker that parsed
 * it: the pieces put together and the format's finish(); when anything
 * failed, the exact error, from the whole frame parsed again on one thread. */
static void complete(mdnl_text_pool *p, slot *s)
{
    if (assemble(s) == MDNL_OK && (!p->ops->finish || p->ops->finish(s->state, s->f) == MDNL_OK))
        return;
    mdnl_clear_error();
    s->npieces = 0;
    mdnl_text_frame t = text_of(s);
    s->st = p->ops->parse(s->state, &t, s->f);
    if (s->st != MDNL_OK)
        keep_message(s->msg, mdnl_last_error());
}

static void *worker_main(void *arg)
{
    mdnl_text_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        slot *s = NULL;
        for (int64_t k = p->head; k < p->tail && !s; ++k) {
            slot *c = &p->slots[k % p->nslots];
            if (c->kind == K_PARSE && c->taken < c->ntasks)
                s = c;
        }
        if (!s) {
            if (p->stop)
                break;
            pthread_cond_wait(&p->work, &p->mu);
            continue;
        }
        const int task = s->taken++;
        const mdnl_frame_allocator *alloc = p->alloc;
        pthread_mutex_unlock(&p->mu);
        if (!s->npieces && !s->skip_only) /* a split frame's arrays were made by header() */
            follow(s->f, alloc);
        run_task(p, s, task);
        pthread_mutex_lock(&p->mu);
        if (s->npieces && ++s->pieces_done == s->npieces) {
            pthread_mutex_unlock(&p->mu);
            complete(p, s);
            pthread_mutex_lock(&p->mu);
            s->done = s->ntasks;
            pthread_cond_broadcast(&p->ready);
        } else if (!s->npieces && ++s->done == s->ntasks) {
            pthread_cond_broadcast(&p->ready);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the caller ---- */

mdnl_status mdnl_text_pool_open(const mdnl_text_ops *ops, void *ctx, mdnl_stream *in, int workers,
                                mdnl_text_pool **out)
{
    *out = NULL;
    mdnl_text_pool *p = mdnl_calloc(1, sizeof *p, "reader pool");
    if (!p)
        return MDNL_ERR_RESOURCE;
    p->ops = ops, p->ctx = ctx, p->in = in;
    p->workers = workers < 1 ? 1 : workers;
    p->nslots = p->workers + 2 > MAX_SLOTS ? MAX_SLOTS : p->workers + 2;
    p->sel_stop = -1, p->sel_step = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->room, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->ready, NULL);
    *out = p;
    return MDNL_OK;
}

void mdnl_text_pool_select(mdnl_text_pool *p, int64_t start, int64_t stop, int64_t step)
{
    p->sel_start = start < 0 ? 0 : start;
    p->sel_stop = stop;
    p->sel_step = step < 1 ? 1 : step;
}

static mdnl_status start(mdnl_text_pool *p, const mdnl_frame_allocator *alloc)
{
    p->started = true;
    p->failed_start = true;
    p->alloc = alloc;
    if (!(p->slots = mdnl_calloc((size_t)p->nslots, sizeof *p->slots, "reader pool")) ||
        !(p->thr = mdnl_calloc((size_t)p->workers, sizeof *p->thr, "reader pool")) ||
        !(p->scan_state = p->ops->state_new(p->ctx)))
        return MDNL_ERR_RESOURCE;
    if (!(p->spare = mdnl_calloc((size_t)p->nslots + 1, sizeof *p->spare, "reader pool")) ||
        !(p->free_text = mdnl_calloc((size_t)p->nslots, sizeof *p->free_text, "reader pool")) ||
        !(p->free_cap = mdnl_calloc((size_t)p->nslots, sizeof *p->free_cap, "reader pool")))
        return MDNL_ERR_RESOURCE;
    for (int k = 0; k < p->nslots; ++k) {
        if (!(p->slots[k].state = p->ops->state_new(p->ctx)))
            return MDNL_ERR_RESOURCE;
    }
    if (pthread_create(&p->scanner, NULL, scanner_main, p) != 0)
        return mdnl_error(MDNL_ERR_RESOURCE, "cannot start the reader pool's scanner thread");
    p->have_scanner = true;
    for (; p->nthr < p->workers; ++p->nthr)
        if (pthread_create(&p->thr[p->nthr], NULL, worker_main, p) != 0)
            return mdnl_error(MDNL_ERR_RESOURCE, "cannot start the reader pool's threads");
    p->failed_start = false;
    return MDNL_OK;
}

static void release(mdnl_text_pool *p, slot *s)
{
    pthread_mutex_lock(&p->mu);
    if (s->f)
        p->spare[p->nspare++] = s->f;
    s->f = NULL;
    s->kind = K_EMPTY;
    s->split = false;
    p->head++;
    p->bytes -= s->len;
    if (s->text) { /* the next slot the scanner fills takes it */
        p->free_text[p->nfree_text] = s->text, p->free_cap[p->nfree_text++] = s->cap;
        s->text = NULL, s->cap = 0, s->len = 0;
    }
    pthread_cond_broadcast(&p->room);
    pthread_mutex_unlock(&p->mu);
}

/* The oldest frame once it is ready (parsed, or not to be parsed). */
static mdnl_status oldest(mdnl_text_pool *p, const mdnl_frame_allocator *alloc, slot **out)
{
    if (!p->started) {
        mdnl_status st = start(p, alloc);
        if (st != MDNL_OK)
            return st;
    } else if (p->failed_start) {
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: the reader pool could not start", mdnl_stream_name(p->in));
    }
    if (p->last) {
        release(p, p->last);
        p->last = NULL;
    }
    pthread_mutex_lock(&p->mu);
    p->alloc = alloc; /* the frames parsed from now on: in the memory the caller asks for */
    slot *s = &p->slots[p->head % p->nslots];
    while (!(p->head < p->tail && (s->kind != K_PARSE || s->done == s->ntasks)))
        pthread_cond_wait(&p->ready, &p->mu);
    pthread_mutex_unlock(&p->mu);
    *out = s;
    if (s->kind == K_END)
        return MDNL_END;
    if (s->kind == K_ERROR)
        return mdnl_error(s->st, "%s", s->msg);
    return MDNL_OK;
}

/* The format found no frame in the text (parse or skip answered MDNL_END):
 * the end, for every later call. */
static mdnl_status sticky_end(mdnl_text_pool *p, slot *s)
{
    mdnl_clear_error();
    pthread_mutex_lock(&p->mu);
    s->kind = K_END;
    pthread_mutex_unlock(&p->mu);
    return MDNL_END;
}

/* Keeps the frame's error for every later call. */
static mdnl_status sticky(mdnl_text_pool *p, slot *s, mdnl_status st)
{
    pthread_mutex_lock(&p->mu); /* the workers look at every slot's kind */
    s->kind = K_ERROR;
    pthread_mutex_unlock(&p->mu);
    s->st = st;
    keep_message(s->msg, mdnl_last_error());
    return st;
}

mdnl_status mdnl_text_pool_next(mdnl_text_pool *p, mdnl_frame *f)
{
    slot *s;
    mdnl_status st = oldest(p, f->pos_alloc, &s);
    if (st != MDNL_OK)
        return st;
    mdnl_text_frame t = text_of(s);
    if (s->kind == K_SKIPPED || s->skip_only) { /* not selected, yet asked for: parsed here */
        if ((st = p->ops->parse(s->state, &t, f)) != MDNL_OK)
            return st == MDNL_END ? sticky_end(p, s) : sticky(p, s, st);
    } else {
        if (s->st == MDNL_END)
            return sticky_end(p, s);
        if (s->st != MDNL_OK) {
            mdnl_error(s->st, "%s", s->msg);
            return sticky(p, s, s->st);
        }
        if ((st = mdnl_frame_take(f, s->f)) != MDNL_OK)
            return sticky(p, s, st);
    }
    if (p->ops->delivered)
        p->ops->delivered(p->ctx, s->state);
    p->last = s;
    return MDNL_OK;
}

mdnl_status mdnl_text_pool_skip(mdnl_text_pool *p)
{
    slot *s;
    mdnl_status st = oldest(p, p->alloc, &s);
    if (st != MDNL_OK)
        return st;
    if (s->skip_only && s->st != MDNL_OK) { /* checked by the format's skip in a worker */
        if (s->st == MDNL_END)
            return sticky_end(p, s);
        mdnl_error(s->st, "%s", s->msg);
        return sticky(p, s, s->st);
    }
    /* the error skipping gives, which differs from parsing's: a truncated
     * frame's, or a parsed frame's when the format's skip checks it */
    if (s->truncated || (!s->skip_only && s->kind == K_PARSE && s->st != MDNL_OK && p->ops->check_skipped)) {
        mdnl_text_frame t = text_of(s);
        if ((st = p->ops->skip(s->state, &t)) != MDNL_OK)
            return st == MDNL_END ? sticky_end(p, s) : sticky(p, s, st);
    }
    release(p, s);
    return MDNL_OK;
}

void *mdnl_text_pool_last(const mdnl_text_pool *p) { return p->last ? p->last->state : NULL; }

void mdnl_text_pool_close(mdnl_text_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->room);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    if (p->have_scanner)
        pthread_join(p->scanner, NULL);
    for (int k = 0; k < p->nthr; ++k)
        pthread_join(p->thr[k], NULL);
    for (int k = 0; p->slots && k < p->nslots; ++k) {
        slot *s = &p->slots[k];
        for (int j = 0; j < s->pieces_cap; ++j) {
            if (s->pieces[j].state)
                p->ops->state_free(s->pieces[j].state);
            mdnl_frame_free(&s->pieces[j].tab);
        }
        free(s->pieces);
        free(s->marks);
        free(s->text);
        if (s->state)
            p->ops->state_free(s->state);
        mdnl_frame_free(s->f);
        free(s->f);
    }
    for (int k = 0; k < p->nspare; ++k) {
        mdnl_frame_free(p->spare[k]);
        free(p->spare[k]);
    }
    free(p->spare);
    for (int k = 0; k < p->nfree_text; ++k)
        free(p->free_text[k]);
    free(p->free_text);
    free(p->free_cap);
    if (p->scan_state)
        p->ops->state_free(p->scan_state);
    free(p->slots);
    free(p->thr);
    free(p->carry);
    pthread_cond_destroy(&p->room);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->ready);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
