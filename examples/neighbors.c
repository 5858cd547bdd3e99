/* examples/neighbors.c — the neighbor list of a small periodic frame through
 * libmdnl. Build against an installed mdnl (cmake --install build --prefix P):
 *   cmake -S examples -B ex -DCMAKE_PREFIX_PATH=P && cmake --build ex && ex/neighbors
 * or with pkg-config:
 *   cc neighbors.c $(PKG_CONFIG_PATH=P/lib/pkgconfig pkg-config --cflags --libs mdnl) -Wl,-rpath,P/lib */
#include <mdnl/mdnl.h>

#include <stdio.h>

int main(void)
{
    const double positions[4][3] = {{0, 0, 0}, {1.0, 0, 0}, {0, 1.5, 0}, {2.6, 2.6, 2.6}};
    const double cell[9] = {3, 0, 0, 0, 3, 0, 0, 0, 3};
    mdnl_system sys = {4, positions, MDNL_FLOAT64, cell, {1, 1, 1}};
    mdnl_context *ctx = NULL;
    mdnl_neighbor_list nl;
    if (mdnl_context_create(NULL, &ctx) != MDNL_OK ||
        mdnl_neighbors(ctx, &sys, 1.2, MDNL_NEIGHBORS_FULL | MDNL_NEIGHBORS_SHIFTS, &nl) != MDNL_OK) {
        fprintf(stderr, "neighbors: %s\n", mdnl_last_error());
        mdnl_context_free(ctx);
        return 1;
    }
    printf("mdnl %s on %s: %lld pairs\n", mdnl_version(),
           mdnl_context_backend(ctx) == MDNL_COMPUTE_CUDA ? "cuda" : "cpu", (long long)nl.npairs);
    for (int64_t i = 0; i < nl.n; ++i)
        for (int64_t k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k)
            printf("%lld %d %.4f S=(%d %d %d)\n", (long long)i, nl.indices[k], nl.distances[k], nl.shifts[3 * k],
                   nl.shifts[3 * k + 1], nl.shifts[3 * k + 2]);
    mdnl_context_free(ctx); /* the list was borrowed from the context */
    return 0;
}
