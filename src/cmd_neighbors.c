/* cmd_neighbors.c — `mdnl neighbors`: the neighbor list of every selected
 * frame as a TSV table (# frame i j distance, and with --with shift,vector
 * S0 S1 S2 Dx Dy Dz) or HDF5 CSR. */
#include "cli.h"
#include "chunk_pool.h"
#include "h5md_writer.h"
#include "output_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends the decimal digits of v to p; returns the new end. */
static char *put_int(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    if (v < 0) {
        *p++ = '-';
        v = -v;
    }
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Appends v as printf's "%.9g" of (double)v writes it; returns the new
 * end. snprintf costs most of a TSV row, so the distances' usual range,
 * 1e-4 <= v < 1e9 (fixed notation, no exponent), is formatted here with
 * exact integer arithmetic: v = m * 2^e, and the 9 significant digits are
 * round-half-even(v * 10^(8 - E)) for E = floor(log10 v), the rounding
 * glibc's printf does on the exact binary value. Anything else (zero,
 * negative, huge, tiny, not finite) goes through snprintf. */
static char *put_float9(char *p, float v)
{
    if (!(v >= 1e-4f && v < 1e9f))
        return p + snprintf(p, 32, "%.9g", (double)v);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    const int bexp = (int)(bits >> 23 & 0xff); /* normal: v >= 1e-4 */
    const uint64_t m = (bits & 0x7fffffu) | 0x800000u;
    const int e = bexp - 150; /* v = m * 2^e, -37 <= e <= 6 */
    static const uint64_t pow10[] = {1,        10,        100,        1000,        10000,        100000,       1000000,
                                     10000000, 100000000, 1000000000, 10000000000, 100000000000, 1000000000000};
    /* E from the binary exponent, then corrected: 10^(8-E) <= 10^12. The
     * divisor is 2^-e: a shift, the remainder the bits shifted out. */
    int E = (int)((bexp - 127) * 0.30103);
    const int sh = e < 0 ? -e : 0;
    unsigned __int128 num;
    uint64_t q;
    for (;;) {
        if (E < -4 || E > 8)
            return p + snprintf(p, 32, "%.9g", (double)v);
        num = (unsigned __int128)m * pow10[8 - E];
        if (e > 0)
            num <<= e;
        q = (uint64_t)(num >> sh);
        if (q >= 1000000000u)
            ++E;
        else if (q < 100000000u)
            --E;
        else
            break;
    }
    if (sh > 0) { /* round half to even on the bits below the quotient */
        const unsigned __int128 r = num & (((unsigned __int128)1 << sh) - 1), half = (unsigned __int128)1 << (sh - 1);
        if (r > half || (r == half && (q & 1)))
            ++q;
    }
    if (q == 1000000000u) { /* 9.99999999|5 rounded up to the next decade */
        q = 100000000u;
        if (++E > 8)
            return p + snprintf(p, 32, "%.9g", (double)v);
    }
    char d[9];
    for (int k = 8; k >= 0; --k, q /= 10)
        d[k] = (char)('0' + q % 10);
    int last = 8; /* trailing zeros of the fraction are dropped */
    while (last > E && last > 0 && d[last] == '0')
        --last;
    if (E >= 0) {
        for (int k = 0; k <= E; ++k)
            *p++ = d[k];
        if (last > E) {
            *p++ = '.';
            for (int k = E + 1; k <= last; ++k)
                *p++ = d[k];
        }
    } else {
        *p++ = '0';
        *p++ = '.';
        for (int k = 0; k < -E - 1; ++k)
            *p++ = '0';
        for (int k = 0; k <= last; ++k)
            *p++ = d[k];
    }
    return p;
}

/* Rows are formatted in blocks of about TSV_BLOCK pairs by the writer
 * workers (chunk_pool.h) and written in order: the bytes one thread writes. */
enum { TSV_BLOCK = 65536, TSV_LINE = 96, TSV_EXTRA = 3 * 12 + 3 * 32 };

typedef struct tsv_job {
    FILE *fp;
    int64_t frame, rows_per_block;
    const mdnl_nlist *l;
    const int32_t (*S)[3]; /* NULL, or an image shift per entry */
    const double (*D)[3];  /* NULL, or a vector per entry */
} tsv_job;

