/* The plan API compiles and works as plain C. Called from
 * plan_file_test.cpp with a valid plan; returns its world size, or -1. */

#include "m2n/plan.h"

#include <string.h>

int m2n_plan_c_world_size(const void *data, size_t size) {
  m2n_plan_t plan = NULL;
  m2n_status_t status = m2n_plan_load_memory(data, size, &plan);
  if (status) {
    m2n_status_free(status);
    return -1;
  }
  m2n_plan_info_t info;
  char *text = NULL;
  int result = -1;
  if (!m2n_plan_get_info(plan, &info) &&
      !m2n_plan_disassemble(plan, -1, &text) &&
      strncmp(text, "plan v2.0", 9) == 0)
    result = (int)info.world_size;
  m2n_free(text);
  m2n_plan_destroy(plan);
  return result;
}
