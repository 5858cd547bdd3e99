/* mpi_none.c — mpi_split.h for builds without MPI: one process does every
 * frame. Launched as several ranks (mpirun, srun), each copy would compute
 * every frame and race for the output, so that is refused (exit 2), said
 * once, by rank 0. */
#include "mpi_split.h"

#include <stdlib.h>

static int env_rank = -1;

static int env_int(const char *name)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : -1;
}

mdnl_status mdnl_mpi_begin(void)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (int k = 0; k < 3; ++k) {
        int n = env_int(sizes[k]);
        if (n > 1) {
            env_rank = env_int(ranks[k]);
            return mdnl_error(MDNL_ERR_USAGE,
                              "this mdnl was built without MPI: %d ranks would each compute every frame; "
                              "rebuild with MPI (libopenmpi-dev) or run one process",
                              n);
        }
    }
    return MDNL_OK;
}

bool mdnl_mpi_split_active(void) { return false; }

bool mdnl_mpi_root(void) { return true; }

void mdnl_mpi_choose_device(mdnl_opts *o) { (void)o; }

mdnl_status mdnl_mpi_split(mdnl_status st, mdnl_frames *fs)
{
    (void)fs;
    return st;
}

mdnl_status mdnl_mpi_wrap(const mdnl_pipeline_config *c, mdnl_pipeline_sink *sink, void **user,
                          mdnl_rdf_accum **acc, mdnl_progress *prog)
{
    (void)c, (void)sink, (void)user, (void)acc, (void)prog;
    return MDNL_OK;
}

mdnl_status mdnl_mpi_gather(mdnl_status st, mdnl_pipeline_stats *stats)
{
    (void)stats;
    return st;
}

void mdnl_mpi_json(FILE *fp, int64_t nframes)
{
    fprintf(fp, ",\"ranks\":1,\"frames_per_rank\":[%lld]", (long long)nframes);
}

void mdnl_mpi_finish(void) {}

bool mdnl_mpi_end(mdnl_status *st)
{
    (void)st;
    return env_rank <= 0;
}