static bool tsv_make(void *ctx, int64_t k, mdnl_pool_buf *b)
{
    const tsv_job *t = ctx;
    const mdnl_nlist *l = t->l;
    int64_t i0 = k * t->rows_per_block, i1 = i0 + t->rows_per_block;
    if (i1 > l->natoms)
        i1 = l->natoms;
    b->len = 0;
    for (int64_t i = i0; i < i1; ++i)
        for (int64_t n = l->offsets[i]; n < l->offsets[i + 1]; ++n) {
            if (!mdnl_pool_buf_reserve(b, b->len + TSV_LINE + TSV_EXTRA))
                return false;
            char *line = (char *)b->data + b->len, *p = put_int(line, t->frame);
            *p++ = '\t';
            p = put_int(p, i);
            *p++ = '\t';
            p = put_int(p, l->j[n]);
            *p++ = '\t';
            p = put_float9(p, l->d[n]);
            for (int a = 0; t->S && a < 3; ++a) {
                *p++ = '\t';
                p = put_int(p, t->S[n][a]);
            }
            for (int a = 0; t->D && a < 3; ++a)
                p += snprintf(p, 32, "\t%.17g", t->D[n][a]);
            *p++ = '\n';
            b->len += (size_t)(p - line);
        }
    return true;
}

static mdnl_status tsv_take(void *ctx, int64_t k, const mdnl_pool_buf *b)
{
    (void)k;
    const tsv_job *t = ctx;
    if (b->len && fwrite(b->data, 1, b->len, t->fp) != b->len)
        return mdnl_error(MDNL_ERR_RESOURCE, "write failed");
    return MDNL_OK;
}

const char *mdnl_neighbors_tsv_header(bool shifts, bool vectors)
{
    static const char *const h[4] = {"# frame\ti\tj\tdistance\n", "# frame\ti\tj\tdistance\tS0\tS1\tS2\n",
                                     "# frame\ti\tj\tdistance\tDx\tDy\tDz\n",
                                     "# frame\ti\tj\tdistance\tS0\tS1\tS2\tDx\tDy\tDz\n"};
    return h[(shifts ? 1 : 0) + (vectors ? 2 : 0)];
}

mdnl_status mdnl_neighbors_tsv_rows(FILE *fp, int64_t frame, const mdnl_nlist *l, int threads)
{
    return mdnl_neighbors_tsv_rows_with(fp, frame, l, NULL, NULL, threads);
}

mdnl_status mdnl_neighbors_tsv_rows_with(FILE *fp, int64_t frame, const mdnl_nlist *l, const int32_t (*S)[3],
                                         const double (*D)[3], int threads)
{
    if (l->natoms <= 0)
        return MDNL_OK;
    /* Rows per block: about TSV_BLOCK pairs at the list's mean row length. */
    int64_t per = l->npairs > 0 ? (int64_t)((double)TSV_BLOCK * (double)l->natoms / (double)l->npairs) : l->natoms;
    if (per < 1)
        per = 1;
    if (per > l->natoms)
        per = l->natoms;
    tsv_job t = {fp, frame, per, l, S, D};
    return mdnl_pool_map(threads, (l->natoms + per - 1) / per, &t, tsv_make, tsv_take, "neighbor rows");
}

