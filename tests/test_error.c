/* test_error.c — core/error.c: the one escaping function (mdnl_escape_char)
 * that every error message, `info` and the JSON summaries go through, and the
 * hand-off of a message recorded on an OpenMP worker to the team's thread 0
 * (an allocation failing on a worker used to print a bare "mdnl: error: ").
 * Then the same through the built binary: `info` (text and JSON) on species
 * names holding escape sequences, BEL, C1 controls and bytes that are not
 * UTF-8, and an error message naming such a file. */
#define _POSIX_C_SOURCE 200809L
#include "mdnl.h"

#include <criterion/criterion.h>
#include <omp.h>
#include <stdbool.h>
#include <string.h>

#include "cli_test_util.h"

TestSuite(error, .init = make_tmpdir, .fini = remove_tmpdir);

/* `in` escaped whole with `flags`. */
static const char *escaped(const char *in, unsigned flags)
{
    static char out[512];
    size_t o = 0;
    while (*in) {
        char e[MDNL_ESCAPE_MAX + 1];
        size_t n = mdnl_escape_char(&in, e, flags);
        cr_assert(n > 0 && n <= MDNL_ESCAPE_MAX && strlen(e) == n);
        cr_assert(o + n < sizeof out);
        memcpy(out + o, e, n + 1);
        o += n;
    }
    out[o] = '\0';
    return out;
}

Test(error, text_escaping_keeps_utf8_and_escapes_controls_c1_and_bad_bytes)
{
    cr_expect_str_eq(escaped("C H2O \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 0), "C H2O \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    cr_expect_str_eq(escaped("a\nb\rc\td", 0), "a\\nb\\rc\td");
    cr_expect_str_eq(escaped("a\td", MDNL_ESCAPE_TAB), "a\\td");
    cr_expect_str_eq(escaped("\x1b[31m\x07\x7f", 0), "\\x1b[31m\\x07\\x7f");
    cr_expect_str_eq(escaped("\xc2\x85|\xc2\x9b|\xe2\x80\xa8", 0), "\\u0085|\\u009b|\\u2028");
    /* not UTF-8: a lone continuation byte, 0xff, an overlong '/', a surrogate, a truncated sequence */
    cr_expect_str_eq(escaped("\x80|\xff|\xc0\xaf|\xed\xa0\x80|\xe2\x82", 0),
                     "\\x80|\\xff|\\xc0\\xaf|\\xed\\xa0\\x80|\\xe2\\x82");
    /* escaping escaped text changes nothing: messages re-recorded with a prefix stay readable */
    const char *once = "\\x1b\\n\\u0085 \"q\" \\ x";
    cr_expect_str_eq(escaped(once, 0), once);
}

Test(error, json_escaping_gives_valid_json_strings)
{
    cr_expect_str_eq(escaped("\"a\\b\"\n\t\x01\x7f", MDNL_ESCAPE_JSON), "\\\"a\\\\b\\\"\\n\\t\\u0001\\u007f");
    cr_expect_str_eq(escaped("\xc2\x85\xff\xc3\xa9", MDNL_ESCAPE_JSON), "\\u0085\\ufffd\xc3\xa9");
}

Test(error, messages_are_one_line_of_escaped_text)
{
    mdnl_error(MDNL_ERR_INPUT, "%s: bad", "x\n\x1b]0;title\x07\xff.xyz");
    cr_expect_str_eq(mdnl_last_error(), "x\\n\\x1b]0;title\\x07\\xff.xyz: bad");
}

/* A message recorded on a worker of an OpenMP team reaches thread 0, which
 * returns the status; a message of thread 0's own, or a clear, comes after it. */
Test(error, worker_thread_message_reaches_the_team_thread_0)
{
    mdnl_clear_error();
    omp_set_dynamic(0);
    int team = 0;
#pragma omp parallel num_threads(4)
    {
#pragma omp single
        team = omp_get_num_threads();
        if (omp_get_thread_num() == 2)
            mdnl_error(MDNL_ERR_RESOURCE, "out of host memory allocating %d bytes for %s", 64, "neighbor row buffer");
    }
    cr_assert_eq(team, 4, "no OpenMP team of 4 threads");
    cr_expect_str_eq(mdnl_last_error(), "out of host memory allocating 64 bytes for neighbor row buffer");

    mdnl_error(MDNL_ERR_INPUT, "thread 0's own");
    cr_expect_str_eq(mdnl_last_error(), "thread 0's own");

#pragma omp parallel num_threads(4)
    {
        if (omp_get_thread_num() == 3)
            mdnl_error(MDNL_ERR_RESOURCE, "a worker's failure");
    }
    mdnl_clear_error();
    cr_expect_str_eq(mdnl_last_error(), "", "a cleared record shows an older worker message");
}

/* ---- through the binary ---- */

/* Whether s holds a byte a terminal would act on: C0 but the newline, DEL,
 * a C1 control in UTF-8, or a byte that is not UTF-8 (0xff here). */
static bool raw_controls(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f || *p == 0xff || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return true;
    return false;
}

Test(error, info_escapes_species_names_in_text_and_json)
{
    write_file("ctl.extxyz", "3\nLattice=\"10 0 0 0 10 0 0 0 10\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n"
                             "C\x1b[31m 0 0 0\nH\x07\xc2\x85 1 0 0\nO\xff 0 1 0\n");
    cr_assert_eq(mdnl("info ctl.extxyz"), 0, "%s", err_text);
    cr_expect(!raw_controls(out_text), "raw control bytes in: %s", out_text);
    cr_expect(strstr(out_text, "species  C\\x1b[31m 1 H\\x07\\u0085 1 O\\xff 1\n") != NULL, "%s", out_text);
    cr_assert_eq(mdnl("info ctl.extxyz --json"), 0, "%s", err_text);
    cr_expect(!raw_controls(out_text), "raw control bytes in: %s", out_text);
    cr_expect(strstr(out_text, "\"species\":{\"C\\u001b[31m\":1,\"H\\u0007\\u0085\":1,\"O\\ufffd\":1}") != NULL, "%s",
              out_text);
}

Test(error, error_message_escapes_c1_controls_and_bad_utf8)
{
    cr_assert_eq(mdnl("neighbors 'bad\xff\xc2\x85\x1b]0;x\x07.xyz' -c 2"), 3, "%s", err_text);
    expect_one_error_line();
    cr_expect(!raw_controls(err_text), "raw control bytes in: %s", err_text);
    cr_expect(strstr(err_text, "bad\\xff\\u0085\\x1b]0;x\\x07.xyz") != NULL, "%s", err_text);
}
