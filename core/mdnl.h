/* mdnl.h — the status codes and the error record shared by every layer.
 *
 * Every fallible function in io/, kernels/ and src/ returns an mdnl_status.
 * The numeric values equal the process exit codes of SPEC §7 and are never
 * renumbered. A function that fails records one line of context with
 * mdnl_error() (per thread) and returns the code; only src/main.c prints it
 * and exits. Library code never calls exit().
 */
#ifndef MDNL_H
#define MDNL_H

#include <stddef.h>
#include <stdint.h>

#define MDNL_VERSION "0.1.0"

/* Headers shared with CUDA translation units keep C linkage. */
#ifdef __cplusplus
#define MDNL_BEGIN_C extern "C" {
#define MDNL_END_C }
#else
#define MDNL_BEGIN_C
#define MDNL_END_C
#endif

MDNL_BEGIN_C

/* The public header (include/mdnl/mdnl.h) declares the same enum under the
 * same guard, so that the library's code can include both. */
#ifndef MDNL_STATUS_DEFINED
#define MDNL_STATUS_DEFINED
typedef enum mdnl_status {
    MDNL_END = -1,          /* end of a stream: not an error */
    MDNL_OK = 0,
    MDNL_ERR_INTERNAL = 1,  /* a bug or an impossible state */
    MDNL_ERR_USAGE = 2,     /* unknown option, missing or out-of-range value */
    MDNL_ERR_INPUT = 3,     /* unreadable, malformed or inconsistent input data */
    MDNL_ERR_RESOURCE = 4,  /* out of host or device memory, device failure */
} mdnl_status;
#endif

/* Records a printf-style message for the calling thread and returns `code`,
 * so that failures read `return mdnl_error(MDNL_ERR_INPUT, "%s:%lld: ...")`.
 * Input errors follow SPEC §7: "FILE:LINE: what was expected, what was found". */
mdnl_status mdnl_error(mdnl_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The last message recorded on this thread ("" when none), or a message
 * recorded after it by a worker of an OpenMP team (a thread other than the
 * team's thread 0, whose failures only its team's thread 0 can report: the
 * message of an allocation that failed on a worker reaches the thread that
 * returns the status). Valid until the next mdnl_error(), mdnl_last_error()
 * or mdnl_clear_error() on the same thread. */
const char *mdnl_last_error(void);
/* Forgets this thread's message and every worker's message recorded so far. */
void mdnl_clear_error(void);

/* Escaping for display: one character of the text at *s (one byte, or one
 * UTF-8 sequence) written to out as it should appear on one line of a
 * terminal, a TSV cell or a JSON string; *s moves past it; returns the
 * length written (out is NUL-terminated). Valid UTF-8 stays as it is, except
 * C0 and C1 control characters, DEL and U+2028/U+2029, which become \n, \r,
 * \xHH (text; JSON: \u00HH) or \u0080-\u009f, \u2028, \u2029; a byte that is
 * not valid UTF-8 becomes \xHH (JSON: \ufffd). A tab stays unless
 * MDNL_ESCAPE_TAB; MDNL_ESCAPE_JSON also escapes " and \ (text leaves the
 * backslash alone, so escaping an escaped text changes nothing). Used by
 * mdnl_error (every error message), `info` and the JSON summaries. */
#define MDNL_ESCAPE_MAX 8
enum { MDNL_ESCAPE_TEXT = 0, MDNL_ESCAPE_TAB = 1, MDNL_ESCAPE_JSON = 2 };
size_t mdnl_escape_char(const char **s, char out[MDNL_ESCAPE_MAX + 1], unsigned flags);

/* malloc/calloc/realloc that record MDNL_ERR_RESOURCE with `what` and the
 * size on failure and return NULL. A size of 0 returns a valid pointer.
 * The caller frees with free(). */
void *mdnl_malloc(size_t bytes, const char *what);
void *mdnl_calloc(size_t count, size_t size, const char *what);
void *mdnl_realloc(void *ptr, size_t bytes, const char *what);

MDNL_END_C

#endif