mdnl_status mdnl_cmd_neighbors(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("neighbors", mdnl_command_options("neighbors"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 1)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl neighbors: expected one INPUT file, got %d", o.npositional);
    if (!o.has_cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl neighbors: the cutoff -c CUT is required");
    const char *input = o.positional[0];
    const int threads = mdnl_threads(&o);
    const char *outpath = o.output ? o.output : (o.json ? NULL : "-");
    const bool h5 = outpath && mdnl_is_hdf5_path(outpath);
    const mdnl_output_kind out_kind = h5 ? MDNL_OUTPUT_HDF5 : MDNL_OUTPUT_TEXT;
    if ((st = mdnl_output_check(input, 1, &outpath, &out_kind)) != MDNL_OK)
        return st;
    mdnl_h5md_results *res = NULL;

    mdnl_context *ctx = NULL;
    if ((st = mdnl_context_of(&o, &ctx)) != MDNL_OK)
        return st;
    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    const bool with_S = o.with_shift || o.with_vector;
    mdnl_ofile out = {0};
    int64_t nframes = 0, total_pairs = 0;
    mdnl_atoms_range atoms = {0};
    double t_read = 0, t_nl = 0, t_write = 0;
    mdnl_progress prog;
    bool progress_started = false;

    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    if (h5) {
        mdnl_list_kind k = o.has_list ? o.list : MDNL_LIST_HALF;
        if ((st = mdnl_h5md_results_create(outpath, &res)) != MDNL_OK)
            goto done;
        mdnl_h5md_results_set_threads(res, threads);
        if ((st = mdnl_h5md_results_set_neighbors_info(res, k == MDNL_LIST_FULL ? "full" : "half", o.cutoff)) !=
            MDNL_OK)
            goto done;
    } else if (outpath) {
        if ((st = mdnl_ofile_open(&out, outpath)) != MDNL_OK)
            goto done;
        if (fputs(mdnl_neighbors_tsv_header(o.with_shift, o.with_vector), out.fp) < 0) {
            st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", outpath);
            goto done;
        }
    }
    mdnl_progress_start(&prog, &o, fs);
    progress_started = true;
    for (;;) {
        double t0 = mdnl_now();
        st = mdnl_frames_next(fs, &f);
        if (st == MDNL_END) {
            st = MDNL_OK;
            break;
        }
        if (st != MDNL_OK)
            goto done;
        double t1 = mdnl_now();
        mdnl_list_kind kind = o.has_list ? o.list : MDNL_LIST_HALF;
        mdnl_system sys;
        mdnl_neighbor_list nl;
        if ((st = mdnl_frame_system(ctx, input, &f, &sys)) != MDNL_OK ||
            (st = mdnl_neighbors(ctx, &sys, o.cutoff,
                                 (kind == MDNL_LIST_FULL ? MDNL_NEIGHBORS_FULL : MDNL_NEIGHBORS_HALF) |
                                     (o.with_shift ? MDNL_NEIGHBORS_SHIFTS : 0) |
                                     (o.with_vector ? MDNL_NEIGHBORS_VECTORS : 0),
                                 &nl)) != MDNL_OK)
            goto done;
        /* borrowed from the context until its next call: no copy */
        const mdnl_nlist list = {nl.n, nl.npairs, (int64_t *)nl.offsets, (int32_t *)nl.indices, (float *)nl.distances,
                                 0, 0};
        const int32_t(*S)[3] = (const int32_t(*)[3])nl.shifts;
        const double(*D)[3] = (const double(*)[3])nl.vectors;
        double t2 = mdnl_now();
        if (h5) {
            if ((st = mdnl_h5md_results_write_neighbors(res, f.index, list.natoms, list.offsets, list.j, list.d,
                                                         list.npairs)) != MDNL_OK ||
                (with_S && (st = mdnl_h5md_results_write_neighbor_shifts(res, list.npairs, S ? &S[0][0] : NULL,
                                                                         D ? &D[0][0] : NULL)) != MDNL_OK))
                goto done;
        } else if (outpath && (st = mdnl_neighbors_tsv_rows_with(out.fp, f.index, &list, S, D, threads)) != MDNL_OK) {
            st = mdnl_error(st, "%s: write failed", outpath);
            goto done;
        }
        double t3 = mdnl_now();
        t_read += t1 - t0, t_nl += t2 - t1, t_write += t3 - t2;
        nframes++;
        mdnl_atoms_range_add(&atoms, f.natoms);
        total_pairs += list.npairs;
        mdnl_progress_step(&prog);
    }
    if (h5) {
        st = mdnl_h5md_results_commit(res); /* frees res */
        res = NULL;
        if (st != MDNL_OK)
            goto done;
    } else if (outpath && (st = mdnl_ofile_commit(&out)) != MDNL_OK) {
        goto done;
    }
    mdnl_progress_end(&prog);
    progress_started = false;
    {
        const char *used = mdnl_context_method(ctx);
        const char *kind = (o.has_list ? o.list : MDNL_LIST_HALF) == MDNL_LIST_FULL ? "full" : "half";
        if (o.json) {
            printf("{\"command\":\"neighbors\",\"input\":");
            mdnl_json_string(stdout, input);
            printf(",\"frames\":%lld", (long long)nframes);
            mdnl_atoms_range_json(stdout, &atoms);
            if (outpath) {
                printf(",\"output\":");
                mdnl_json_string(stdout, outpath);
            }
            printf(",\"pairs\":%lld,\"list\":\"%s\",\"cutoff\":%.15g,\"backend\":\"%s\",\"method\":\"%s\","
                   "\"seconds\":{\"read\":%.6f,\"neighbors\":%.6f,\"write\":%.6f}}\n",
                   (long long)total_pairs, kind, o.cutoff, mdnl_backend_name(mdnl_backend_of(ctx)), used,
                   t_read, t_nl, t_write);
        } else if (!o.quiet) {
            mdnl_frames_note(fs);
            char na[64];
            fprintf(stderr,
                    "mdnl neighbors: %lld frame(s) of %s, %lld pairs (%s list) below %g, %s/%s, "
                    "read %.3f s, neighbors %.3f s, write %.3f s",
                    (long long)nframes, mdnl_atoms_range_text(&atoms, na, sizeof na), (long long)total_pairs, kind,
                    o.cutoff, mdnl_backend_name(mdnl_backend_of(ctx)), used, t_read, t_nl, t_write);
            if (strcmp(outpath, "-") != 0)
                fprintf(stderr, "; written to %s", outpath);
            fputc('\n', stderr);
        }
    }
done:
    if (progress_started)
        mdnl_progress_end(&prog);
    if (st != MDNL_OK) {
        mdnl_ofile_abort(&out);
        mdnl_h5md_results_abort(res);
    }
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    mdnl_context_free(ctx);
    return st;
}
