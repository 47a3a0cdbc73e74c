/* The transport and executor APIs compile and work as plain C. Called from
 * executor_test.cpp with a one-rank plan that copies "t", F32 [2, 3], from
 * its source to its destination whole; returns 0, or the line that failed. */

#include "m2n/executor.h"
#include "m2n/transport.h"

#include <string.h>

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      result = __LINE__;                                                       \
      goto done;                                                               \
    }                                                                          \
  } while (0)

int m2n_executor_c_copy(const void *plan_bytes, size_t size) {
  int result = 0;
  m2n_plan_t plan = NULL;
  m2n_sim_world_t world = NULL;
  m2n_transport_t transport = NULL;
  m2n_executor_t executor = NULL;
  float source[6] = {1, 2, 3, 4, 5, 6};
  float destination[6] = {0};
  int64_t shape[2] = {2, 3};
  m2n_executor_stats_t stats;

  CHECK(!m2n_plan_load_memory(plan_bytes, size, &plan));
  CHECK(!m2n_sim_world_create(1, &world));
  CHECK(!m2n_sim_world_transport(world, 0, &transport));
  CHECK(!m2n_executor_create(plan, transport, NULL, &executor));
  CHECK(!m2n_executor_bind(executor, "t", M2N_ROLE_SOURCE, source,
                           M2N_DTYPE_F32, 2, shape));
  CHECK(!m2n_executor_bind(executor, "t", M2N_ROLE_DESTINATION, destination,
                           M2N_DTYPE_F32, 2, shape));
  CHECK(!m2n_executor_run(executor));
  CHECK(memcmp(source, destination, sizeof(source)) == 0);
  CHECK(!m2n_executor_get_stats(executor, &stats));
  CHECK(stats.bytes_copied == sizeof(source) && stats.runs == 1);

done:
  m2n_executor_destroy(executor);
  m2n_transport_destroy(transport);
  m2n_sim_world_destroy(world);
  m2n_plan_destroy(plan);
  return result;
}
